"""The data folder is private: created mode 700, its files 600.

It holds the works (``yinji.sqlite3``, with the users' password hashes), the cases with
rights holders' details (``cases.sqlite3``), the evidence log (``evidence.sqlite3``),
the index (``redis.db``), uploads and snapshots: nobody but the account running Yinji
has to read them. Two layers, so that neither a forgotten call nor a library used
without the CLI leaves a file readable by others:

- ``private_umask()``: the process's umask becomes 077 (the CLI, ``yinji serve`` and
  ``yinji worker`` set it first thing), so every file and folder any code or child
  process creates (Redis' ``redis.db`` rewritten at each save, sqlite's ``-wal`` and
  ``-shm``, spooled uploads, evidence blobs) is 600 / 700;
- at creation, whatever the umask: ``private_dir`` creates a folder 700, and
  ``private_file`` creates a sqlite file 600 before sqlite opens it, or takes the
  group and other bits off one found readable (an installation made before this rule;
  only a file this account owns). An existing data folder is left as it is: it may be
  a folder the user chose (``--data-dir .``). ``embedded_server_umask`` starts the
  embedded Redis server with umask 077, so its saves are 600 too.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

PRIVATE_UMASK = 0o077
DIR_MODE = 0o700
FILE_MODE = 0o600
_umask_lock = threading.Lock()


def private_umask() -> int:
    """Set the process's umask to 077 (group and others get nothing); the old one."""
    return os.umask(PRIVATE_UMASK)


def private_dir(path: str | os.PathLike[str]) -> Path:
    """``path`` created mode 700 (its missing parents too) when missing; an existing
    folder is left as it is."""
    folder = Path(path)
    if not folder.is_dir():
        missing = []
        p = folder
        while not p.exists() and p != p.parent:
            missing.append(p)
            p = p.parent
        folder.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        for created in missing:  # mkdir's mode is masked by the umask: set it
            with contextlib.suppress(OSError):
                os.chmod(created, DIR_MODE)
    return folder


def private_file(path: str | os.PathLike[str], *, create: bool = True) -> None:
    """Make ``path`` a file only its owner reads: created empty with mode 600 when
    missing and ``create`` (an empty file is an empty sqlite database; not so for
    ``redis.db``), the group and other bits taken off when it exists, is ours and has
    them. Never raises: a read-only folder or a file of another account is the
    opener's business."""
    p = Path(path)
    if not create and not p.exists():
        return
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        with contextlib.suppress(OSError):
            st = os.stat(p)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077:
                os.chmod(p, stat.S_IMODE(st.st_mode) & ~0o077)
        return
    except OSError:
        return
    os.close(fd)


@contextlib.contextmanager
def embedded_server_umask() -> Iterator[None]:
    """Umask 077 while a child process (the embedded Redis server) is started: it keeps
    it for the files it writes later. Restored afterwards."""
    with _umask_lock:
        old = os.umask(PRIVATE_UMASK)
        try:
            yield
        finally:
            os.umask(old)
