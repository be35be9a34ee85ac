"""The Yinji web app: dashboard, library, suspects, analytics, exports and REST API.

``create_app(settings)`` is the app factory (as in redash): one blueprint per area in
``web/handlers/``. Every route needs a signed-in user (session cookie for pages, a
session or ``Authorization: Bearer <token>`` for ``/api/v1``) except the login page,
``/healthz`` and static files; roles are checked per route.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote, urlencode

from flask import Flask, g, redirect, render_template, request, session, url_for
from werkzeug.exceptions import HTTPException

from tracker.library import LibraryHandle
from tracker.plumbing.config import Settings, WebSettings

from .accounts import role_at_least, session_stamp, user_for_token
from .core import can, current_user, is_api, json_error, records
from .i18n import LANGUAGE_NAMES, LANGUAGES, current_language, select_language, translate
from .ids import IdConverter, encode_id
from .security import csrf_ok, init_security, load_secret_key
from .sessions import SESSION_ID, session_alive
from .uploads import FORM_FIELDS, MAX_FILES, init_uploads, spooled_count

MIB = 1024 * 1024

# Endpoints reachable without signing in.
# The OpenAPI document describes the API's shape and holds no data: public, so that
# clients and tools can read it before they have a token (docs/API.md).
# The evidence log's key, signed head and consistency proofs are published on purpose
# (docs/EVIDENCE.md, "Trust model"): a bundle's recipient has no account.
PUBLIC_ENDPOINTS = {
    "auth.login",
    "health.healthz",
    "static",
    "api.openapi",
    "api.evidence_head",
    "api.evidence_key",
    "api.evidence_consistency",
}


def create_app(
    settings: Settings | None = None,
    testing: bool = False,
    web_settings: WebSettings | None = None,
) -> Flask:
    """Build the app for ``settings`` and ``web_settings`` (default: from the
    environment; a bad value raises ``tracker.plumbing.config.SettingError`` naming it)."""
    settings = settings or Settings.from_env()
    web_settings = web_settings or WebSettings.from_env()
    app = Flask(__name__)
    max_mb = web_settings.max_upload_mb
    app.config.update(
        SECRET_KEY=load_secret_key(settings),
        TESTING=testing,
        # One request's body: uploads of many works at once, zips included.
        MAX_CONTENT_LENGTH=max_mb * MIB,
        # A JSON body: refused by its size before it is read (web.jsonbody).
        YINJI_MAX_JSON_BYTES=web_settings.max_json_mb * MIB,
        # Pasted text arrives as a form field; werkzeug's default (500 kB) is too small
        # for a novel chapter pasted whole.
        MAX_FORM_MEMORY_SIZE=64 * MIB,
        # Parts of one form: every file is one; room for MAX_FILES files and the fields.
        MAX_FORM_PARTS=MAX_FILES + FORM_FIELDS,
        SESSION_COOKIE_NAME="yinji_session",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=web_settings.secure_cookies,
        PERMANENT_SESSION_LIFETIME=timedelta(hours=12),
    )
    app.json.ensure_ascii = False  # type: ignore[attr-defined]
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.url_map.converters["id"] = IdConverter
    app.extensions["yinji"] = LibraryHandle(settings)

    init_security(app)
    init_uploads(app)
    _init_templates(app)
    _init_auth(app)
    _init_errors(app)

    from .handlers import (
        analytics,
        api,
        auth,
        books,
        books_api,
        cases,
        cases_api,
        discover,
        exports,
        health,
        library,
        matches,
        suspects,
        watch,
    )

    for module in (
        auth,
        health,
        library,
        books,
        suspects,
        matches,
        cases,
        analytics,
        exports,
        api,
        cases_api,
        books_api,
        watch,
    ):
        app.register_blueprint(module.bp)
    app.register_blueprint(discover.bp)
    app.register_blueprint(discover.api)
    from .books import init_books

    init_books(app)

    # Jobs submitted from this app go to the Celery app of these settings (the same
    # broker as the workers of this installation); tasks run in the app context.
    from workers.app import celery_init_app

    celery_init_app(app, settings)

    return app


def _init_templates(app: Flask) -> None:
    from tracker.common.records import VERDICTS
    from tracker.reports import safe_http_url

    from .charts import fmt_time
    from .core import VERDICT_LABELS, filter_args

    app.jinja_env.globals.update(
        _=translate,
        can=can,
        current_user=current_user,
        current_language=current_language,
        LANGUAGES=LANGUAGES,
        LANGUAGE_NAMES=LANGUAGE_NAMES,
        encode_id=encode_id,
        filter_args=filter_args,
        args_with=_args_with,
        lang_url=_lang_url,
        VERDICTS=VERDICTS,
        VERDICT_LABELS=VERDICT_LABELS,
    )
    app.jinja_env.filters.update(when=fmt_time, safe_href=safe_http_url, pct=_pct)


def _args_with(args: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``args`` (query parameters) with ``changes``; a change to None or "" drops it."""
    out = dict(args)
    for key, value in changes.items():
        if value is None or value == "":
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _pct(value: float, digits: int = 1) -> str:
    return f"{float(value) * 100:.{digits}f}%"


