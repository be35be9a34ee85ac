"""The OpenAPI 3.1 description of ``/api/v1`` (served at ``/api/v1/openapi.json``)."""

from __future__ import annotations

from typing import Any

API_VERSION = "1"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _error(description: str) -> dict[str, Any]:
    return _json(_ref("Error"), description)


ERRORS = {
    "401": _error("Missing or invalid token"),
    "403": _error("Your role does not allow this"),
}

MATCH_FILTERS: list[dict[str, Any]] = [
    {"name": "verdict", "in": "query", "schema": {"enum": ["pending", "confirmed", "dismissed"]}},
    {"name": "min_score", "in": "query", "schema": {"type": "number", "minimum": 0, "maximum": 1}},
    {"name": "max_score", "in": "query", "schema": {"type": "number", "minimum": 0, "maximum": 1}},
    {
        "name": "work",
        "in": "query",
        "description": "Mother (work) id; alias mother_id",
        "schema": {"type": "string"},
    },
    {
        "name": "suspect",
        "in": "query",
        "description": "Suspect id; alias suspect_id",
        "schema": {"type": "string"},
    },
    {
        "name": "domain",
        "in": "query",
        "description": "Site: exact host or a parent domain (example.com matches www.example.com)",
        "schema": {"type": "string"},
    },
    {
        "name": "since",
        "in": "query",
        "description": "Created at or after (date or ISO time)",
        "schema": {"type": "string"},
    },
    {
        "name": "until",
        "in": "query",
        "description": "Created before; a date includes that whole day",
        "schema": {"type": "string"},
    },
    {
        "name": "q",
        "in": "query",
        "description": "Text in the work title, suspect title or URL (case-insensitive)",
        "schema": {"type": "string"},
    },
    {
        "name": "sort",
        "in": "query",
        "schema": {
            "enum": ["-score", "score", "-created_at", "created_at", "-coverage", "coverage"],
            "default": "-score",
        },
    },
    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 0}},
    {
        "name": "limit",
        "in": "query",
        "schema": {"type": "integer", "minimum": 0, "maximum": 200, "default": 50},
    },
    {
        "name": "passages",
        "in": "query",
        "description": "0 leaves the passages out",
        "schema": {"type": "integer", "enum": [0, 1], "default": 1},
    },
]

ID_PARAM = {
    "in": "path",
    "required": True,
    "description": "URL-safe base64 (no padding) of the UTF-8 id; for a match, of "
    "suspect_id + U+001F + mother_id (the match's `ref` field)",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
}


