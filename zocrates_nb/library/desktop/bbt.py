"""Better BibTeX's citation keys, read from its own database beside zotero.sqlite.

Writers who use Better BibTeX cite ``[@key]`` with the keys it keeps in ``better-bibtex.sqlite``
(table ``citationkey``: ``itemKey``, ``libraryID``, ``citationKey``); an export that invented other
keys would break their manuscripts. Read-only, and optional: no file or an unreadable one means
generated keys, with a warning in the log, never a failed sync.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

__all__ = ["better_bibtex_keys"]

log = logging.getLogger(__name__)


def better_bibtex_keys(zotero_sqlite: Path, library_id: int | None) -> dict[str, str]:
    """Zotero item key -> Better BibTeX citation key for one library (every library when ``library_id`` is None)."""
    path = Path(zotero_sqlite).parent / "better-bibtex.sqlite"
    if not path.is_file():
        return {}
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            sql = "SELECT itemKey, citationKey FROM citationkey"
            rows = conn.execute(sql + " WHERE libraryID = ?", (library_id,)) if library_id else conn.execute(sql)
            return {str(item): str(key) for item, key in rows if item and key}
        finally:
            conn.close()
    except sqlite3.Error as exc:  # Better BibTeX writing, or an older layout: keys are generated instead
        log.warning("Better BibTeX's keys in %s could not be read (%s); export generates citation keys", path, exc)
        return {}
