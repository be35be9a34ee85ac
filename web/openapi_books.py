"""The OpenAPI paths and schemas of ``/api/v1/books`` (``web/handlers/books_api.py``),
merged into ``web.openapi.openapi_document``. The shapes are ``yinji book list --json``
and ``yinji book show --json`` (``tracker.books.model.Book.summary``/``to_dict``), with
``copies`` and ``grid`` from ``tracker.books.stats``."""

from __future__ import annotations

from typing import Any

from tracker.books.stats import STEPS
from web.openapi_common import TIME


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_ERROR = _ref("Error")
ERRORS = {
    "401": _json(_ERROR, "Missing or invalid token"),
    "403": _json(_ERROR, "Your role does not allow this"),
}
BOOK_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "URL-safe base64 (no padding) of the UTF-8 book id",
    "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]+$"},
}
_SUMMARY_PROPERTIES: dict[str, Any] = {
    "id": {"type": "string"},
    "title": {"type": "string", "description": "Without 《》"},
    "author": {"type": "string"},
    "characters": {"type": "integer"},
    "series": {"type": "string"},
    "isbn": {"type": "string"},
    "language": {"type": "string"},
    "source": {"type": "string", "description": "The file (or files) it was read from"},
    "created_at": TIME,
}
BOOK_SCHEMAS: dict[str, Any] = {
    "BookCopies": {
        "type": "object",
        "description": "What the stored matches say of a book's copies",
        "properties": {
            "chapters_pirated": {
                "type": "integer",
                "description": "Chapters with a match that was not dismissed",
            },
            "sites_confirmed": {
                "type": "integer",
                "description": "Sites (host:port) where a chapter's match is confirmed",
            },
            "sites_pending": {
                "type": "integer",
                "description": "Sites with pending matches only",
            },
            "sites": {"type": "array", "items": {"type": "string"}},
        },
    },
    "BookSummary": {
        "type": "object",
        "description": "One object of `yinji book list --json`, with `copies`",
        "required": ["id", "title", "author", "chapters"],
        "properties": {
            **_SUMMARY_PROPERTIES,
            "chapters": {"type": "integer", "description": "The number of chapters"},
            "copies": _ref("BookCopies"),
        },
    },
    "BookChapter": {
        "type": "object",
        "required": ["index", "title", "work_id", "characters"],
        "properties": {
            "index": {"type": "integer", "description": "1-based position in the book"},
            "title": {"type": "string", "description": "The heading as in the book"},
            "work_id": {"type": "string", "description": "The chapter's work (mother) id"},
            "characters": {"type": "integer"},
            "volume": {"type": "string"},
        },
    },
    "BookCell": {
        "type": "object",
        "description": "One chapter on one site: the furthest step reached",
        "properties": {
            "work_id": {"type": "string"},
            "site": {"type": "string", "description": "host, or host:port off the default"},
            "state": {"enum": list(STEPS)},
            "matches": {"type": "integer", "description": "Matches not dismissed"},
            "confirmed": {"type": "integer"},
            "pending": {"type": "integer"},
            "urls": {"type": "array", "items": {"type": "string"}},
            "case_ids": {"type": "array", "items": {"type": "string"}},
        },
    },
    "Book": {
        "type": "object",
        "description": "`yinji book show --json`, with `copies` and the chapters × sites `grid`",
        "required": ["id", "title", "author", "chapters"],
        "properties": {
            **_SUMMARY_PROPERTIES,
            "chapters": {"type": "array", "items": _ref("BookChapter")},
            "copies": _ref("BookCopies"),
            "grid": {
                "type": "object",
                "properties": {
                    "sites": {"type": "array", "items": {"type": "string"}},
                    "chapters": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "index": {"type": "integer"},
                                "work_id": {"type": "string"},
                                "cells": {
                                    "type": "object",
                                    "description": "By site; only the sites the chapter "
                                    "was found on",
                                    "additionalProperties": _ref("BookCell"),
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}


def book_paths(job_accepted: dict[str, Any]) -> dict[str, Any]:
    """The paths of ``/api/v1/books``."""
    not_found = _json(_ERROR, "No such book")
    summary = _json(
        {"type": "object", "properties": _SUMMARY_PROPERTIES | {"chapters": {"type": "integer"}}},
        "The book (as `yinji book rename --json`)",
    )
    return {
        "/api/v1/books": {
            "get": {
                "summary": "The books of the library, by title (`yinji book list --json`)",
                "parameters": [
                    {
                        "name": "q",
                        "in": "query",
                        "description": "Text in the title, author, series or id",
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": _json({"type": "array", "items": _ref("BookSummary")}, "Books"),
                    **ERRORS,
                },
            },
            "post": {
                "summary": "Import book files (analyst): each file one book, its chapters "
                "ingested by a job",
                "requestBody": {
                    "required": True,
                    "content": {
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "files": {
                                        "type": "array",
                                        "items": {"type": "string", "format": "binary"},
                                        "description": ".txt .html .htm .docx .epub (a whole "
                                        "book), or .zip (the chapter files of one book)",
                                    }
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "202": {
                        **job_accepted,
                        "description": "Job queued; `books` are the books read (with their "
                        "`chapters` counts), `warnings` the reader's notes",
                    },
                    "400": _json(_ERROR, "No file could be read as a book (see errors)"),
                    "413": _json(_ERROR, "Upload too large"),
                    "415": _json(_ERROR, "Not multipart"),
                    **ERRORS,
                },
            },
        },
        "/api/v1/books/{id}": {
            "parameters": [BOOK_ID],
            "get": {
                "summary": "One book with its chapters and where they are copied",
                "responses": {
                    "200": _json(_ref("Book"), "The book"),
                    "404": not_found,
                    **ERRORS,
                },
            },
            "patch": {
                "summary": "Correct a book's details (analyst); its chapters follow a new "
                "title or author",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    k: {"type": "string"}
                                    for k in ("title", "author", "series", "isbn", "language")
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": summary,
                    "400": _json(_ERROR, "Bad field (named in the message)"),
                    "404": not_found,
                    **ERRORS,
                },
            },
            "delete": {
                "summary": "Delete a book with its chapter works and their matches (admin)",
                "responses": {
                    "200": _json(
                        {
                            "type": "object",
                            "properties": {
                                "deleted": {"type": "string"},
                                "works_deleted": {"type": "integer"},
                                "works_missing": {"type": "array", "items": {"type": "string"}},
                            },
                        },
                        "Deleted",
                    ),
                    "404": not_found,
                    **ERRORS,
                },
            },
        },
    }
