"""``verify_bundle``: check an evidence bundle against a pinned key, as named checks.

Whoever made a bundle chose every byte in it, the public key included, so a bundle is
only as good as the key it is checked against: the key a recipient *pins* (the one the
rights holder published, given as ``public_key`` PEM or as its ``fingerprint``). Without
a pin the bundled key is used, ``VerifyResult.pinned`` is False and the summary says
``UNPINNED``: the bundle is then intact under *some* key, which proves nothing about
whose log it is.

The checks, in order (``VerifyResult.checks`` has one ``Check`` per name, each ok or
with what failed):

``members``     the zip's own CRCs; every member is listed in ``SHA256SUMS`` and
                matches it; nothing listed is missing, nothing unlisted is present
``key``         ``public-key.pem`` is the pinned key (or: unpinned)
``signature``   ``SHA256SUMS.sig`` is the key's signature of ``SHA256SUMS`` (this
                covers every member: the verifier script and VERIFY.txt too)
``manifest``    ``manifest.json`` is readable, of this format, and agrees with
                ``SHA256SUMS``
``tree_head``   ``treehead.json`` is canonical and ``treehead.sig`` is the key's
``timestamp``   ``treehead.tsr`` (if any) binds the SHA-256 of ``treehead.json``
``records``     each record's inclusion proof leads to the signed root
``anchors``     each earlier timestamped head (``heads/``) is signed by the key, its
                token binds it, and a consistency proof shows the signed head extends
                it; the records it anchors are within it
``files``       each evidence file is the one its proven record names
``times``       no proven record claims a time after its tree head's (its anchor's,
                when it has one), nor after that head's token time (plus
                ``MAX_CLOCK_SKEW``)
``warc``        each WARC response replays the body its capture record names
``verifier``    ``verify_proof.py`` is the verifier this Yinji publishes, and
                ``VERIFY.txt`` the instructions it writes for this bundle

Hostile archives (unsafe names, links, encryption, oversized or over-compressed
members) are refused with ``BundleError`` before anything is read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, Any

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from .bundle_format import (
    BUNDLE_FORMAT,
    INSTRUCTIONS,
    MANIFEST,
    OLD_FORMATS,
    PUBLIC_KEY,
    SCAFFOLDING,
    SIGNATURE,
    SUMS,
    SUMS_SIG,
    TOKEN,
    TREEHEAD,
    VERIFY_SCRIPT,
    WARC,
    Limits,
    _ext,
    _sha,
    instructions,
    read_bundle,
    record_times,
    verifier_sha256,
)
from .canonical import (
    CanonicalError,
    format_time,
    hex_path,
    parse_json_object,
    parse_time,
    time_from_ms,
)
from .keys import (
    EvidenceKeyError,
    SignedTreeHead,
    TreeHead,
    format_fingerprint,
    key_id_of,
    parse_fingerprint,
    public_key_from_pem,
)
from .merkle import leaf_hash, verify_consistency, verify_inclusion
from .tsa import TokenError, verify_response
from .verify_result import Check, VerifyResult

# How far a record's time may run ahead of the TSA's (the two clocks differ a little).
MAX_CLOCK_SKEW = timedelta(minutes=5)


class _Verifier:
    def __init__(
        self,
        members: dict[str, bytes | None],
        pinned: Ed25519PublicKey | None,
        pinned_fingerprint: str | None,
        tsa_roots: Sequence[x509.Certificate],
    ) -> None:
        self.members = members
        self.result = VerifyResult()
        self.pinned = pinned
        self.pinned_fingerprint = pinned_fingerprint
        self.tsa_roots = list(tsa_roots)
        self.key: Ed25519PublicKey | None = None
        self.sums: dict[str, str] = {}
        self.sums_signed = False
        self.manifest: dict[str, Any] = {}
        self.listed: dict[str, Any] = {}
        self.records: list[Any] = []
        self.head: TreeHead | None = None
        self.head_ok = False
        self.proven: dict[int, dict[str, Any]] = {}
        self.proof_files: set[str] = set()
        self.anchors: list[Any] = []
        # record index -> (its anchor head's file, head time, token time)
        self.anchored: dict[int, tuple[str, datetime, datetime]] = {}

    # helpers
    def data(self, name: str) -> bytes | None:
        return self.members.get(name)

    def flag(self, bucket: list[str], name: str, problem: str) -> None:
        self.result._flag(bucket, name, problem)

    def run(self) -> VerifyResult:
        steps: list[tuple[str, Callable[[], None]]] = [
            ("members", self.check_members),
            ("key", self.check_key),
            ("signature", self.check_signature),
            ("manifest", self.check_manifest),
            ("tree_head", self.check_tree_head),
            ("timestamp", self.check_timestamp),
            ("records", self.check_records),
            ("anchors", self.check_anchors),
            ("files", self.check_files),
            ("times", self.check_times),
            ("warc", self.check_warc),
            ("verifier", self.check_verifier),
        ]
        for name, step in steps:
            before = len(self.result.problems)
            step()
            new = self.result.problems[before:]
            self.result.checks.append(Check(name, not new, "; ".join(new) or "ok"))
        for bucket in (
            self.result.altered,
            self.result.missing,
            self.result.unproven,
            self.result.unexpected,
            self.result.verified,
        ):
            bucket.sort()
        return self.result

    # 1. members against SHA256SUMS
    def check_members(self) -> None:
        r = self.result
        for name, data in self.members.items():
            if data is None:
                self.flag(r.altered, name, f"{name}: damaged inside the zip (its CRC fails)")
        sums = self.data(SUMS)
        if SUMS not in self.members:
            self.flag(r.missing, SUMS, f"{SUMS} is missing: no member can be checked")
            return
        if sums is None:
            return
        for line in sums.decode("utf-8", "replace").splitlines():
            m = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line)
            if m and m.group(2) not in self.sums:
                self.sums[m.group(2)] = m.group(1)
            elif line.strip():
                self.flag(r.altered, SUMS, f"{SUMS}: unreadable or repeated line {line!r}")
        for name, digest in self.sums.items():
            if name not in self.members:
                self.flag(r.missing, name, f"{name} is listed in {SUMS} but missing")
            elif (data := self.members[name]) is not None and _sha(data) != digest:
                self.flag(r.altered, name, f"{name}: its sha256 is not the one in {SUMS}")
        for name in self.members:
            if name not in self.sums and name not in (SUMS, SUMS_SIG):
                self.flag(r.unexpected, name, f"{name} is not listed in {SUMS}")

    # 2. whose key
    def check_key(self) -> None:
        r = self.result
        pem = self.data(PUBLIC_KEY)
        if pem is None:
            if PUBLIC_KEY not in self.members:
                self.flag(r.missing, PUBLIC_KEY, f"{PUBLIC_KEY} is missing")
            self.key = self.pinned
            return
        try:
            bundled = public_key_from_pem(pem, PUBLIC_KEY)
        except EvidenceKeyError as exc:
            self.flag(r.altered, PUBLIC_KEY, str(exc))
            self.key = self.pinned
            return
        r.key_id = key_id_of(bundled)
        if self.pinned_fingerprint is None:
            self.key = bundled  # unpinned: the summary says so
            return
        r.pinned_key_id = self.pinned_fingerprint
        if r.key_id != self.pinned_fingerprint:
            self.flag(
                r.altered,
                PUBLIC_KEY,
                f"{PUBLIC_KEY}: the bundle is signed by the key with fingerprint "
                f"{format_fingerprint(r.key_id)}, not by the pinned key "
                f"{format_fingerprint(self.pinned_fingerprint)}: it is not this log's bundle "
                "(or it was re-signed)",
            )
        # With only a fingerprint pinned, the bundled key is the pinned one iff it matches.
        self.key = self.pinned or (bundled if r.key_id == self.pinned_fingerprint else None)

    # 3. SHA256SUMS signed by the key
    def check_signature(self) -> None:
        r = self.result
        sums, sig = self.data(SUMS), self.data(SUMS_SIG)
        if SUMS_SIG not in self.members:
            self.flag(
                r.missing,
                SUMS_SIG,
                f"{SUMS_SIG} is missing: nothing ties the list of files to the log's key",
            )
            return
        if sums is None or sig is None or self.key is None:
            if self.key is None:
                r.problems.append(f"{SUMS_SIG}: no key to check it with")
            return
        try:
            self.key.verify(sig, sums)
            self.sums_signed = True
        except InvalidSignature:
            self.flag(
                r.altered,
                SUMS,
                f"{SUMS}: its signature {SUMS_SIG} does not verify with the "
                f"{'pinned' if self.pinned_fingerprint else 'bundled'} key: the list of files "
                "was rewritten after the bundle was made",
            )

    # 4. the manifest
    def check_manifest(self) -> None:
        r = self.result
        data = self.data(MANIFEST)
        if data is None:
            if MANIFEST not in self.members:
                self.flag(r.missing, MANIFEST, f"{MANIFEST} is missing: nothing can be checked")
            return
        try:
            manifest = parse_json_object(data, MANIFEST)
            fmt = manifest.get("format")
            if fmt in OLD_FORMATS:
                raise ValueError(
                    f"{fmt} bundles (made before issue #24) sign neither the verifier nor "
                    "VERIFY.txt; export the bundle again"
                )
            if fmt != BUNDLE_FORMAT:
                raise ValueError(f"not a {BUNDLE_FORMAT} manifest")
            self.listed, self.records = _manifest_lists(manifest)
            self.anchors = _anchor_list(manifest)
            self.manifest = manifest
        except (CanonicalError, KeyError, TypeError, ValueError) as exc:
            self.flag(r.altered, MANIFEST, f"{MANIFEST} cannot be read: {exc}")
            return
        for name, entry in self.listed.items():
            if name not in self.members:
                self.flag(r.missing, name, f"{name} is listed in the manifest but missing")
            elif self.sums.get(name) != entry.get("sha256"):
                self.flag(r.altered, name, f"{name}: the manifest and {SUMS} disagree on it")
        for name in self.sums:
            if name not in self.listed and name != MANIFEST:
                self.flag(r.unexpected, name, f"{name} is not listed in the manifest")

    # 5. the tree head
    def check_tree_head(self) -> None:
        r = self.result
        head_bytes, sig = self.data(TREEHEAD), self.data(SIGNATURE)
        for name in (TREEHEAD, SIGNATURE):
            if name not in self.members:
                self.flag(r.missing, name, f"{name} is missing: no record can be proven")
        if head_bytes is None or sig is None:
            return
        try:
            head = TreeHead.decode(head_bytes, TREEHEAD)
        except CanonicalError as exc:
            self.flag(r.altered, TREEHEAD, str(exc))
            return
        self.head = r.tree_head = head
        if self.key is not None and SignedTreeHead(head, sig).verify(self.key):
            self.head_ok = True
        else:
            self.flag(
                r.altered,
                TREEHEAD,
                f"{TREEHEAD}: the signature in {SIGNATURE} does not verify with the "
                f"{'pinned' if self.pinned_fingerprint else 'bundled'} key",
            )

    # 6. the timestamp token
    def check_timestamp(self) -> None:
        token, head_bytes = self.data(TOKEN), self.data(TREEHEAD)
        if token is None or head_bytes is None:
            return
        try:
            self.result.timestamp = verify_response(token, data=head_bytes, trusted=self.tsa_roots)
        except TokenError as exc:
            self.flag(
                self.result.altered, TOKEN, f"{TOKEN}: it does not vouch for {TREEHEAD}: {exc}"
            )

    # 7. inclusion proofs
    def check_records(self) -> None:
        r = self.result
        head = self.head
        for rec in self.records:
            index, log_name, proof_name = int(rec["leaf_index"]), rec["file"], rec["proof"]
            self.proof_files.add(proof_name)
            data, proof_data = self.data(log_name), self.data(proof_name)
            for name in (log_name, proof_name):
                if name not in self.members:
                    self.flag(r.missing, name, f"{name} is a record of the manifest but missing")
            if data is None or proof_data is None or head is None or not self.head_ok:
                if log_name in self.members and log_name not in r.altered:
                    self.flag(
                        r.unproven,
                        log_name,
                        f"{log_name}: cannot be proven without a valid tree head",
                    )
                continue
            try:
                proof = parse_json_object(proof_data, proof_name)
                path = hex_path(proof, "audit_path")
                fits = proof["leaf_index"] == index and proof["tree_size"] == head.size
                if fits and verify_inclusion(
                    leaf_hash(data), index, head.size, path, head.root_hash
                ):
                    self.proven[index] = parse_json_object(data, log_name)
                    r.records += 1
                    continue
            except (CanonicalError, KeyError, TypeError, ValueError):
                pass
            self.flag(
                r.unproven,
                log_name,
                f"{log_name}: its proof {proof_name} does not lead to the signed tree head",
            )

    # 7b. earlier timestamped heads, and the proof that the signed head extends each
    def check_anchors(self) -> None:
        r = self.result
        head = self.head
        for anchor in self.anchors:
            files = [anchor[k] for k in ("head", "signature", "timestamp", "consistency")]
            self.proof_files.update(files)
            for name in files:
                if name not in self.members:
                    self.flag(r.missing, name, f"{name} is an anchor of the manifest but missing")
            head_bytes, sig, token, cons = (self.data(n) for n in files)
            name = anchor["head"]
            if None in (head_bytes, sig, token, cons) or head is None or not self.head_ok:
                continue
            assert head_bytes is not None and sig is not None and token is not None
            assert cons is not None
            try:
                first = TreeHead.decode(head_bytes, name)
            except CanonicalError as exc:
                self.flag(r.altered, name, str(exc))
                continue
            if self.key is None or not SignedTreeHead(first, sig).verify(self.key):
                self.flag(r.altered, name, f"{name}: its signature {anchor['signature']} fails")
                continue
            try:
                info = verify_response(token, data=head_bytes, trusted=self.tsa_roots)
            except TokenError as exc:
                self.flag(
                    r.altered,
                    anchor["timestamp"],
                    f"{anchor['timestamp']}: it does not vouch for {name}: {exc}",
                )
                continue
            try:
                proof = parse_json_object(cons, anchor["consistency"])
                path = hex_path(proof, "proof")
            except (CanonicalError, KeyError, TypeError, ValueError):
                path = None
            if path is None or not verify_consistency(
                first.size, head.size, first.root_hash, head.root_hash, path
            ):
                self.flag(
                    r.altered,
                    anchor["consistency"],
                    f"{anchor['consistency']}: it does not show that the signed tree head "
                    f"extends {name}",
                )
                continue
            for index in anchor["records"]:
                if not isinstance(index, int) or not 0 <= index < first.size:
                    self.flag(r.altered, MANIFEST, f"{name} does not hold record {index!r}")
                    continue
                self.anchored[index] = (name, time_from_ms(first.timestamp_ms), info.gen_time)

    # 8. each file against the record naming it
    def check_files(self) -> None:
        r = self.result
        record_files = {rec.get("file") for rec in self.records}
        for name, data in self.members.items():
            if data is None or name in r.altered or name in (SUMS, SUMS_SIG):
                continue
            entry = self.listed.get(name)
            if name in SCAFFOLDING or name in self.proof_files:
                if (name in self.sums and self.sums_signed) or name == MANIFEST:
                    r.verified.append(name)
                continue
            if name.startswith("log/"):
                if name in record_files and name not in r.unproven:
                    r.verified.append(name)
                elif name not in r.unproven:
                    self.flag(r.unproven, name, f"{name} is not a record of the manifest")
                continue
            check = entry.get("proof") if entry else None
            if not check:
                if entry is not None and self.sums_signed:
                    r.verified.append(name)  # a report: covered by the signed SHA256SUMS
                elif entry is not None:
                    self.flag(
                        r.unproven,
                        name,
                        f"{name}: no log record names it and no valid signature covers it",
                    )
                continue
            index = check.get("leaf_index")
            named: Any = self.proven.get(index)
            if named is None:
                self.flag(
                    r.unproven, name, f"{name}: record {index}, which names it, is not proven"
                )
                continue
            for key in check.get("path", []):
                named = named.get(key) if isinstance(named, dict) else None
            if named != _sha(data):
                self.flag(
                    r.altered, name, f"{name}: its sha256 is not the one record {index} names"
                )
            else:
                r.verified.append(name)

        self.check_named_present()

    def check_named_present(self) -> None:
        """Every file a proven capture or submission names is in the bundle."""
        r = self.result
        present = {_sha(d) for d in self.members.values() if d is not None}
        for index, record in sorted(self.proven.items()):
            kind, payload = record.get("kind"), record.get("payload")
            if kind not in ("capture", "submission") or not isinstance(payload, dict):
                continue
            for field_name, info in payload.items():
                if field_name == "tls" or not isinstance(info, dict) or "sha256" not in info:
                    continue
                if info["sha256"] not in present:
                    name = f"{kind}/{index:08d}/{field_name}{_ext(str(info.get('media_type')))}"
                    listed = [
                        n
                        for n, m in self.listed.items()
                        if (m.get("proof") or {}).get("leaf_index") == index
                        and (m.get("proof") or {}).get("path") == ["payload", field_name, "sha256"]
                    ]
                    name = listed[0] if listed else name
                    self.flag(
                        r.missing, name, f"{name}: record {index} names it, the bundle lacks it"
                    )

    # 9. the timestamp chain: no record claims a time after its head's
    def check_times(self) -> None:
        head = self.head
        if head is None or not self.head_ok:
            return
        latest_time = time_from_ms(head.timestamp_ms)
        latest_token = self.result.timestamp.gen_time if self.result.timestamp else None
        for index in sorted(self.proven):
            name = f"log/{index:08d}.json"
            head_name, head_time, token_time = TREEHEAD, latest_time, latest_token
            if index in self.anchored:
                head_name, head_time, token_time = self.anchored[index]
            for what, text in record_times(self.proven[index]):
                try:
                    when = parse_time(text, f"{name} {what}")
                except CanonicalError as exc:
                    self.flag(self.result.altered, name, str(exc))
                    continue
                if when > head_time:
                    self.flag(
                        self.result.altered,
                        name,
                        f"{name}: its {what} {text} is after the time of the signed tree "
                        f"head {head_name} ({format_time(head_time)})",
                    )
                elif token_time is not None and when > token_time + MAX_CLOCK_SKEW:
                    self.flag(
                        self.result.altered,
                        name,
                        f"{name}: its {what} {text} is after the time the TSA vouches for "
                        f"the tree head {head_name} ({format_time(token_time)})",
                    )

    # 10. the WARC replays the captured bodies
    def check_warc(self) -> None:
        data = self.data(WARC)
        if data is None or WARC in self.result.altered:
            return
        from .warc import warc_payloads

        try:
            payloads = warc_payloads(data)
        except ValueError as exc:
            self.flag(self.result.altered, WARC, f"{WARC}: not a readable WARC file ({exc})")
            return
        for index, record in self.proven.items():
            if record.get("kind") != "capture":
                continue
            body = (record.get("payload") or {}).get("body") or {}
            if index not in payloads:
                self.flag(self.result.missing, WARC, f"{WARC}: no response for capture {index}")
            elif _sha(payloads[index]) != body.get("sha256"):
                self.flag(
                    self.result.altered,
                    WARC,
                    f"{WARC}: the response of capture {index} is not the body it names",
                )

    # 11. the verifier script and the instructions
    def check_verifier(self) -> None:
        r = self.result
        script = self.data(VERIFY_SCRIPT)
        if VERIFY_SCRIPT not in self.members:
            self.flag(r.missing, VERIFY_SCRIPT, f"{VERIFY_SCRIPT} is missing")
        elif script is not None and _sha(script) != verifier_sha256():
            message = (
                f"{VERIFY_SCRIPT}: sha256 {_sha(script)} is not the verifier this Yinji "
                f"publishes ({verifier_sha256()})"
            )
            if self.sums_signed:
                r.notes.append(message + "; it is signed with the bundle (another version?)")
            else:
                self.flag(r.altered, VERIFY_SCRIPT, message + ": do not run it")
        text = self.data(INSTRUCTIONS)
        if INSTRUCTIONS not in self.members:
            self.flag(r.missing, INSTRUCTIONS, f"{INSTRUCTIONS} is missing")
        elif text is not None and self.head is not None and self.manifest:
            expected = instructions(
                self.manifest.get("suspect_id"),
                self.manifest.get("mother_id"),
                self.head,
                self.records,
                TOKEN in self.members,
                self.anchors,
            )
            if text != expected:
                message = f"{INSTRUCTIONS}: its text is not the instructions Yinji writes"
                if self.sums_signed:
                    r.notes.append(message + "; it is signed with the bundle (another version?)")
                else:
                    self.flag(r.altered, INSTRUCTIONS, message + " for this bundle")


def _manifest_lists(manifest: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """The manifest's members (by name) and records, after checking their shapes."""
    members, records = manifest.get("members"), manifest.get("records")
    if not isinstance(members, list) or not isinstance(records, list):
        raise ValueError("members and records must be lists")
    listed: dict[str, Any] = {}
    for m in members:
        ok = isinstance(m, dict) and isinstance(m.get("name"), str)
        ok = ok and isinstance(m.get("sha256"), str) and isinstance(m.get("size"), int)
        proof = m.get("proof") if isinstance(m, dict) else None
        if proof is not None:
            ok = ok and isinstance(proof, dict) and isinstance(proof.get("leaf_index"), int)
            path = proof.get("path") if isinstance(proof, dict) else None
            ok = ok and isinstance(path, list) and all(isinstance(k, str) for k in path)
        if not ok or m["name"] in listed:
            raise ValueError(f"a malformed member entry {m!r}")
        listed[m["name"]] = m
    for r in records:
        ok = isinstance(r, dict) and isinstance(r.get("leaf_index"), int)
        if not ok or not isinstance(r.get("file"), str) or not isinstance(r.get("proof"), str):
            raise ValueError(f"a malformed record entry {r!r}")
    return listed, records


