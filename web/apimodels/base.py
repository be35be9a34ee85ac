"""What every part of the API shares: the model base, times, errors, jobs."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, JsonValue, WithJsonSchema

MAX_PAGE = 200  # rows per page a client may ask for
MAX_OFFSET = 10**12  # the highest ?offset= accepted

# Every time in every answer: UTC with milliseconds and Z (tracker.common.timefmt.iso_utc).
TIME_SCHEMA: dict[str, JsonValue] = {
    "type": "string",
    "format": "date-time",
    "description": "UTC, milliseconds, Z: 2026-11-25T09:26:15.794Z",
}
Time = Annotated[str, WithJsonSchema(TIME_SCHEMA)]
TimeOrNull = Annotated[str | None, WithJsonSchema({**TIME_SCHEMA, "type": ["string", "null"]})]


class ApiModel(BaseModel):
    """The base of every API model: a field's docstring is its description."""

    model_config = ConfigDict(use_attribute_docstrings=True)


class Error(ApiModel):
    """Every 4xx and 5xx answer of the API."""

    error: str
    errors: list[dict[str, JsonValue]] | None = None


class Problem(ApiModel):
    source: str
    message: str


class JobAccepted(ApiModel):
    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    job_id: str
    status_url: str
    documents: int | None = None
    """JSON items queued"""
    files: int | None = None
    """Files queued"""
    texts: int | None = None
    urls: int | None = None
    errors: list[Problem] | None = None
    """Items passed over (also the job's 'skipped')"""
    warnings: list[str] | None = None
    """POST /mothers: works shorter than the library's minimum copied length (imported, but a copy
    of one alone can never be reported)"""


class Part(ApiModel):
    label: str | None = None
    state: str | None = None
    done: int | None = None
    total: int | None = None


class Job(ApiModel):
    id: str | None = None
    state: str | None = None
    progress: float | None = None
    done: int | None = None
    total: int | None = None
    result: JsonValue = None
    """The task's result; a check job's is `{checked, results: [CheckedSuspect], errors, total}`"""
    error: str | None = None
    parts: list[Part] | None = None
    """A rebuild's tasks: its chunks, then the load"""


class Health(ApiModel):
    """What /healthz says: ``ok``, ``degraded`` or ``unavailable``, and each service's state."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)
    status: str
