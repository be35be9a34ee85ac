"""The OpenAPI paths of ``/api/v1/discover`` (``web/handlers/discover.py``), merged into
``web.openapi.openapi_document``."""

from __future__ import annotations

from typing import Any

from web.openapi_common import TIME


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERROR = {"$ref": "#/components/schemas/Error"}
ERRORS = {
    "401": _json(_ERROR, "Missing or invalid token"),
    "403": _json(_ERROR, "Your role does not allow this"),
}
SOURCE_STATS = {
    "type": "object",
    "properties": {
        k: {"type": "integer"}
        for k in ("found", "fetched", "checked", "matched", "duplicates", "errors")
    },
}
RUN = {
    "type": "object",
    "description": "One discovery run: what it asked, fetched, checked and found, per source",
    "properties": {
        "id": {"type": "string"},
        "started_at": TIME,
        "finished_at": {**TIME, "description": TIME["description"] + "; empty while running"},
        "works": {"type": "integer"},
        "books": {"type": "integer", "description": "Distinct books: what sites are searched for"},
        "queries": {"type": "integer"},
        "cached": {"type": "integer"},
        "fetched": {"type": "integer"},
        "checked": {"type": "integer"},
        "duplicates": {"type": "integer"},
        "matched": {"type": "integer"},
        "traps": {"type": "integer"},
        "skipped": {"type": "integer", "description": "Pages too short to check"},
        "refused": {
            "type": "integer",
            "description": "URLs the SSRF guard or robots.txt refused, or that did not "
            "resolve: no page of the budget spent",
        },
        "sources": {"type": "object", "additionalProperties": SOURCE_STATS},
        "errors": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The first 200 failures, each naming its source",
        },
        "error_kinds": {
            "type": "object",
            "additionalProperties": {"type": "integer"},
            "description": "Every failure counted by kind (its message without URLs, "
            "quoted values and numbers)",
        },
        "not_found": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Site searches that found no book",
        },
        "idle": {"type": "string", "description": "Why a run that fetched nothing did nothing"},
        "matches": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "url": {"type": "string"},
                    "suspect_id": {"type": "string"},
                    "mother_id": {"type": "string"},
                    "title": {"type": "string"},
                    "score": {"type": "number"},
                    "source": {"type": "string"},
                    "pages": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "A chapter read over several pages: each page's URL",
                    },
                    "evidence_url": {"type": "string", "description": "The evidence view"},
                },
            },
        },
    },
}
SITE = {
    "type": "object",
    "properties": {
        "url": {"type": "string"},
        "search_url": {"type": "string", "description": "{q} stands for the query"},
        "encoding": {"type": "string"},
        "profile": {
            "type": "string",
            "description": "jieqi, ptcms, biquge, form, given, or legado (an imported source)",
        },
        "added_at": TIME,
        "note": {"type": "string", "description": "A Legado source's name"},
        "origin": {"type": "string", "description": "site add, or the file/URL imported"},
        "status": {"type": "string", "description": "A Legado source: imported or partial"},
        "reasons": {"type": "array", "items": {"type": "string"}},
        "meta": {
            "type": "object",
            "description": "legado: the source as imported; health: the last search (at, ok, "
            "results, error), failures in a row, disabled",
        },
    },
}
VERDICT = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "url": {"type": "string"},
        "status": {"type": "string", "enum": ["imported", "partial", "refused"]},
        "reasons": {"type": "array", "items": {"type": "string"}},
    },
}


