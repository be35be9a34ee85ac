"""The files of the embedded default, all under one data folder (``DataFiles``): the
one place their names are written (the settings, the factories and the tests read
them here)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from tracker.plumbing.datadir import private_dir

from .base import StoreError


class StorageSettings(Protocol):
    """What the storage factories read of the settings (``tracker.plumbing.config.Settings`` is
    one): storage imports no settings module, the settings import storage."""

    @property
    def data_dir(self) -> Path: ...

    @property
    def mongo_uri(self) -> str | None: ...

    @property
    def mongo_db(self) -> str: ...


@dataclass(frozen=True)
class DataFiles:
    """The files of the embedded default, all under one data folder."""

    data_dir: Path

    @property
    def store(self) -> Path:
        """Mothers, fingerprints, suspects, matches, users, watch list."""
        return self.data_dir / "yinji.sqlite3"

    @property
    def cases(self) -> Path:
        return self.data_dir / "cases.sqlite3"

    @property
    def case_blobs(self) -> Path:
        return self.data_dir / "cases" / "blobs"

    @property
    def evidence(self) -> Path:
        """The evidence log's folder (``evidence.sqlite3``, ``evidence/blobs``, the
        signing key): the data folder itself."""
        return self.data_dir

    def make_folder(self) -> None:
        """Create the data folder, or ``StoreError`` saying how to choose another."""
        try:
            private_dir(self.data_dir)  # mode 700 (tracker.plumbing.datadir)
        except OSError as exc:
            raise StoreError(
                f"cannot create the data folder {self.data_dir} ({exc.strerror or exc}): "
                "create it, or choose another with --data-dir or YINJI_DATA_DIR"
            ) from None
