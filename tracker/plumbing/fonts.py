"""The one CJK font lookup for every PDF Yinji writes (evidence reports, notices).

A report goes to a platform's legal desk and may end up in court: it must look the same
on every reader, so the font is embedded (a subset of the glyphs used), never left to
the reader's substitutes (a non-embedded font is how "C opyright" falls apart on
screen). reportlab embeds TrueType outlines only (not the CFF outlines of the OpenType
Noto CJK / Source Han fonts), so the font is WenQuanYi Micro Hei (文泉驿微米黑,
TrueType, covers GB 18030 and Big5 characters and Latin; Apache 2.0 or GPLv3 with the
font-embedding exception), found in this order:

1. ``YINJI_CJK_FONT``: a TrueType ``.ttf``/``.ttc`` file given by the administrator
   (a bad value is a ``SettingError`` naming the variable, never a silent fallback);
2. the wheel ``paperang-p2-fonts-cjk`` (a clean ``pip install`` brings it; its file is
   byte-identical to Debian's ``fonts-wqy-microhei``);
3. the system font folders (Debian's ``fonts-wqy-microhei`` / ``fonts-wqy-zenhei``).

``register_cjk_font()`` registers it with reportlab once per process and returns the
name to use in styles; ``covers(text)`` lists the characters the font has no glyph for.
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path

from tracker.plumbing.config import SettingError, env_optional_str

FONT_NAME = "YinjiCJK"
FONT_ENV = "YINJI_CJK_FONT"
FONT_WHEEL = "paperang-p2-fonts-cjk"  # pip name; import name paperang_p2_fonts_cjk
SYSTEM_FONTS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/wqy-microhei/wqy-microhei.ttc",
    "/usr/share/fonts/wenquanyi/wqy-microhei/wqy-microhei.ttc",
)
_TRUETYPE_MAGIC = (b"\x00\x01\x00\x00", b"true", b"ttcf")  # not "OTTO" (CFF outlines)
_lock = threading.Lock()
_registered: dict[Path, str] = {}


class FontMissing(RuntimeError):
    """No TrueType CJK font could be found (the message says how to install one)."""


def _wheel_font() -> Path | None:
    try:
        from importlib.resources import files

        path = Path(str(files("paperang_p2_fonts_cjk") / "fonts" / "wqy-microhei.ttc"))
    except (ModuleNotFoundError, TypeError):
        return None
    return path if path.is_file() else None


def _check_configured(value: str) -> Path:
    path = Path(value).expanduser()
    if not path.is_file() or path.suffix.lower() not in (".ttf", ".ttc"):
        raise SettingError(f"{FONT_ENV} must name a .ttf or .ttc file, got {value!r}")
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic not in _TRUETYPE_MAGIC:
        raise SettingError(
            f"{FONT_ENV}={value!r} is not a TrueType font (OpenType/CFF fonts such as "
            "Noto Sans CJK cannot be embedded by reportlab)"
        )
    return path


def cjk_font_path() -> Path:
    """The font file PDFs are set in (see the module docstring for the order).

    Raises ``SettingError`` for a bad ``YINJI_CJK_FONT`` and ``FontMissing`` when no
    font is installed.
    """
    configured = env_optional_str(FONT_ENV)
    if configured:
        return _check_configured(configured)
    packaged = _wheel_font()
    if packaged is not None:
        return packaged
    for candidate in SYSTEM_FONTS:
        if Path(candidate).is_file():
            return Path(candidate)
    raise FontMissing(
        f"no CJK TrueType font for PDFs: `pip install {FONT_WHEEL}`, "
        f"`apt-get install fonts-wqy-microhei`, or set {FONT_ENV} to a .ttf/.ttc file"
    )


def register_cjk_font() -> str:
    """Register the font with reportlab (once per process and file); return its name.

    reportlab embeds the glyphs a document uses as TrueType subsets (``FontFile2``)
    with a ``ToUnicode`` map, so the text stays extractable and searchable.
    """
    path = cjk_font_path()
    with _lock:
        name = _registered.get(path)
        if name is None:
            from reportlab.pdfbase import pdfmetrics
            from reportlab.pdfbase.ttfonts import TTFont

            # A second file (YINJI_CJK_FONT changed) gets a name of its own.
            name = FONT_NAME if not _registered else f"{FONT_NAME}{len(_registered)}"
            kwargs = {"subfontIndex": 0} if path.suffix.lower() == ".ttc" else {}
            pdfmetrics.registerFont(TTFont(name, str(path), **kwargs))
            _registered[path] = name
        return name


@cache
def _code_points(name: str) -> frozenset[int]:
    from reportlab.pdfbase import pdfmetrics

    face = pdfmetrics.getFont(name).face
    return frozenset(face.charToGlyph)


def covers(text: str, name: str | None = None) -> list[str]:
    """The distinct characters of ``text`` (not whitespace) the registered font has no
    glyph for, in order of appearance; they would print as empty boxes."""
    known = _code_points(name or register_cjk_font())
    missing: dict[str, None] = {}
    for ch in text:
        if not ch.isspace() and ord(ch) not in known:
            missing[ch] = None
    return list(missing)
