"""The OpenAPI 3.1 description of ``/api/v1`` (served at ``/api/v1/openapi.json``)."""

from __future__ import annotations

from typing import Any

from tracker.cases.model import STATES
from tracker.records import VERDICTS
from web.openapi_books import BOOK_SCHEMAS, book_paths
from web.openapi_common import TIME, TIME_OR_NULL
from web.openapi_discover import discover_paths

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
    {"name": "verdict", "in": "query", "schema": {"enum": list(VERDICTS)}},
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

CASE_STATES = list(STATES)
CASE_ID_PARAM = {
    "name": "case_id",
    "in": "path",
    "required": True,
    "description": "A case id as Yinji gives it (`c` + 10 hex digits, `-2`… for a later "
    "case of the same work and site), as it is",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
}
CASE_FILTERS: list[dict[str, Any]] = [
    {"name": "state", "in": "query", "schema": {"enum": CASE_STATES}},
    {
        "name": "domain",
        "in": "query",
        "description": "The site (exact host) of the cases",
        "schema": {"type": "string"},
    },
    {
        "name": "work",
        "in": "query",
        "description": "The work of the cases (a mother id, or a book's work key)",
        "schema": {"type": "string"},
    },
    {"name": "offset", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 0}},
    {
        "name": "limit",
        "in": "query",
        "schema": {"type": "integer", "minimum": 0, "maximum": 200, "default": 50},
    },
]


def _watch_paths() -> dict[str, Any]:
    """The paths of ``/api/v1/watch`` and ``/api/v1/watch/books``
    (``web/handlers/watch.py``)."""
    item = {
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "kind": {"enum": ["url", "site", "book"]},
            "active": {"type": "boolean"},
            "added_at": TIME,
            "last_crawled_at": TIME_OR_NULL,
            "case_id": {"type": ["string", "null"], "description": "A book's case"},
        },
    }
    book = {
        "type": "object",
        "properties": {
            "index_url": {"type": "string"},
            "title": {"type": "string"},
            "case_id": {"type": "string"},
            "case_state": {"enum": CASE_STATES},
            "domain": {"type": "string"},
            "watched": {"type": "boolean"},
            "checked_at": TIME_OR_NULL,
            "pages_fetched": {"type": ["integer", "null"]},
            "truncated": {"type": "boolean"},
            "chapters": {
                "type": "array",
                "description": "In chapter order (第N章 in the link text)",
                "items": {
                    "type": "object",
                    "properties": {
                        "n": {"type": "integer"},
                        "url": {"type": "string"},
                        "title": {"type": "string"},
                        "matches": {"type": "integer"},
                        "error": {"type": "string"},
                    },
                },
            },
        },
    }
    return {
        "/api/v1/watch": {
            "get": {
                "summary": "The watch list (re-crawled daily by `yinji beat` at "
                "YINJI_RECRAWL_AT) and the time of the next crawl",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "items": {"type": "array", "items": item},
                                "next_crawl_at": TIME,
                            },
                        },
                        "The watch list",
                    ),
                    **ERRORS,
                },
            },
            "post": {
                "summary": "Watch a URL, a site or a pirate book (analyst); its first crawl "
                "runs at once as a job",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["url"],
                                "additionalProperties": False,
                                "properties": {
                                    "url": {"type": "string"},
                                    "kind": {"enum": ["url", "site", "book"], "default": "url"},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "202": _json(
                        {
                            "allOf": [
                                item,
                                {
                                    "type": "object",
                                    "properties": {
                                        "job_id": {"type": "string"},
                                        "status_url": {"type": "string"},
                                        "next_crawl_at": TIME,
                                    },
                                },
                            ]
                        },
                        "Watched; the first crawl is queued (poll status_url)",
                    ),
                    "400": _error(
                        "Bad URL or kind (a private address is refused unless "
                        "YINJI_ALLOW_PRIVATE_URLS=1)"
                    ),
                    **ERRORS,
                },
            },
            "delete": {
                "summary": "Stop watching a URL (analyst)",
                "parameters": [
                    {"name": "url", "in": "query", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "204": {"description": "Removed"},
                    "404": _error("Not on the watch list"),
                    **ERRORS,
                },
            },
        },
        "/api/v1/watch/books": {
            "get": {
                "summary": "Monitored pirate books: each book case with its chapters",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {"books": {"type": "array", "items": book}},
                        },
                        "Books",
                    ),
                    **ERRORS,
                },
            },
        },
    }


