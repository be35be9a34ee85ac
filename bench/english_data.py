"""The English books of the English evaluation (``bench/eval_english.py``): where each
text comes from, and how to lay them out in a data folder.

Usage: python bench/english_data.py [--mirror /work/.mirror] [--out DIR] [--check]

Every text is a Project Gutenberg e-text kept in a public GitHub repository; ``SOURCES``
pins each one by repository, path, commit and the SHA-256 of the file as committed. The
texts (about 17 MB) are not kept in this repository: this script copies them out of local
snapshots of those repositories (``git show COMMIT:PATH`` in
``<mirror>/<owner>+<name>/repo``, the layout of the workplace's repository snapshots;
``--mirror`` or ``$YINJI_MIRROR``) into the data folder (``--out``, else
``$YINJI_EN_DATA``, else ``bench/data/english/``, which git ignores), checks every
checksum, and writes ``manifest.json``. A missing snapshot is named with the repository
to fetch; a file whose checksum differs is refused, naming it.

What is changed in a text, and nothing else: bytes decoded as UTF-8 (a byte-order mark
dropped), or as Windows-1252 when they are not UTF-8 (one file, Mansfield Park, has a
Latin-1 pound sign); CRLF line ends made LF; where a file still carries the Project
Gutenberg header and licence (A Tale of Two Cities' second edition, Moby-Dick), only the
text between the ``*** START OF`` and ``*** END OF`` lines is kept — the licence is the
same in every e-text and would be text shared by unrelated books. The other files were
committed without them.

Roles: ``library`` (the books the harness puts in Yinji's library), ``edition`` (an
independent Gutenberg edition or transcription of a library book: ``edition_of``),
``negative`` (other books by the same authors, of the same period, never in the library)
and ``host`` (books by other authors, never in the library, into which excerpts are
planted).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "data" / "english"
DEFAULT_MIRROR = Path("/work/.mirror")


@dataclass(frozen=True)
class Source:
    id: str
    title: str
    author: str
    role: str  # library | edition | negative | host
    repo: str
    path: str
    commit: str
    sha256: str
    edition_of: str = ""


_NEIL = ("NeilNjae/gender-roles-text-analysis", "d7ea1aa50da1bc5332ca69c7d8fc18955f127c9c")
_CLOC = ("clocasto/HaikuGenerator", "936af28fdf47e9a50abf52183a04959df01daf17")
_NIKK = ("nikkolaka/HMM-Text-Generation", "32aa82dc84cc19c64c70f7b64d01d9cbe946bb39")


def _s(
    id: str, title: str, author: str, role: str, where: tuple[str, str], path: str, sha: str
) -> Source:
    return Source(id, title, author, role, where[0], path, where[1], sha)


SOURCES: tuple[Source, ...] = (
    # The library.
    _s("austen-pride", "Pride and Prejudice", "Jane Austen", "library", _NEIL, "1342.txt",
       "03f51aa32269d4360b2b00b4ae9f56d5437a69c3d6cd4f013f79b3747cb9e045"),
    _s("austen-emma", "Emma", "Jane Austen", "library", _NEIL, "158-0.txt",
       "0772d17c8d5bf79d78f7c4883eac4519fc09e84df798b2a3732a4be064cef177"),
    _s("austen-sense", "Sense and Sensibility", "Jane Austen", "library", _NEIL, "161.txt",
       "804b760167a0cb918cc9a89bea485dc33ab892e4595909e9903cc5db421b8f3d"),
    _s("dickens-tale", "A Tale of Two Cities", "Charles Dickens", "library", _CLOC, "pg98.txt",
       "5d1ba49aa66841d2ef97f50f6ff172052fb8de4c442335c03dcce5c44de30419"),
    _s("dickens-expectations", "Great Expectations", "Charles Dickens", "library", _NEIL,
       "1400-0.txt", "3c7e6446c53ff98da8254f08e99ab8ad564b0900c7173a3f4dbb00abaa845c0a"),
    Source("dickens-oliver", "Oliver Twist", "Charles Dickens", "library", "gutenbergbooks/730",
           "730-0.txt", "032dbf63ed9fefb297d2a06772255b69ef7ce1af",
           "ed6843e69f29aee6606a1fcdeae401d9c6131b2a7f308b912ffa789dbdcc30f5"),
    Source("doyle-adventures", "The Adventures of Sherlock Holmes", "Arthur Conan Doyle",
           "library", "gutenbergbooks/1661", "1661-0.txt",
           "4583fe51c670727bf1edf51b41e7b67b7736224a",
           "e21895308fe6da6919abc53e2cf77d81f914887897546153cc5d49b2eadefe50"),
    _s("doyle-hound", "The Hound of the Baskervilles", "Arthur Conan Doyle", "library", _NIKK,
       "houn.txt", "c7f47eed7ba42105c508d007599c6b4ad5705bc054b96aa8c6b4f5d0ee8e3f8d"),
    # Independent editions of three library books.
    Source("austen-pride-1894", "Pride and Prejudice (George Allen 1894 edition)",
           "Jane Austen", "edition", "gutenbergbooks/1342", "1342-0.txt",
           "041e520899f9a02af517d6cb253bc1fdfbf923e2",
           "86dab871eec9c0cef97f4cb6313f86c6cc48f6f7809534e65cd3f1c1d486d247", "austen-pride"),
    Source("dickens-tale-2009", "A Tale of Two Cities (2009 posting, one line a paragraph)",
           "Charles Dickens", "edition", "JiongRanWang/Project", "98-0.txt",
           "31ae79dcc1a1078e95178c4245e68c3bd255787f",
           "e9b4495c7adb574559fa13d0c5459a4c8bfe26b0e60a0091c6df927c0f4a80e5", "dickens-tale"),
    Source("doyle-adventures-old", "The Adventures of Sherlock Holmes (older transcription)",
           "Arthur Conan Doyle", "edition", _CLOC[0], "pg1661.txt", _CLOC[1],
           "67475446cbaa516d8cd21d5569438c2c5450f763b7d5d17173cd3089c0cfc02d",
           "doyle-adventures"),
    # Negatives: the same authors, the same period, never in the library.
    _s("austen-persuasion", "Persuasion", "Jane Austen", "negative", _NEIL, "105.txt",
       "48992a1dfad201bb6486445e88558b78b96e2e7d14072f69abe412723fce1bd1"),
    _s("austen-northanger", "Northanger Abbey", "Jane Austen", "negative", _NEIL, "121.txt",
       "daa472fe40fc0df606fa46ac8d812789b77a37891bdf37e93f9a0e3adea35c10"),
    _s("austen-mansfield", "Mansfield Park", "Jane Austen", "negative", _NEIL, "141.txt",
       "c81daaba261ee1d6c776414393760915d78601410a34e518405be3f4969150aa"),
    _s("dickens-drood", "The Mystery of Edwin Drood", "Charles Dickens", "negative", _NEIL,
       "564-0.txt", "953dc1721622f8c53a8cc32c7bfde121de054132704015e5d6e51c568a092dc9"),
    _s("dickens-copperfield", "David Copperfield", "Charles Dickens", "negative", _NEIL,
       "766-0.txt", "91b1a66d366c0a2629fe7f780a1c6b09c322032a9077f0659bef000d8cdda62e"),
    _s("dickens-hardtimes", "Hard Times", "Charles Dickens", "negative", _NEIL, "786-0.txt",
       "b8b39f80fe25a41e80828c2f4899e11423a013e9af6b9a86b4c64a3d87603e59"),
    _s("doyle-sign", "The Sign of the Four", "Arthur Conan Doyle", "negative", _NIKK,
       "sign.txt", "5f4147a90b6d62a97ceb19289b7ed45db372a8537dd056d1dde6762fb4b50232"),
    _s("doyle-study", "A Study in Scarlet", "Arthur Conan Doyle", "negative", _NIKK,
       "stud.txt", "c0cef4eeb49c719ac9c9f1e74d877b391ba7bc96c903af750c0436a7e7aa0a13"),
    _s("doyle-valley", "The Valley of Fear", "Arthur Conan Doyle", "negative", _NIKK,
       "vall.txt", "fc7764838a004384fc45b1df525baeaf0eb682da53b01863ee9d244ea73c02ed"),
    # Hosts: other authors, never in the library.
    _s("stoker-dracula", "Dracula", "Bram Stoker", "host", _CLOC, "pg345.txt",
       "e9a145c513b63acde80fbf65458431c22419b9302df21f43ff811d754699c3fe"),
    _s("wilde-dorian", "The Picture of Dorian Gray", "Oscar Wilde", "host", _CLOC,
       "pg174.txt", "0b2e2444e0d6cb698528cf69c4e876cfddd307afea798706e27556d3f1f59011"),
    _s("melville-moby", "Moby-Dick", "Herman Melville", "host", _CLOC, "pg2701.txt",
       "2975c3faf22ded4b19716486bdee4e24999f6ee9dc36c227ab624faaf154af14"),
    _s("bronte-eyre", "Jane Eyre", "Charlotte Brontë", "host", _NEIL, "pg1260.txt",
       "9740b64d329662dd24b6d0c8b3a2062236953e5332757833674aaecdd225111b"),
    _s("eliot-marner", "Silas Marner", "George Eliot", "host", _NEIL, "pg550.txt",
       "d6ff62fd8c1050e1fec1dd8f04331ea0a3959c8c595a1d9a4adcf2ebfb974235"),
)  # fmt: skip

ROLES = ("library", "edition", "negative", "host")


def data_dir(out: str | None = None) -> Path:
    """The data folder: ``out``, else ``$YINJI_EN_DATA``, else ``bench/data/english``."""
    return Path(out or os.environ.get("YINJI_EN_DATA") or DEFAULT_OUT)


def decode(raw: bytes) -> str:
    """UTF-8 (BOM dropped), else Windows-1252; CRLF made LF; the Gutenberg header and
    licence cut where the file still has its START/END lines."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    start = re.search(r"^\*\*\* ?START OF[^\n]*\n", text, re.M)
    end = re.search(r"^\*\*\* ?END OF", text, re.M)
    if start and end and start.end() < end.start():
        text = text[start.end() : end.start()]
        # "End of the Project Gutenberg EBook of ..." just before the END line.
        text = re.sub(r"\n[^\n]*End of (the )?Project Gutenberg[^\n]*\s*$", "\n", text)
    elif end:
        text = text[: end.start()]
        text = re.sub(r"\n[^\n]*End of (the )?Project Gutenberg[^\n]*\s*$", "\n", text)
    return text.strip("\n") + "\n"


