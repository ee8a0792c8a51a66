"""Where zocrates_nb keeps its files.

Resolution order for the data directory (first match wins):

1. an explicit ``data_dir`` (``--data-dir DIR`` on the CLI);
2. ``<zotero-data-dir>/zocrates-data`` when a Zotero data directory is given
   (argument, or the ``ZOTERO_DATA_DIR`` environment variable);
3. ``ZOCRATES_HOME``;
4. the platform's per-user data directory (``platformdirs.user_data_dir``).

Everything the workbench writes lives below that one directory, so two data
directories never interfere and deleting one resets everything.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP_NAME = "zocrates_nb"


def resolve_data_dir(
    data_dir: str | os.PathLike | None = None, zotero_data_dir: str | os.PathLike | None = None
) -> Path:
    """Return the data directory, following the documented resolution order."""
    if data_dir:
        return Path(data_dir).expanduser().resolve()
    zotero_dir = zotero_data_dir or os.environ.get("ZOTERO_DATA_DIR")
    if zotero_dir:
        return (Path(zotero_dir).expanduser() / "zocrates-data").resolve()
    home = os.environ.get("ZOCRATES_HOME")
    if home:
        return Path(home).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)).resolve()


def model_cache_dir() -> Path:
    """Where the ONNX embedding model is built once per machine (``ZOCRATES_MODEL_DIR`` overrides)."""
    override = os.environ.get("ZOCRATES_MODEL_DIR")
    if override:
        return Path(override).expanduser().resolve()
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)) / "models"


@dataclass(frozen=True)
class DataPaths:
    """The layout of one data directory (documented in the README).

    ``unwritable``: why this process opened the directory for reading only (``"read-only"``: a
    read-only mount or no permission; ``"full"``: no space left), None when it may write. The
    stores read it to open read-only (no schema, no WAL, no locks) and the write verbs to refuse
    with a true hint instead of failing half-way (the wiring decides it: workbench/core.py).
    """

    root: Path
    unwritable: str | None = None

    @classmethod
    def resolve(cls, data_dir=None, zotero_data_dir=None) -> DataPaths:
        return cls(resolve_data_dir(data_dir, zotero_data_dir))

    @property
    def config(self) -> Path:
        return self.root / "zocrates_config.json"

    @property
    def config_lock(self) -> Path:
        return self.root / "zocrates_config.json.lock"

    @property
    def secrets(self) -> Path:
        return self.root / "secrets.json"

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def meta_db(self) -> Path:
        """conversion_meta.db: key → source hash, plus the FTS5 index (one file, one transaction)."""
        return self.root / "conversion_meta.db"

    @property
    def chroma(self) -> Path:
        return self.root / "chroma"

    @property
    def diagnostics(self) -> Path:
        return self.root / "diagnostics"

    @property
    def demo_library(self) -> Path:
        return self.root / "demo_library.sqlite"

    @property
    def web_cache(self) -> Path:
        return self.root / "zotero_web_cache.sqlite"

    @property
    def pdf_text(self) -> Path:
        """Per-page text extracted from PDF attachments, by attachment and file stamp (library/pdf_text.py)."""
        return self.root / "pdf_text.sqlite"

    @property
    def eval_cache(self) -> Path:
        return self.root / "eval"

    @property
    def locks(self) -> Path:
        return self.root / "locks"

    def ensure(self) -> DataPaths:
        if self.unwritable:
            return self  # reading only: nothing is created
        for d in (self.root, self.corpus, self.diagnostics, self.locks):
            d.mkdir(parents=True, exist_ok=True)
        return self