def _case_paths(job_accepted: dict[str, Any]) -> dict[str, Any]:
    """The paths of ``/api/v1/cases`` (``web/handlers/cases_api.py``)."""
    detail = _json(_ref("CaseDetail"), "The case with its history")
    not_found = _error("No such case")
    refused = _error("The state machine refuses this move (the message lists the allowed ones)")
    return {
        "/api/v1/cases": {
            "get": {
                "summary": "Takedown cases, newest first (items as `yinji case list --json`)",
                "parameters": CASE_FILTERS,
                "responses": {
                    "200": _json(_ref("CaseList"), "Cases"),
                    "400": _error("Bad filter"),
                    **ERRORS,
                },
            },
        },
        "/api/v1/cases/sites": {
            "get": {
                "summary": "Removal figures per site: removals, removal rate, median days "
                "from the first notice to the removal",
                "parameters": [
                    {
                        "name": "work",
                        "in": "query",
                        "description": "Only the cases of this work",
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {"200": _json(_ref("SiteStatsList"), "Figures"), **ERRORS},
            },
        },
        "/api/v1/cases/{case_id}": {
            "parameters": [CASE_ID_PARAM],
            "get": {
                "summary": "One case with its history (as `yinji case show --json`)",
                "responses": {"200": detail, "404": not_found, **ERRORS},
            },
        },
        "/api/v1/cases/{case_id}/transitions": {
            "parameters": [CASE_ID_PARAM],
            "post": {
                "summary": "Move a case (analyst); `notice_sent` records a notice sent "
                "outside Yinji (again from notice_sent: a reminder)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["to"],
                                "additionalProperties": False,
                                "properties": {
                                    "to": {"enum": CASE_STATES},
                                    "note": {"type": "string", "maxLength": 10000},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": detail,
                    "400": _error("Bad state or note"),
                    "404": not_found,
                    "409": refused,
                    **ERRORS,
                },
            },
        },
        "/api/v1/cases/{case_id}/notes": {
            "parameters": [CASE_ID_PARAM],
            "post": {
                "summary": "Add a note to the case's history (analyst)",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["note"],
                                "additionalProperties": False,
                                "properties": {"note": {"type": "string", "maxLength": 10000}},
                            }
                        }
                    },
                },
                "responses": {
                    "200": detail,
                    "400": _error("Empty or bad note"),
                    "404": not_found,
                    **ERRORS,
                },
            },
        },
        "/api/v1/cases/{case_id}/recheck": {
            "parameters": [CASE_ID_PARAM],
            "post": {
                "summary": "Re-crawl the case's URLs now (analyst); runs as a job",
                "responses": {
                    "202": job_accepted,
                    "400": _error("The case has no URL"),
                    "404": not_found,
                    **ERRORS,
                },
            },
        },
        "/api/v1/cases/{case_id}/notice": {
            "parameters": [CASE_ID_PARAM],
            "get": {
                "summary": "The takedown notice's text (preview; nothing is recorded)",
                "parameters": [
                    {
                        "name": "lang",
                        "in": "query",
                        "schema": {"enum": ["zh", "en"], "default": "zh"},
                    }
                ],
                "responses": {
                    "200": _json(_ref("NoticePreview"), "The notice"),
                    "400": _error(
                        "Bad language, no profile yet, or a template left out a required element"
                    ),
                    "404": not_found,
                    **ERRORS,
                },
            },
            "post": {
                "summary": "The notice as a file (analyst): PDF, DOCX or e-mail (EML, with "
                "the evidence reports and proofs of ownership attached); recorded in the "
                "case's history with its SHA-256",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["format", "lang"],
                                "additionalProperties": False,
                                "properties": {
                                    "format": {"enum": ["pdf", "docx", "eml"]},
                                    "lang": {"enum": ["zh", "en"]},
                                    "to": {
                                        "type": "array",
                                        "items": {"type": "string", "format": "email"},
                                    },
                                    "evidence": {"type": "boolean", "default": True},
                                    "cases": {
                                        "type": "array",
                                        "description": "More cases on the same site: one "
                                        "notice for all",
                                        "items": {"type": "string"},
                                    },
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "The notice file",
                        "content": {
                            "application/pdf": {"schema": {"type": "string", "format": "binary"}},
                            "application/vnd.openxmlformats-officedocument."
                            "wordprocessingml.document": {
                                "schema": {"type": "string", "format": "binary"}
                            },
                            "message/rfc822": {"schema": {"type": "string", "format": "binary"}},
                        },
                    },
                    "400": _error(
                        "Bad input, no profile yet, a closed case, cases on several sites"
                    ),
                    "404": not_found,
                    **ERRORS,
                },
            },
        },
    }