def _lang_url(lang: str) -> str:
    """The current page in another language. Query keys starting with "_" are dropped
    (url_for would read ``_external``/``_scheme`` from a crafted link as options).
    A URL no route matches (the 404 page) links to the same path, which is made
    site-relative: ``//evil.example/`` would otherwise be a link to another site."""
    values: dict[str, Any] = {k: v for k, v in request.args.items() if not k.startswith("_")}
    values["lang"] = lang
    if request.endpoint is None:
        path = "/" + request.path.lstrip("/\\")
        return quote(path, safe="/-._~!$'()*+,;:@") + "?" + urlencode(values)
    values.update(request.view_args or {})
    return url_for(request.endpoint, **values)


def _init_auth(app: Flask) -> None:
    @app.before_request
    def load_user() -> Any:
        g.lang = select_language()
        g.user = None
        g.token_auth = False
        endpoint = request.endpoint or ""
        header = request.headers.get("Authorization", "")
        if is_api() and header:
            scheme, _, token = header.partition(" ")
            user = (
                user_for_token(records().users, token.strip())
                if scheme.lower() == "bearer"
                else None
            )
            if user is None:
                return json_error(
                    401,
                    "invalid API token: send 'Authorization: Bearer <token>' "
                    "with a token from 'yinji user token' or your account page",
                )
            g.user, g.token_auth = user, True
        elif session.get("user"):
            user = records().get_user(session["user"])
            # The stamp ends sessions of a deleted user or after a password change; the
            # registered session id, a session that was signed out (web.sessions).
            if (
                user is not None
                and session.get("stamp") == session_stamp(user)
                and session_alive(session.get(SESSION_ID), user.username)
            ):
                g.user = user
            else:
                lang = session.get("lang")
                session.clear()
                if lang:
                    session["lang"] = lang
        if endpoint in PUBLIC_ENDPOINTS:
            pass
        elif g.user is None:
            if is_api():
                return json_error(
                    401, "authentication required: sign in or send 'Authorization: Bearer <token>'"
                )
            if request.endpoint is None:
                return None  # unknown URL: 404 below, not a login redirect loop
            return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))
        # CSRF: every state-changing request made with the session cookie carries the
        # session's token (form field or X-CSRF-Token header). Bearer-token API calls
        # carry no ambient credentials, so they need none.
        if (
            request.method in ("POST", "PUT", "PATCH", "DELETE")
            and not g.token_auth
            and not csrf_ok()
        ):
            message = "CSRF token missing or invalid: reload the page and try again"
            if is_api():
                return json_error(400, message)
            return render_template("error.html", code=400, message=translate(message)), 400
        return None

    app.jinja_env.globals["role_at_least"] = role_at_least


