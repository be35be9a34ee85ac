"""``yinji evidence``: export a suspect's evidence bundle, verify one offline, show the
log's signed tree head (issue #15's command-line contract; registered through the
``yinji.commands`` entry points, so ``tracker.cli`` imports none of it).

- ``yinji evidence export SUSPECT_ID [--mother MOTHER_ID] -o FILE.zip``: the records of
  the suspect (of one match with ``--mother``), the captured bytes, inclusion proofs, the
  signed tree head, its timestamp token, and the PDF and HTML reports of every match.
- ``yinji evidence verify FILE.zip [--key FILE|--fingerprint HEX] [--trust-bundled-key]``:
  exit 0 "OK" only when everything verifies under a pinned key (given, or this
  library's own); exit 1 naming each check and member that fails, or when no key is
  pinned; exit 2 with ``--trust-bundled-key`` for a bundle intact under its own key.
- ``yinji evidence head [--json] [--publish DIR]``: the key fingerprint and the current
  signed tree head (checked against every stored head first).
- ``yinji evidence consistency FIRST [SECOND]``: RFC 6962 consistency proof (JSON);
  ``yinji evidence check-consistency PROOF.json OLD.json NEW.json`` checks one offline
  against two tree heads (``treehead.json`` of two bundles).
- ``yinji evidence audit``: recompute the whole log; exit 1 listing the problems.
- ``yinji evidence stamp``: what the scheduled job does, by hand: a signed tree head
  covering every record, timestamped with ``YINJI_TSA_URL``, and the timestamps still
  pending retried; exit 1 when a TSA is configured and the head is left unstamped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from tracker.plumbing.config import SettingError, Settings


def _settings(ctx: click.Context) -> Settings:
    root = ctx.find_root()
    try:
        return Settings.from_env((root.obj or {}).get("data_dir"))
    except SettingError as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
def evidence() -> None:
    """Evidence log: export bundles, verify them offline, show the signed tree head."""


@evidence.command("export")
@click.argument("suspect_id")
@click.option("--mother", "mother_id", default=None, help="Only the match with this work.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The bundle to write (.zip).",
)
@click.pass_context
def export(ctx: click.Context, suspect_id: str, mother_id: str | None, output: Path) -> None:
    """Write SUSPECT_ID's evidence bundle (one match with --mother, else all of them)."""
    from tracker.common.records import NotFound
    from tracker.evidence import EvidenceError
    from tracker.library import Library

    with Library.open(_settings(ctx)) as lib:
        try:
            result, matches = lib.export_evidence(output, suspect_id, mother_id)
        except (EvidenceError, NotFound) as exc:
            raise click.ClickException(str(exc)) from None
    stamped = "timestamped" if result.stamped else "not timestamped (no YINJI_TSA_URL)"
    click.echo(
        f"wrote {output}: {len(result.members)} files, {matches} match(es), tree head of "
        f"{result.tree_head.size} records, {stamped}",
        err=True,
    )


def _library_key(ctx: click.Context) -> tuple[bytes, str] | None:
    """The public key of the library this command runs in (YINJI_EVIDENCE_KEY, or the
    key file of its data folder), or None outside a library. Never creates a key."""
    from tracker.evidence.keys import KEY_FILE, SigningKey
    from tracker.evidence.settings import EvidenceSettings

    settings = _settings(ctx)
    configured = EvidenceSettings.from_env().key
    if not configured and not (settings.data_dir / KEY_FILE).is_file():
        return None
    key = SigningKey.load(settings.data_dir, configured)
    return key.public_pem(), f"this library's key ({key.source})"