def discover_paths() -> dict[str, Any]:
    run_options = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "works": {"type": "array", "items": {"type": "string"}},
            "max_queries": {"type": "integer", "minimum": 0, "maximum": 1000},
            "max_pages": {"type": "integer", "minimum": 1, "maximum": 100000},
            "max_works": {"type": "integer", "minimum": 1},
        },
    }
    return {
        "/api/v1/discover": {
            "get": {
                "summary": "Discovery: providers with today's use and quota, sites, budgets, "
                "last runs",
                "responses": {"200": _json({"type": "object"}, "The overview"), **ERRORS},
            }
        },
        "/api/v1/discover/runs": {
            "get": {
                "summary": "The last discovery runs, newest first",
                "responses": {
                    "200": _json(
                        {"type": "object", "properties": {"runs": {"type": "array", "items": RUN}}},
                        "Runs",
                    ),
                    **ERRORS,
                },
            },
            "post": {
                "summary": "Start a discovery run on the workers (analyst)",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": run_options}},
                },
                "responses": {
                    "202": _json(
                        {
                            "type": "object",
                            "properties": {
                                "task_id": {"type": "string"},
                                "run_id": {"type": "string"},
                                "run": {
                                    "type": "string",
                                    "description": "GET it: the run's counts so far "
                                    "(/api/v1/discover/runs/{run_id})",
                                },
                                "progress": {
                                    "type": "string",
                                    "description": "GET it: the run's progress, its crawl "
                                    "chunks added up (/api/v1/jobs/{task_id})",
                                },
                            },
                        },
                        "Queued",
                    ),
                    "400": _json(_ERROR, "Bad option"),
                    **ERRORS,
                },
            },
        },
        "/api/v1/discover/runs/{id}": {
            "get": {
                "summary": "One run (its parts on several workers added up)",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": _json(RUN, "The run"),
                    "404": _json(_ERROR, "No such run"),
                    **ERRORS,
                },
            }
        },
        "/api/v1/discover/sites": {
            "get": {
                "summary": "Registered pirate sites",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {"sites": {"type": "array", "items": SITE}},
                        },
                        "Sites",
                    ),
                    **ERRORS,
                },
            },
            "post": {
                "summary": "Register a site; without search_url its search form is found (analyst)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["url"],
                                "properties": {
                                    "url": {"type": "string"},
                                    "search_url": {"type": "string"},
                                    "encoding": {"type": "string"},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "201": _json(SITE, "Registered"),
                    "400": _json(_ERROR, "Bad URL, or no search form found"),
                    **ERRORS,
                },
            },
        },
        "/api/v1/discover/sites/import": {
            "post": {
                "summary": "Import Legado (阅读) book sources: a file, a URL, or the sources "
                "themselves (analyst)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "oneOf": [
                                    {
                                        "type": "object",
                                        "required": ["url"],
                                        "properties": {"url": {"type": "string"}},
                                    },
                                    {"type": "array", "items": {"type": "object"}},
                                    {"type": "object"},
                                ]
                            }
                        },
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "properties": {"file": {"type": "string", "format": "binary"}},
                            }
                        },
                    },
                },
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "counts": {
                                    "type": "object",
                                    "additionalProperties": {"type": "integer"},
                                },
                                "sources": {"type": "array", "items": VERDICT},
                            },
                        },
                        "One verdict per source",
                    ),
                    "400": _json(_ERROR, "Not Legado sources, or the URL cannot be read"),
                    **ERRORS,
                },
            }
        },
        "/api/v1/discover/sites/{id}/enable": {
            "post": {
                "summary": 'Enable a site again (or disable it with {"enabled": false}) (analyst)',
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "requestBody": {
                    "required": False,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"enabled": {"type": "boolean"}},
                            }
                        }
                    },
                },
                "responses": {
                    "200": _json(SITE, "The site"),
                    "404": _json(_ERROR, "No such site"),
                    **ERRORS,
                },
            }
        },
        "/api/v1/discover/sites/{id}": {
            "delete": {
                "summary": "Forget a site (analyst)",
                "parameters": [
                    {
                        "name": "id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                        "description": "The site's host name (with :port when it has one)",
                    }
                ],
                "responses": {
                    "204": {"description": "Removed"},
                    "404": _json(_ERROR, "No such site"),
                    **ERRORS,
                },
            }
        },
    }