def _size(limit: int) -> str:
    return f"{limit // MIB} MB" if limit >= MIB else f"{max(1, limit // 1024)} KB"


def _too_large(app: Flask) -> tuple[str, dict[str, Any]]:
    """The 413 message naming the limit that was passed: the request's size
    (``YINJI_MAX_UPLOAD_MB``), one form field's (a pasted text), or the number of
    parts of a form (files and fields). Werkzeug raises the same error for all three:
    the request's size is known from its length; of the other two, a form cut short
    after (nearly) as many files as it may have parts passed the parts limit (the
    forms of this app have a handful of fields), else a field was too large."""
    request_limit = app.config["MAX_CONTENT_LENGTH"]
    field_limit = app.config["MAX_FORM_MEMORY_SIZE"]
    parts_limit = app.config["MAX_FORM_PARTS"]
    length = request.content_length
    per_request = (
        "upload too large: the limit is {size} per request",
        {"size": _size(request_limit)},
    )
    if length is not None and length > request_limit:
        return per_request
    if request.mimetype == "multipart/form-data":
        files = spooled_count()
        if length is not None and files >= parts_limit - min(FORM_FIELDS, parts_limit // 2):
            return ("too many files or fields in one form: at most {n}", {"n": parts_limit})
        if length is not None:
            return (
                "a pasted text or form field is over its limit of {size}",
                {"size": _size(field_limit)},
            )
    if request.mimetype == "application/x-www-form-urlencoded" and (length or 0) > field_limit:
        return (
            "a pasted text or form field is over its limit of {size}",
            {"size": _size(field_limit)},
        )
    return per_request


def _init_errors(app: Flask) -> None:
    messages = {
        400: "The request was not understood.",
        401: "Please sign in.",
        403: "You do not have permission to do this.",
        404: "Not found.",
        405: "This method is not allowed here.",
        413: "The upload is too large.",
        429: "Too many attempts; wait a few minutes.",
        500: "Internal error.",
    }

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException) -> Any:
        code = exc.code or 500
        params: dict[str, Any] = {}
        if code == 413 and type(exc).__name__ != "ApiError":
            message, params = _too_large(app)
        elif exc.description and type(exc).__name__ == "ApiError":
            message = exc.description
        elif code == 404 and is_api():
            message = f"not found: {request.path}"
        else:
            message = messages.get(code, exc.name)
        if is_api():
            response = json_error(code, message.format(**params) if params else message)
        else:
            text = translate(message, **params)
            response = app.make_response(
                (render_template("error.html", code=code, message=text), code)
            )
        valid = getattr(exc, "valid_methods", None)
        if code == 405 and valid:
            response.headers["Allow"] = ", ".join(valid)
        return response

    def service_unavailable(exc: Exception) -> Any:
        """Redis, MongoDB or the broker is down: 503 with ``Retry-After``, so clients
        know to send the same request again (a 500 says the request itself was bad)."""
        from tracker.plumbing.errors import RETRY_AFTER_SECONDS

        app.logger.error("service unavailable on %s: %s", request.path, exc)
        message = "A service Yinji needs is not answering; try again in a moment."
        if is_api():
            response = json_error(503, "service unavailable: try again later")
        else:
            response = app.make_response(
                (render_template("error.html", code=503, message=translate(message)), 503)
            )
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response

    @app.errorhandler(Exception)
    def internal_error(exc: Exception) -> Any:
        from tracker.plumbing.errors import is_outage

        if is_outage(exc):
            return service_unavailable(exc)
        if app.testing:
            raise exc  # tests see the real exception
        app.logger.exception("unhandled error on %s", request.path)
        if is_api():
            return json_error(500, "internal error: see the server log")
        return render_template("error.html", code=500, message=translate("Internal error.")), 500