def openapi_document(server: str = "") -> dict[str, Any]:
    job_accepted = _json(_ref("JobAccepted"), "Job queued; poll status_url")
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "音迹 Yinji API",
            # The API's version, not the software's: this document is public, and like
            # the Server header it names no version an attacker could look up.
            "version": API_VERSION,
            "description": "Content-copyright fingerprint tracking for Chinese text: upload "
            "works, check suspect pages, review matches, download evidence reports.",
        },
        "servers": [{"url": server or "/"}],
        "security": [{"bearerAuth": []}],
        "paths": {
            "/api/v1/mothers": {
                "get": {
                    "summary": "List works of the library (newest first)",
                    "parameters": [
                        {
                            "name": "q",
                            "in": "query",
                            "schema": {"type": "string"},
                            "description": "Text in id or title",
                        },
                        {"name": "offset", "in": "query", "schema": {"type": "integer"}},
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {"type": "integer", "maximum": 200},
                        },
                    ],
                    "responses": {
                        "200": _json(_ref("MotherList"), "Works"),
                        "400": _error("Bad parameter"),
                        **ERRORS,
                    },
                },
                "post": {
                    "summary": "Import works (analyst); runs as a job",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["documents"],
                                    "properties": {
                                        "documents": {"type": "array", "items": _ref("DocumentIn")}
                                    },
                                }
                            },
                            "multipart/form-data": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "files": {
                                            "type": "array",
                                            "items": {"type": "string", "format": "binary"},
                                            "description": ".txt .html .htm .docx .jsonl .zip",
                                        }
                                    },
                                }
                            },
                        },
                    },
                    "responses": {
                        "202": job_accepted,
                        "400": _error("No valid document (see errors)"),
                        "413": _error("Upload too large"),
                        "415": _error("Not JSON or multipart"),
                        **ERRORS,
                    },
                },
            },
            "/api/v1/mothers/{id}": {
                "parameters": [{"name": "id", **ID_PARAM}],
                "get": {
                    "summary": "One work, with its text",
                    "responses": {
                        "200": _json(_ref("Mother"), "The work"),
                        "404": _error("No such work"),
                        **ERRORS,
                    },
                },
                "delete": {
                    "summary": "Delete a work and its matches (admin)",
                    "responses": {
                        "200": _json({"type": "object"}, "Deleted"),
                        "404": _error("No such work"),
                        **ERRORS,
                    },
                },
            },
            "/api/v1/checks": {
                "post": {
                    "summary": "Check suspect texts and/or URLs (analyst); runs as a job",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "texts": {"type": "array", "items": _ref("TextIn")},
                                        "urls": {
                                            "type": "array",
                                            "items": {"type": "string", "format": "uri"},
                                        },
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": job_accepted,
                        "400": _error("Bad input"),
                        "413": _error("Too many items"),
                        **ERRORS,
                    },
                },
            },
            "/api/v1/jobs/{job_id}": {
                "get": {
                    "summary": "Progress and result of a job",
                    "parameters": [
                        {
                            "name": "job_id",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {
                        "200": _json(_ref("Job"), "Job status"),
                        "404": _error("Bad job id"),
                        **ERRORS,
                    },
                },
            },
            "/api/v1/matches": {
                "get": {
                    "summary": "Matches, filtered like the dashboard",
                    "parameters": MATCH_FILTERS,
                    "responses": {
                        "200": _json(_ref("MatchList"), "Matches"),
                        "400": _error("Bad filter"),
                        **ERRORS,
                    },
                },
            },
            "/api/v1/matches/{id}": {
                "parameters": [{"name": "id", **ID_PARAM}],
                "get": {
                    "summary": "One match",
                    "responses": {
                        "200": _json(_ref("Match"), "The match"),
                        "404": _error("No such match"),
                        **ERRORS,
                    },
                },
                "patch": {
                    "summary": "Set the verdict and/or note (analyst)",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "verdict": {"enum": ["pending", "confirmed", "dismissed"]},
                                        "note": {"type": "string", "maxLength": 10000},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(_ref("Match"), "Updated match"),
                        "400": _error("Bad verdict or note"),
                        "404": _error("No such match"),
                        **ERRORS,
                    },
                },
            },
            "/api/v1/reports/{id}.{format}": {
                "get": {
                    "summary": "Evidence report of one match",
                    "parameters": [
                        {"name": "id", **ID_PARAM},
                        {
                            "name": "format",
                            "in": "path",
                            "required": True,
                            "schema": {"enum": ["json", "html", "pdf"]},
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "The report",
                            "content": {
                                "application/json": {"schema": {"type": "object"}},
                                "text/html": {"schema": {"type": "string"}},
                                "application/pdf": {
                                    "schema": {"type": "string", "format": "binary"}
                                },
                            },
                        },
                        "404": _error("No such match or format"),
                        **ERRORS,
                    },
                },
            },
            "/api/v1/openapi.json": {
                "get": {
                    "summary": "This document (no authentication: it holds no data)",
                    "security": [],
                    "responses": {"200": _json({"type": "object"}, "OpenAPI 3.1")},
                },
            },
            "/healthz": {
                "get": {
                    "summary": "Health check (no authentication)",
                    "security": [],
                    "responses": {
                        "200": _json({"type": "object"}, "Healthy"),
                        "503": _json({"type": "object"}, "Unhealthy"),
                    },
                },
            },
        },
        "components": {
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Token from `yinji user token NAME` or the account page",
                },
            },
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {
                        "error": {"type": "string"},
                        "errors": {"type": "array", "items": {"type": "object"}},
                    },
                },
                "DocumentIn": {
                    "type": "object",
                    "required": ["id", "text"],
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "text": {"type": "string"},
                    },
                    "additionalProperties": True,
                    "description": "Other fields are kept as metadata",
                },
                "TextIn": {
                    "type": "object",
                    "required": ["text"],
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "text": {"type": "string"},
                        "url": {"type": "string", "format": "uri"},
                    },
                },
                "JobAccepted": {
                    "type": "object",
                    "required": ["job_id", "status_url"],
                    "properties": {
                        "job_id": {"type": "string"},
                        "status_url": {"type": "string"},
                        "documents": {"type": "integer", "description": "JSON items queued"},
                        "files": {"type": "integer", "description": "Files queued"},
                        "texts": {"type": "integer"},
                        "urls": {"type": "integer"},
                        "errors": {
                            "type": "array",
                            "description": "Items passed over (also the job's 'skipped')",
                            "items": _ref("Problem"),
                        },
                    },
                    "additionalProperties": True,
                },
                "Problem": {
                    "type": "object",
                    "required": ["source", "message"],
                    "properties": {"source": {"type": "string"}, "message": {"type": "string"}},
                },
                "Job": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "state": {"type": "string"},
                        "progress": {"type": ["number", "null"]},
                        "done": {"type": ["integer", "null"]},
                        "total": {"type": ["integer", "null"]},
                        "result": {},
                        "error": {"type": ["string", "null"]},
                    },
                },
                "Mother": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "source": {"type": "string"},
                        "characters": {"type": "integer"},
                        "ingested_at": {"type": "string", "format": "date-time"},
                        "metadata": {"type": "object"},
                        "text": {"type": "string"},
                    },
                },
                "MotherList": {
                    "type": "object",
                    "properties": {
                        "total": {"type": "integer"},
                        "offset": {"type": "integer"},
                        "limit": {"type": "integer"},
                        "mothers": {"type": "array", "items": _ref("Mother")},
                    },
                },
                "Passage": {
                    "type": "object",
                    "properties": {
                        k: {"type": "integer"}
                        for k in ("suspect_start", "suspect_end", "mother_start", "mother_end")
                    }
                    | {"similarity": {"type": "number"}},
                },
                "Match": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "suspect_id + U+001F + mother_id"},
                        "ref": {"type": "string", "description": "id for URLs"},
                        "suspect_id": {"type": "string"},
                        "mother_id": {"type": "string"},
                        "mother_title": {"type": "string"},
                        "suspect_title": {"type": "string"},
                        "suspect_url": {"type": "string"},
                        "domain": {"type": "string"},
                        "score": {"type": "number"},
                        "coverage": {"type": "number"},
                        "mother_coverage": {"type": "number"},
                        "engine": {"type": "string"},
                        "verdict": {"enum": ["pending", "confirmed", "dismissed"]},
                        "note": {"type": "string"},
                        "created_at": {"type": "string", "format": "date-time"},
                        "updated_at": {"type": "string", "format": "date-time"},
                        "passages": {"type": "array", "items": _ref("Passage")},
                    },
                },
                "MatchList": {
                    "type": "object",
                    "properties": {
                        "total": {"type": "integer"},
                        "offset": {"type": "integer"},
                        "limit": {"type": "integer"},
                        "matches": {"type": "array", "items": _ref("Match")},
                    },
                },
            },
        },
    }
