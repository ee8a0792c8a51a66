"""Setting up the user's Zotero from an entry point: finding data directories and checking a note writer.

Why here: the CLI (an entry point) must not import ``library/`` (import-linter's "workbench.py is the
only wiring" contract); like ``saving.py`` this module sits beside the wiring and hands the entry points
plain values. The commands that print them live in ``cli/zotero.py``.
"""

from __future__ import annotations

from typing import Any

from zocrates_nb.errors import LibraryError
from zocrates_nb.library.desktop.detect import DetectedLibrary, desktop_account, detect
from zocrates_nb.library.web.source import authorize_local_key
from zocrates_nb.library.writing.choice import store_local_key
from zocrates_nb.library.writing.note_writers import WEB_API, check_web_key, key_info
from zocrates_nb.paths import DataPaths

__all__ = ["authorize_local_writer", "detect_libraries", "web_writer"]


def detect_libraries() -> list[DetectedLibrary]:
    """Zotero data directories found on this computer (Zotero's profiles, ~/Zotero)."""
    return list(detect())


def web_writer(
    key: str, *, base_url: str | None, library_id: str | None, library_type: str, library: dict[str, Any]
) -> tuple[str, str]:
    """(library_type, library_id) the zotero.org ``key`` may write notes to; raises ``LibraryError`` if none.

    A desktop group library makes the writer a group one; without ``library_id`` a user key writes to
    its own user library.
    """
    info = key_info(base_url or WEB_API, key)
    desktop, user_id, group_id = desktop_account(library)
    library_type = "group" if group_id and not library_id else library_type  # a desktop group library
    library_id = library_id or (str(group_id) if group_id else str(info.user_id) if library_type == "user" else None)
    if not library_id:
        raise LibraryError("A group library needs --library-id.", "The group's id is in its zotero.org URL.")
    check_web_key(
        info,
        library_type=library_type,
        library_id=library_id,
        desktop_user_id=user_id,
        desktop=desktop and library_type == "user",
    )
    return library_type, str(library_id)


def authorize_local_writer(paths: DataPaths, base_url: str | None) -> dict[str, Any]:
    """Ask Zotero 10's local API for a write key (the user clicks Allow) and store it (mode 0600)."""
    granted: dict[str, Any] = authorize_local_key(base_url, "zocrates-nb")
    store_local_key(paths, granted["key"])
    return granted