@evidence.command("verify")
@click.argument("bundle", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--key",
    "key_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The log's public key (PEM) as the rights holder published it.",
)
@click.option(
    "--fingerprint",
    default=None,
    help="The log's key fingerprint (64 hex digits) as the rights holder published it.",
)
@click.option(
    "--trust-bundled-key",
    is_flag=True,
    help="No published key at hand: check against the key inside the bundle and report "
    "what that would prove, marked UNPINNED (exit 2 when intact).",
)
@click.option(
    "--tsa-ca",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="PEM certificates of trusted timestamp authorities [$YINJI_TSA_CA].",
)
@click.option(
    "--json", "as_json", is_flag=True, help="Print the result as JSON (same exit status)."
)
@click.pass_context
def verify(
    ctx: click.Context,
    bundle: Path,
    key_file: Path | None,
    fingerprint: str | None,
    trust_bundled_key: bool,
    tsa_ca: Path | None,
    as_json: bool,
) -> None:
    """Check BUNDLE offline against a pinned key: --key or --fingerprint, else this
    library's own key when run inside it. Every file against the signed SHA256SUMS,
    every record against the signed tree head, the timestamp and the times. Exit 0
    "OK" only under a pinned key; exit 1 naming what fails, or when no key is pinned."""
    from tracker.evidence import BundleError, verify_bundle
    from tracker.evidence.keys import EvidenceKeyError, format_fingerprint
    from tracker.evidence.settings import EvidenceSettings
    from tracker.evidence.tsa import TokenError, load_certificates

    try:
        ca = tsa_ca or EvidenceSettings.from_env().tsa_ca
        roots = load_certificates(ca) if ca else []
        pem: bytes | None = None
        where = ""
        if key_file is not None:
            pem, where = key_file.read_bytes(), f"--key {key_file}"
        elif fingerprint is not None:
            where = "--fingerprint"
        elif not trust_bundled_key:
            found = _library_key(ctx)
            if found is not None:
                pem, where = found
        result = verify_bundle(bundle, public_key=pem, fingerprint=fingerprint, tsa_roots=roots)
    except (SettingError, TokenError, EvidenceKeyError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    except BundleError as exc:
        click.echo(f"FAILED: {bundle}: {exc}")
        ctx.exit(1)
    if as_json:
        status = 0 if result.trusted else (2 if trust_bundled_key and result.ok else 1)
        click.echo(json.dumps(result.to_json(), ensure_ascii=False, sort_keys=True))
        ctx.exit(status)
    if result.pinned_key_id is not None:
        click.echo(result.summary())
        click.echo(f"pinned key: {format_fingerprint(result.pinned_key_id)} ({where})")
        ctx.exit(0 if result.trusted else 1)
    if trust_bundled_key:
        click.echo(result.summary())
        ctx.exit(2 if result.ok else 1)
    bundled = format_fingerprint(result.key_id) if result.key_id else "unreadable"
    click.echo(
        f"NOT OK: no key is pinned, and a bundle proves nothing against the key it carries "
        f"(anyone can make one). This bundle carries the key {bundled}. Run again with "
        "--fingerprint HEX or --key FILE as the rights holder published them (or inside "
        "the library that made it); --trust-bundled-key reports what the bundle's own key "
        "would prove."
    )
    if not result.ok:
        click.echo(result.summary())
    ctx.exit(1)


def _open_log(ctx: click.Context) -> Any:
    from tracker.evidence import EvidenceError, EvidenceLog
    from tracker.evidence.keys import EvidenceKeyError

    try:
        return EvidenceLog.from_settings(_settings(ctx))
    except (SettingError, EvidenceError, EvidenceKeyError) as exc:
        raise click.ClickException(str(exc)) from None


@evidence.command("head")
@click.option("--json", "as_json", is_flag=True, help="Print it as JSON (for machines).")
@click.option(
    "--publish",
    "publish_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write yinji-evidence-key.pem and yinji-evidence-head.json into this folder "
    "(to put on your own web site).",
)
@click.pass_context
def head(ctx: click.Context, as_json: bool, publish_dir: Path | None) -> None:
    """The log's key fingerprint and a signed tree head covering every record (signed
    now when the log has grown, after checking that the log still holds every head it
    signed). Publish the fingerprint: recipients check bundles against it."""
    from tracker.evidence import EvidenceError
    from tracker.evidence.public import published_head, write_published

    log = _open_log(ctx)
    try:
        published = published_head(log)
    except EvidenceError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        log.close()
    if publish_dir is not None:
        for path in write_published(published, publish_dir):
            click.echo(f"wrote {path}", err=True)
    out = published.to_json()
    if as_json:
        click.echo(json.dumps(out, ensure_ascii=False, sort_keys=True))
        return
    from tracker.common.timefmt import human_utc
    from tracker.evidence.canonical import time_from_ms

    th = published.head
    click.echo(f"fingerprint (指纹): {out['fingerprint_grouped']}")
    click.echo(f"tree head (树头):   {th.size} records, root {th.root_hash.hex()}")
    click.echo(f"signed (签署):      {human_utc(time_from_ms(th.timestamp_ms))}")
    click.echo(f"timestamped (时间戳): {'yes' if out['timestamped'] else 'no'}")
    click.echo(f"verify_proof.py sha256: {out['verifier_sha256']}")


@evidence.command("consistency")
@click.argument("first", type=click.IntRange(min=0))
@click.argument("second", type=click.IntRange(min=0), required=False)
@click.pass_context
def consistency_cmd(ctx: click.Context, first: int, second: int | None) -> None:
    """RFC 6962 proof (JSON) that the log at SECOND records (default: its latest signed
    head) begins with the log at FIRST records: it only grew, nothing was rewritten."""
    from tracker.evidence import EvidenceError
    from tracker.evidence.public import consistency

    log = _open_log(ctx)
    try:
        proof = consistency(log, first, second)
    except EvidenceError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        log.close()
    click.echo(json.dumps(proof.to_json(), sort_keys=True))


@evidence.command("check-consistency")
@click.argument("proof_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("first_head", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("second_head", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def check_consistency_cmd(proof_file: Path, first_head: Path, second_head: Path) -> None:
    """Offline: does PROOF_FILE (from `yinji evidence consistency` or
    /api/v1/evidence/consistency) show that the log of SECOND_HEAD extends the log of
    FIRST_HEAD? The heads are treehead.json files (of two bundles, say); check their
    signatures with `yinji evidence verify` or openssl. Exit 0 "OK", 1 otherwise."""
    from tracker.evidence import EvidenceError
    from tracker.evidence.canonical import CanonicalError
    from tracker.evidence.keys import TreeHead
    from tracker.evidence.merkle import verify_consistency
    from tracker.evidence.public import Consistency

    try:
        first = TreeHead.decode(first_head.read_bytes(), str(first_head))
        second = TreeHead.decode(second_head.read_bytes(), str(second_head))
        proof = Consistency.from_json(json.loads(proof_file.read_text(encoding="utf-8")))
    except (CanonicalError, EvidenceError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    if first.log_id != second.log_id:
        raise click.ClickException("the two tree heads are of different logs (log_id)")
    ok = (proof.first, proof.second) == (first.size, second.size) and verify_consistency(
        first.size, second.size, first.root_hash, second.root_hash, list(proof.proof)
    )
    if not ok:
        click.echo(
            f"FAILED: the proof does not show that the log of {second.size} records "
            f"extends the log of {first.size} records (rewritten, or another proof)"
        )
        raise SystemExit(1)
    click.echo(
        f"OK: the log of {second.size} records ({second_head}) extends the log of "
        f"{first.size} records ({first_head}): nothing before was changed or removed"
    )


@evidence.command("audit")
@click.pass_context
def audit(ctx: click.Context) -> None:
    """Recompute the whole log (every leaf hash, stored node, tree head root, signature
    and timestamp token); exit 1 listing every problem."""
    log = _open_log(ctx)
    try:
        report = log.audit()
    finally:
        log.close()
    if report.ok:
        click.echo(
            f"OK: {report.size} records, {report.heads} signed tree heads "
            f"({report.stamped_heads} timestamped) consistent"
        )
        return
    click.echo(f"FAILED: {len(report.problems)} problem(s)")
    for problem in report.problems:
        click.echo(f"  - {problem}")
    ctx.exit(1)


@evidence.command("stamp")
@click.pass_context
def stamp(ctx: click.Context) -> None:
    """Sign a tree head covering every record, timestamp it (YINJI_TSA_URL) and retry
    the timestamps still pending, as the scheduled job does; print what was done as
    JSON. Exit 1 when a TSA is configured but the head is left without a token, or when
    the log no longer holds what a signed head says (nothing is signed then)."""
    from tracker.evidence import EvidenceError

    log = _open_log(ctx)
    try:
        done = log.publish()
        configured = log.tsa is not None
    except EvidenceError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        log.close()
    click.echo(json.dumps(done.to_json(), ensure_ascii=False))
    if configured and done.head.token is None:
        click.echo(f"not timestamped: {done.head.stamp_error}", err=True)
        ctx.exit(1)
    if not configured:
        click.echo("not timestamped: no YINJI_TSA_URL", err=True)
