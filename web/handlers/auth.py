"""Sign in and out, the user's own account, and user management (admin)."""

from __future__ import annotations

from flask import (
    Blueprint,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask.typing import ResponseReturnValue

from tracker.store import ROLES, User

from ..accounts import (
    AccountError,
    authenticate,
    create_user,
    reset_token,
    session_stamp,
    set_password,
    set_role,
)
from ..core import current_user, fail, records, role_required, safe_next
from ..i18n import translate as _
from ..security import csrf_token
from ..sessions import SESSION_ID, end_session, open_session

bp = Blueprint("auth", __name__)


def _safe_next(target: str | None) -> str:
    """``next`` must not send a user to another site (see ``core.safe_next``)."""
    return safe_next(target, url_for("matches.dashboard"))


def _address() -> str:
    return request.remote_addr or "?"


@bp.route("/login", methods=["GET", "POST"])
def login() -> ResponseReturnValue:
    if request.method == "GET":
        if current_user() is not None:
            return redirect(_safe_next(request.args.get("next")))
        csrf_token()
        return render_template("login.html", next=request.args.get("next", ""))
    username = request.form.get("username", "").strip()
    password = request.form.get("password", "")
    throttle = current_app.extensions["yinji.throttle"]
    if throttle.blocked(_address(), username):
        return render_template(
            "login.html",
            next=request.form.get("next", ""),
            username=username,
            error=_("Too many attempts; wait a few minutes."),
        ), 429
    user = authenticate(records().users, username, password)
    if user is None:
        throttle.failed(_address(), username)
        return render_template(
            "login.html",
            next=request.form.get("next", ""),
            username=username,
            error=_("Wrong username or password."),
        ), 401
    throttle.succeeded(_address(), username)
    lang = session.get("lang")
    end_session(session.get(SESSION_ID))
    session.clear()  # a fresh session on sign-in: no fixation of a planted cookie
    if lang:
        session["lang"] = lang
    session["user"] = user.username
    session["stamp"] = session_stamp(user)
    session[SESSION_ID] = open_session(user.username)
    session.permanent = True
    csrf_token()
    return redirect(_safe_next(request.form.get("next")))


@bp.post("/logout")
def logout() -> ResponseReturnValue:
    lang = session.get("lang")
    end_session(session.get(SESSION_ID))  # a copy of this cookie is dead too
    session.clear()
    if lang:
        session["lang"] = lang
    flash(_("You are signed out."), "info")
    return redirect(url_for("auth.login"))


# --- the user's own account ------------------------------------------------------------
@bp.get("/account")
def account() -> ResponseReturnValue:
    return render_template("account.html")


@bp.post("/account/password")
def account_password() -> ResponseReturnValue:
    user = current_user()
    assert user is not None
    if authenticate(records().users, user.username, request.form.get("current", "")) is None:
        flash(_("The current password is wrong."), "error")
        return redirect(url_for("auth.account"))
    new = request.form.get("password", "")
    if new != request.form.get("confirm", ""):
        flash(_("The two new passwords differ."), "error")
        return redirect(url_for("auth.account"))
    try:
        set_password(records().users, user.username, new)
    except AccountError as exc:
        flash(_(str(exc)), "error")
        return redirect(url_for("auth.account"))
    # Keep this session, end the others (their stamp no longer matches).
    changed = records().get_user(user.username)
    assert changed is not None  # set_password succeeded on this user a moment ago
    session["stamp"] = session_stamp(changed)
    flash(_("Password changed."), "info")
    return redirect(url_for("auth.account"))


@bp.post("/account/token")
def account_token() -> ResponseReturnValue:
    user = current_user()
    assert user is not None
    token = reset_token(records().users, user.username)
    return render_template("token.html", username=user.username, token=token)


# --- user management (admin) ----------------------------------------------------------
@bp.get("/users")
@role_required("admin")
def users() -> ResponseReturnValue:
    return render_template("users.html", users=records().list_users(), roles=ROLES)


@bp.post("/users")
@role_required("admin")
def users_add() -> ResponseReturnValue:
    form = request.form
    try:
        token = create_user(
            records().users,
            form.get("username", ""),
            form.get("role", ""),
            form.get("password", ""),
        )
    except AccountError as exc:
        flash(_(str(exc)), "error")
        return redirect(url_for("auth.users")), 303
    flash(_("User {name} added.", name=form.get("username", "").strip()), "info")
    return render_template("token.html", username=form.get("username", "").strip(), token=token)


def _target(username: str) -> User:
    user = records().get_user(username)
    if user is None:
        fail(404, f"no user {username!r}")
    return user


@bp.post("/users/<username>/role")
@role_required("admin")
def users_role(username: str) -> ResponseReturnValue:
    _target(username)
    me = current_user()
    role = request.form.get("role", "")
    if me is not None and me.username == username and role != "admin":
        # The last way back in would be the CLI: do not let an admin demote themselves.
        flash(_("You cannot remove your own admin role."), "error")
        return redirect(url_for("auth.users"))
    try:
        set_role(records().users, username, role)
    except AccountError as exc:
        fail(400, str(exc))
    flash(_("Role of {name} set to {role}.", name=username, role=role), "info")
    return redirect(url_for("auth.users"))


@bp.post("/users/<username>/password")
@role_required("admin")
def users_password(username: str) -> ResponseReturnValue:
    _target(username)
    try:
        set_password(records().users, username, request.form.get("password", ""))
    except AccountError as exc:
        flash(_(str(exc)), "error")
        return redirect(url_for("auth.users"))
    flash(_("Password of {name} changed.", name=username), "info")
    return redirect(url_for("auth.users"))


@bp.post("/users/<username>/token")
@role_required("admin")
def users_token(username: str) -> ResponseReturnValue:
    _target(username)
    token = reset_token(records().users, username)
    return render_template("token.html", username=username, token=token)


@bp.post("/users/<username>/delete")
@role_required("admin")
def users_delete(username: str) -> ResponseReturnValue:
    _target(username)
    me = current_user()
    if me is not None and me.username == username:
        flash(_("You cannot delete yourself."), "error")
        return redirect(url_for("auth.users"))
    records().delete_user(username)
    flash(_("User {name} deleted.", name=username), "info")
    return redirect(url_for("auth.users"))
