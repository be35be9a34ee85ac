"""Chinese and English UI: a JSON message catalogue per language and a ``_()`` function.

Message ids are the English texts (``_("Library")``), so templates stay readable and
an id missing from a catalogue still shows sensible English. No compile step: the
catalogues in ``web/translations/`` are read once at start-up.

The language is, in order: ``?lang=`` on any URL (the toggle in the navigation bar;
stored in the session), the session's choice, then the browser's Accept-Language
with Chinese preferred when both are acceptable.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path

from flask import g, request, session

LANGUAGES: tuple[str, ...] = ("zh", "en")  # zh first: it is the default
LANGUAGE_NAMES = {"zh": "中文", "en": "English"}
_DIR = Path(__file__).parent / "translations"


@cache
def catalogue(lang: str) -> dict[str, str]:
    path = _DIR / f"{lang}.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if isinstance(v, str)}


def select_language() -> str:
    """The request's language (also stores a ``?lang=`` choice in the session)."""
    asked = request.args.get("lang")
    if asked in LANGUAGES:
        session["lang"] = asked
        return asked
    chosen = session.get("lang")
    if chosen in LANGUAGES:
        return chosen
    return preferred(request.accept_languages)


def preferred(accept: Iterable[tuple[str, float]]) -> str:
    """The UI language the browser wants most; Chinese on a tie or when it names
    neither (werkzeug's ``best_match`` would take header order on a tie)."""
    best, best_q = LANGUAGES[0], 0.0
    for lang in LANGUAGES:
        q = max(
            (
                quality
                for value, quality in accept
                if value.lower() == lang or value.lower().startswith(lang + "-")
            ),
            default=0.0,
        )
        if q > best_q:
            best, best_q = lang, q
    return best


def current_language() -> str:
    lang = getattr(g, "lang", None)
    if lang is None:
        try:
            lang = select_language()
        except RuntimeError:  # outside a request (CLI, report rendering)
            lang = LANGUAGES[0]
    return lang


def translate(message: str, lang: str | None = None, /, **params: object) -> str:
    """``message`` in the current language, with ``{name}`` placeholders filled.

    Returns a plain ``str``: Jinja escapes it like any other value, so parameters
    taken from user data cannot inject markup.
    """
    text = catalogue(lang or current_language()).get(message) or message
    if params:
        try:
            text = text.format(**params)
        except (KeyError, IndexError, ValueError):
            text = message.format(**params)
    return text


_ = translate