def _anchor_list(manifest: dict[str, Any]) -> list[Any]:
    anchors = manifest.get("anchors", [])
    if not isinstance(anchors, list):
        raise ValueError("anchors must be a list")
    keys = ("head", "signature", "timestamp", "consistency")
    for a in anchors:
        ok = isinstance(a, dict) and all(isinstance(a.get(k), str) for k in keys)
        if not ok or not isinstance(a.get("records"), list):
            raise ValueError(f"a malformed anchor entry {a!r}")
    return anchors


def verify_bundle(
    source: str | Path | IO[bytes],
    *,
    public_key: bytes | None = None,
    fingerprint: str | None = None,
    tsa_roots: Sequence[x509.Certificate] = (),
    limits: Limits | None = None,
) -> VerifyResult:
    """Check a bundle (see the module docstring). Pin the log's key with ``public_key``
    (PEM, as the rights holder published it) or ``fingerprint`` (its 64 hex digits);
    without either the bundled key is used and ``result.pinned`` is False.
    ``tsa_roots``: trusted TSA roots. ``BundleError`` for an archive that cannot or
    must not be read; ``EvidenceKeyError`` for a pin that is not a key."""
    pinned: Ed25519PublicKey | None = None
    pinned_fp: str | None = None
    if public_key is not None:
        pinned = public_key_from_pem(public_key, "the pinned public key")
        pinned_fp = key_id_of(pinned)
        if fingerprint is not None and parse_fingerprint(fingerprint) != pinned_fp:
            raise EvidenceKeyError("the pinned key and the pinned fingerprint disagree")
    elif fingerprint is not None:
        pinned_fp = parse_fingerprint(fingerprint, "the pinned fingerprint")
    members, _label = read_bundle(source, limits or Limits())
    return _Verifier(members, pinned, pinned_fp, tsa_roots).run()
