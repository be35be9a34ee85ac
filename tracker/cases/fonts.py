"""The CJK font embedded in notice PDFs.

A notice goes to a platform's legal desk and may end up in court: it must look the
same on every reader, so the font is embedded (a subset of the glyphs used), never
left to the reader's substitutes. reportlab embeds TrueType outlines only (not the
CFF outlines of the OpenType Noto CJK / Source Han fonts), so the font is
WenQuanYi Micro Hei (文泉驿微米黑, TrueType, covers GB 18030 and Big5 characters;
Apache 2.0 or GPLv3 with the font-embedding exception), found in this order:

1. ``YINJI_CJK_FONT``: a .ttf/.ttc file given by the administrator;
2. the wheel ``paperang-p2-fonts-cjk`` (a clean ``pip install`` brings it: the file is
   byte-identical to Debian's ``fonts-wqy-microhei``);
3. the system font folders (Debian's ``fonts-wqy-microhei`` / ``fonts-wqy-zenhei``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from tracker.config import SettingError, env_optional_str

FONT_NAME = "YinjiCJK"
SYSTEM_FONTS = (
    "/usr/share/fonts/truetype/wqy/wqy-microhei.ttc",
    "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
    "/usr/share/fonts/wqy-microhei/wqy-microhei.ttc",
    "/usr/share/fonts/wenquanyi/wqy-microhei/wqy-microhei.ttc",
)
_lock = threading.Lock()
_registered: str | None = None


class FontMissing(RuntimeError):
    """No TrueType CJK font could be found."""


def cjk_font_path() -> Path:
    """The font file notices are set in (see the module docstring for the order)."""
    configured = env_optional_str("YINJI_CJK_FONT")
    if configured:
        path = Path(configured)
        if not path.is_file() or path.suffix.lower() not in (".ttf", ".ttc"):
            raise SettingError(f"YINJI_CJK_FONT must name a .ttf or .ttc file, got {configured!r}")
        return path
    try:
        from importlib.resources import files

        packaged = Path(str(files("paperang_p2_fonts_cjk") / "fonts" / "wqy-microhei.ttc"))
        if packaged.is_file():
            return packaged
    except (ModuleNotFoundError, TypeError):
        pass
    for candidate in SYSTEM_FONTS:
        if Path(candidate).is_file():
            return Path(candidate)
    raise FontMissing(
        "no CJK TrueType font for PDF notices: `pip install paperang-p2-fonts-cjk`, "
        "`apt-get install fonts-wqy-microhei`, or set YINJI_CJK_FONT to a .ttf/.ttc file"
    )


def register_cjk_font() -> str:
    """Register the font with reportlab once per process; returns its reportlab name."""
    global _registered
    with _lock:
        if _registered is None:
            from reportlab.pdfbase import pdfmetrics
            from reportlab.pdfbase.ttfonts import TTFont

            path = cjk_font_path()
            kwargs = {"subfontIndex": 0} if path.suffix.lower() == ".ttc" else {}
            pdfmetrics.registerFont(TTFont(FONT_NAME, str(path), **kwargs))
            _registered = FONT_NAME
        return _registered
