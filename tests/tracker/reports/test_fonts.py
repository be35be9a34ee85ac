"""The CJK font lookup of every PDF (tracker.plumbing.fonts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracker.plumbing import fonts
from tracker.plumbing.config import SettingError


def test_font_is_found_and_covers_chinese(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fonts.FONT_ENV, raising=False)
    path = fonts.cjk_font_path()
    assert path.is_file() and path.suffix.lower() in (".ttf", ".ttc")
    name = fonts.register_cjk_font()
    assert fonts.register_cjk_font() == name  # once per process
    # Chinese (simplified and traditional), Latin and the report's punctuation are there;
    # a GB 18030 extension-B character is not in WenQuanYi Micro Hei.
    assert fonts.covers("侵权证据报告 Copyright 繁體 [0–115) ∈ —") == []
    assert fonts.covers("周末在𠮷野家") == ["𠮷"]


def test_configured_font_must_be_truetype(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(fonts.FONT_ENV, str(tmp_path / "missing.ttf"))
    with pytest.raises(SettingError, match=fonts.FONT_ENV):
        fonts.cjk_font_path()
    otf = tmp_path / "NotoSansCJK.ttf"
    otf.write_bytes(b"OTTO" + b"\0" * 60)  # CFF outlines under a .ttf name
    monkeypatch.setenv(fonts.FONT_ENV, str(otf))
    with pytest.raises(SettingError, match="not a TrueType font"):
        fonts.cjk_font_path()
    real = fonts.SYSTEM_FONTS[0]
    if not Path(real).is_file():
        pytest.skip("Debian's fonts-wqy-microhei is not installed")
    monkeypatch.setenv(fonts.FONT_ENV, real)
    assert fonts.cjk_font_path() == Path(real)


def test_no_font_says_how_to_install_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(fonts.FONT_ENV, raising=False)
    monkeypatch.setattr(fonts, "_wheel_font", lambda: None)
    monkeypatch.setattr(fonts, "SYSTEM_FONTS", (str(tmp_path / "none.ttc"),))
    with pytest.raises(fonts.FontMissing, match="paperang-p2-fonts-cjk") as info:
        fonts.cjk_font_path()
    assert "fonts-wqy-microhei" in str(info.value) and fonts.FONT_ENV in str(info.value)