ID_PARAM = {
    "in": "path",
    "required": True,
    "description": "URL-safe base64 (no padding) of the UTF-8 id; for a match, of "
    "suspect_id + U+001F + mother_id (the match's `ref` field)",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
}


CASE_URL = {
    "type": "object",
    "properties": {
        "url": {"type": "string"},
        "suspect_id": {"type": "string"},
        "mother_id": {"type": "string"},
        "score": {"type": "number"},
        "coverage": {"type": "number"},
        "added_at": TIME_OR_NULL,
        "status": {"enum": ["online", "removed", "unknown"]},
        "last_checked_at": TIME_OR_NULL,
        "last_http_status": {"type": ["integer", "null"]},
        "last_outcome": {"type": "string"},
        "label": {"type": "string"},
    },
}
CASE_SCHEMAS: dict[str, Any] = {
    "Case": {
        "type": "object",
        "description": "A takedown case: one work copied on one site (the shape of "
        "`yinji case list --json`)",
        "required": ["id", "state", "work", "domain", "urls"],
        "properties": {
            "id": {"type": "string"},
            "state": {"enum": CASE_STATES},
            "kind": {"enum": ["page", "book"]},
            "work": {"type": "string"},
            "work_title": {"type": "string"},
            "mother_ids": {"type": "array", "items": {"type": "string"}},
            "domain": {"type": "string"},
            "urls": {"type": "array", "items": {"type": "string"}},
            "url_details": {"type": "array", "items": CASE_URL},
            "created_at": TIME_OR_NULL,
            "updated_at": TIME_OR_NULL,
            "state_changed_at": TIME_OR_NULL,
            "notice_sent_at": TIME_OR_NULL,
            "removed_at": TIME_OR_NULL,
            "metadata": {"type": "object"},
            "version": {"type": "integer"},
        },
    },
    "CaseEvent": {
        "type": "object",
        "description": "One entry of a case's hash-chained history",
        "properties": {
            "case_id": {"type": "string"},
            "seq": {"type": "integer"},
            "kind": {
                "enum": [
                    "created",
                    "transition",
                    "url_added",
                    "url_removed",
                    "recheck",
                    "notice",
                    "note",
                    "book",
                ]
            },
            "who": {"type": "string"},
            "note": {"type": "string"},
            "from_state": {"type": ["string", "null"]},
            "to_state": {"type": ["string", "null"]},
            "data": {"type": "object"},
            "at": TIME,
            "prev_hash": {"type": "string"},
            "hash": {"type": "string"},
            "evidence_ref": {"type": ["string", "null"]},
        },
    },
    "Platform": {
        "type": "object",
        "description": "A platform of the registry (tracker/cases/data/platforms.json, "
        "overridden by <data folder>/platforms.json)",
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string"},
            "name_en": {"type": "string"},
            "domains": {"type": "array", "items": {"type": "string"}},
            "abuse_email": {"type": ["string", "null"]},
            "web_form": {"type": ["string", "null"]},
            "documents": {"type": "array", "items": {"type": "string"}},
            "process": {"type": "string"},
            "source": {"type": "string"},
        },
    },
    "CaseDetail": {
        "allOf": [
            _ref("Case"),
            {
                "type": "object",
                "properties": {
                    "platform": {
                        "oneOf": [_ref("Platform"), {"type": "null"}],
                        "description": "The registry's platform of the case's site (or the "
                        "one chosen for it); null when the registry has none",
                    },
                    "history": {"type": "array", "items": _ref("CaseEvent")},
                    "history_problems": {
                        "type": "array",
                        "description": "Empty when every hash and link of the history checks",
                        "items": {"type": "string"},
                    },
                },
            },
        ]
    },
    "CaseList": {
        "type": "object",
        "properties": {
            "total": {"type": "integer"},
            "offset": {"type": "integer"},
            "limit": {"type": "integer"},
            "cases": {"type": "array", "items": _ref("Case")},
        },
    },
    "SiteStats": {
        "type": "object",
        "properties": {
            "domain": {"type": "string"},
            "cases": {"type": "integer"},
            "noticed": {"type": "integer"},
            "removed": {"type": "integer"},
            "removed_after_notice": {"type": "integer"},
            "removal_rate": {"type": ["number", "null"]},
            "median_days_to_removal": {"type": ["number", "null"]},
            "by_state": {"type": "object", "additionalProperties": {"type": "integer"}},
        },
    },
    "SiteStatsList": {
        "type": "object",
        "properties": {
            "sites": {"type": "array", "items": _ref("SiteStats")},
            "all": _ref("SiteStats"),
        },
    },
    "NoticePreview": {
        "type": "object",
        "properties": {
            "reference": {"type": "string"},
            "lang": {"enum": ["zh", "en"]},
            "platform": {"type": "string"},
            "date": {"type": "string"},
            "subject": {"type": "string"},
            "text": {"type": "string", "description": "The template's light markup"},
            "plain_text": {"type": "string", "description": "As the body of an e-mail"},
            "case_ids": {"type": "array", "items": {"type": "string"}},
            "urls": {
                "type": "array",
                "description": "The URLs the notice names: only those with a confirmed "
                "match, in chapter order",
                "items": {"type": "string"},
            },
            "left_out": {
                "type": "array",
                "description": "URLs of the cases the notice does not name, and why "
                "(their match is pending or dismissed, or gone from the library)",
                "items": {
                    "type": "object",
                    "properties": {"url": {"type": "string"}, "reason": {"type": "string"}},
                },
            },
        },
    },
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
            "works, check suspect pages, review matches, download evidence reports, follow "
            "takedown cases from the notice to the removal.",
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
            "/api/v1/index/rebuild": {
                "post": {
                    "summary": "Rebuild the index on the workers (admin); runs as a job whose "
                    "chunks the workers share, then one load; the job's `parts` list them",
                    "requestBody": {
                        "required": False,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "properties": {
                                        "engine": {
                                            "type": "string",
                                            "description": "Default: YINJI_ENGINE",
                                        }
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "202": job_accepted,
                        "400": _error("Unknown engine"),
                        "409": _json(
                            {
                                "type": "object",
                                "required": ["error"],
                                "properties": {
                                    "error": {"type": "string"},
                                    "job_id": {"type": ["string", "null"]},
                                    "engine": {"type": "string"},
                                },
                            },
                            "A rebuild is already running (its job, or a process holding "
                            "the index lock)",
                        ),
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
                                        "verdict": {"enum": list(VERDICTS)},
                                        "note": {"type": "string", "maxLength": 10000},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(
                            _ref("Match"),
                            "Updated match, with case_id and case_state: the case a "
                            "confirmed match with a URL joined (null otherwise)",
                        ),
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
                            "schema": {"enum": ["json", "html", "pdf", "zip"]},
                            "description": "zip: the evidence bundle (records, captured "
                            "bytes, inclusion proofs, signed tree head, timestamp, reports); "
                            "verify it offline with 'yinji evidence verify'",
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "The report or the evidence bundle",
                            "content": {
                                "application/json": {"schema": {"type": "object"}},
                                "text/html": {"schema": {"type": "string"}},
                                "application/pdf": {
                                    "schema": {"type": "string", "format": "binary"}
                                },
                                "application/zip": {
                                    "schema": {"type": "string", "format": "binary"}
                                },
                            },
                        },
                        "404": _error("No such match or format, or no evidence recorded"),
                        **ERRORS,
                    },
                },
            },
            **_case_paths(job_accepted),
            **_watch_paths(),
            "/api/v1/evidence/head": {
                "get": {
                    "summary": "The evidence log's key fingerprint and latest signed tree head "
                    "(no authentication: published so recipients can pin the key)",
                    "security": [],
                    "responses": {
                        "200": _json(
                            {"type": "object"},
                            "fingerprint, public_key_pem, tree_head, tree_head_signed, "
                            "signature_b64, timestamp_token_b64, verifier_sha256",
                        ),
                        "503": _error("The evidence log is unavailable"),
                    },
                },
            },
            "/api/v1/evidence/key.pem": {
                "get": {
                    "summary": "The evidence log's public key, PEM (no authentication)",
                    "security": [],
                    "responses": {
                        "200": {
                            "description": "PEM",
                            "content": {"application/x-pem-file": {"schema": {"type": "string"}}},
                        },
                        "503": _error("The evidence log is unavailable"),
                    },
                },
            },
            "/api/v1/evidence/consistency": {
                "get": {
                    "summary": "RFC 6962 consistency proof between two tree heads "
                    "(no authentication)",
                    "security": [],
                    "parameters": [
                        {
                            "name": "first",
                            "in": "query",
                            "required": True,
                            "schema": {"type": "integer", "minimum": 0},
                        },
                        {
                            "name": "second",
                            "in": "query",
                            "required": False,
                            "schema": {"type": "integer", "minimum": 0},
                            "description": "default: the size of the latest signed head",
                        },
                    ],
                    "responses": {
                        "200": _json(
                            {"type": "object"},
                            "first, second, first_root, second_root, proof (hex), log_id",
                        ),
                        "400": _error("Sizes the log does not hold"),
                        "503": _error("The evidence log is unavailable"),
                    },
                },
            },
            **discover_paths(),
            **book_paths(job_accepted),
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
                        "warnings": {
                            "type": "array",
                            "description": "POST /mothers: works shorter than the library's "
                            "minimum copied length (imported, but a copy of one alone can "
                            "never be reported)",
                            "items": {"type": "string"},
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
                        "result": {
                            "description": "The task's result; a check job's is "
                            "`{checked, results: [CheckedSuspect], errors, total}`"
                        },
                        "error": {"type": ["string", "null"]},
                        "parts": {
                            "type": "array",
                            "description": "A rebuild's tasks: its chunks, then the load",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": {"type": "string"},
                                    "state": {"type": "string"},
                                    "done": {"type": "integer"},
                                    "total": {"type": "integer"},
                                },
                            },
                        },
                    },
                },
                "CheckedSuspect": {
                    "type": "object",
                    "description": "One checked text in a check job's `results` (the "
                    "line of `yinji check --json`, with `title` and `url`)",
                    "properties": {
                        "suspect_id": {"type": "string"},
                        "title": {"type": "string"},
                        "url": {"type": "string"},
                        "matches": {"type": "array", "items": {"type": "object"}},
                        "text_sha256": {"type": "string"},
                        "warnings": {
                            "type": "array",
                            "description": "The engine reads too little of the text (not "
                            "Chinese): never a silent 'no match'",
                            "items": _ref("ScriptWarning"),
                        },
                        "noise": {
                            "type": "array",
                            "description": "Strings found repeated at a fixed rhythm; the "
                            "text was also checked without them",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "text": {"type": "string"},
                                    "count": {"type": "integer"},
                                    "period": {"type": "integer"},
                                },
                            },
                        },
                    },
                },
                "ScriptWarning": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"enum": ["no-chinese", "few-chinese", "mostly-other"]},
                        "read": {"type": "integer", "description": "characters the engine reads"},
                        "needed": {"type": "integer", "description": "minimum copied length"},
                        "other_words": {
                            "type": "integer",
                            "description": "words in scripts the engine does not read",
                        },
                        "engine": {"type": "string"},
                        "scripts": {"type": "array", "items": {"type": "string"}},
                        "message": {"type": "string"},
                    },
                },
                "Mother": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string"},
                        "title": {"type": "string"},
                        "source": {"type": "string"},
                        "characters": {"type": "integer"},
                        "ingested_at": TIME,
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
                "Region": {
                    "type": "object",
                    "description": "One copied stretch as a person reads it; inserted lines "
                    "(ads, watermarks) inside it are excluded spans",
                    "properties": {
                        k: {"type": "integer"}
                        for k in ("suspect_start", "suspect_end", "mother_start", "mother_end")
                    }
                    | {
                        "similarity": {"type": "number"},
                        "excluded": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "suspect_start": {"type": "integer"},
                                    "suspect_end": {"type": "integer"},
                                },
                            },
                        },
                    },
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
                        "verdict": {"enum": list(VERDICTS)},
                        "note": {"type": "string"},
                        "created_at": TIME,
                        "updated_at": TIME,
                        "passages": {"type": "array", "items": _ref("Passage")},
                        "regions": {"type": "array", "items": _ref("Region")},
                        "book_id": {
                            "type": ["string", "null"],
                            "description": "The book the work is a chapter of (null: none)",
                        },
                        "book_title": {"type": ["string", "null"]},
                        "chapter": {
                            "type": ["string", "null"],
                            "description": "The chapter's heading as in the book",
                        },
                        "chapter_index": {
                            "type": ["integer", "null"],
                            "description": "1-based position in the book",
                        },
                    },
                },
                **CASE_SCHEMAS,
                **BOOK_SCHEMAS,
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
