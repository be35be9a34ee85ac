"""The OpenAPI document describes the "not Chinese" warnings a check job returns
(issue #26): every code the check gives is in the schema, with the keys it sends."""

from __future__ import annotations

from pathlib import Path

from tracker.text.noise import script_warning


def test_script_warning_schema_matches_what_a_check_sends(tmp_path: Path) -> None:
    from tracker.plumbing.config import Settings
    from web import create_app
    from web.openapi import openapi_document

    app = create_app(Settings(data_dir=tmp_path / "data"), testing=True)
    schemas = openapi_document(app)["components"]["schemas"]
    schema = schemas["ScriptWarning"]
    checked = schemas["CheckedSuspect"]["properties"]
    assert checked["warnings"]["items"] == {"$ref": "#/components/schemas/ScriptWarning"}
    # A script Yinji does not read (it reads Han and Latin): Cyrillic.
    russian = "Это было лучшее из всех времён, это было худшее из всех времён. " * 20
    samples = [
        (russian, 0),  # nothing Yinji reads
        ("他说：好。", 4),  # fewer than the minimum copied length
        (russian + "天" * 100, 100),  # mostly words of another script
    ]
    sent = []
    for text, read in samples:
        w = script_warning(text, "t.txt", read=read, needed=85, engine="daguan")
        assert w is not None
        sent.append(w.to_json())
    assert [w["code"] for w in sent] == schema["properties"]["code"]["enum"]
    for w in sent:
        assert set(w) == set(schema["properties"])