def snapshot(mirror: Path, repo: str) -> Path:
    return mirror / repo.replace("/", "+") / "repo"


def read_source(mirror: Path, src: Source) -> bytes:
    """The file as committed, checked against its checksum."""
    git_dir = snapshot(mirror, src.repo)
    if not git_dir.exists():
        raise SystemExit(
            f"{src.id}: no snapshot of {src.repo} at {git_dir} "
            f"(fetch github:{src.repo} first, or pass --mirror)"
        )
    done = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{src.commit}:{src.path}"],
        capture_output=True,
        check=False,
    )
    if done.returncode:
        raise SystemExit(
            f"{src.id}: {src.repo} has no {src.path} at {src.commit}: "
            + done.stderr.decode(errors="replace").strip()
        )
    digest = hashlib.sha256(done.stdout).hexdigest()
    if digest != src.sha256:
        raise SystemExit(f"{src.id}: {src.repo}/{src.path} has SHA-256 {digest}, not {src.sha256}")
    return done.stdout


def assemble(mirror: Path, out: Path) -> list[dict[str, object]]:
    """Write every text as ``<id>.txt`` and ``manifest.json`` into ``out``."""
    missing = sorted({s.repo for s in SOURCES if not snapshot(mirror, s.repo).exists()})
    if missing:
        raise SystemExit(
            f"no snapshot in {mirror} of: {', '.join(missing)} "
            f"(fetch {' '.join('github:' + r for r in missing)} first, or pass --mirror)"
        )
    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for src in SOURCES:
        text = decode(read_source(mirror, src))
        (out / f"{src.id}.txt").write_text(text, encoding="utf-8")
        manifest.append({**asdict(src), "chars": len(text)})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def load(folder: Path) -> dict[str, tuple[Source, str]]:
    """The assembled texts by id, with their sources; a clear error when the folder is
    not assembled (or not from this list)."""
    manifest = folder / "manifest.json"
    if not manifest.exists():
        raise SystemExit(
            f"no English data at {folder} (run: python bench/english_data.py --out {folder})"
        )
    listed = {row["id"]: row for row in json.loads(manifest.read_text(encoding="utf-8"))}
    out = {}
    for src in SOURCES:
        row = listed.get(src.id)
        if row is None or row["sha256"] != src.sha256:
            raise SystemExit(
                f"{folder}: {src.id} missing or from another file; "
                f"re-run python bench/english_data.py --out {folder}"
            )
        out[src.id] = (src, (folder / f"{src.id}.txt").read_text(encoding="utf-8"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", default=os.environ.get("YINJI_MIRROR", str(DEFAULT_MIRROR)))
    ap.add_argument("--out", default=None, help="data folder (default $YINJI_EN_DATA or "
                    "bench/data/english)")  # fmt: skip
    ap.add_argument("--check", action="store_true", help="only load the folder and list it")
    args = ap.parse_args()
    out = data_dir(args.out)
    if not args.check:
        assemble(Path(args.mirror), out)
    texts = load(out)
    for role in ROLES:
        rows = [(s, t) for s, t in texts.values() if s.role == role]
        total = sum(len(t) for _, t in rows)
        print(f"{role}: {len(rows)} texts, {total:,} characters", file=sys.stderr)
        for s, t in rows:
            print(f"  {s.id:24} {len(t):>9,}  {s.title} ({s.repo}/{s.path})", file=sys.stderr)
    print(out)


if __name__ == "__main__":
    main()
