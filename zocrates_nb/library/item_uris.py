"""Where a library's items live in Zotero's URI space: ``http://zotero.org/users/<id>`` and friends.

A Zotero citation names its item by URI (``chrome/content/zotero/xpcom/uri.js``): a synced user
library is ``http://zotero.org/users/<userID>``, a group library ``http://zotero.org/groups/<groupID>``,
and a library never synced ``http://zotero.org/users/local/<localUserKey>`` (from the desktop
database's ``settings``). Saved notes cite with these, so Zotero links each citation to its item.
The demo library is not in Zotero; its notes cite under ``users/local/zocrates-demo``, which keeps
the citations well-formed (Zotero and Word still read the embedded item data).
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

from zocrates_nb.library.desktop.detect import zotero_account
from zocrates_nb.library.pending import PendingOverlay

__all__ = ["DEMO_LIBRARY_URI", "item_uri", "library_uri"]

ZOTERO = "http://zotero.org"
DEMO_LIBRARY_URI = f"{ZOTERO}/users/local/zocrates-demo"
_log = logging.getLogger(__name__)


def library_uri(source: Any) -> str:
    """The URI prefix of ``source``'s items (no trailing slash)."""
    inner = source.source if isinstance(source, PendingOverlay) else source
    module = type(inner).__module__
    if module.startswith("zocrates_nb.library.web."):
        if getattr(inner, "library_type", "user") == "group":
            return f"{ZOTERO}/groups/{inner.library_id}"
        if str(getattr(inner, "library_id", "0")) not in ("", "0"):
            return f"{ZOTERO}/users/{inner.library_id}"
        return f"{ZOTERO}/users/local/zotero-local-api"  # the local API names no account
    if module.startswith("zocrates_nb.library.desktop."):
        return _desktop_uri(inner)
    return DEMO_LIBRARY_URI


def item_uri(base: str, key: str) -> str:
    return f"{base}/items/{key}"


def _desktop_uri(source: Any) -> str:
    try:
        account = zotero_account(source.sqlite_path)
    except (OSError, sqlite3.Error) as exc:
        _log.warning("cannot read the Zotero account of %s (%s); citations use a local URI", source.sqlite_path, exc)
        return f"{ZOTERO}/users/local/unknown"
    group = (account.get("groups") or {}).get(getattr(source, "library_id", None))
    if group:
        return f"{ZOTERO}/groups/{group}"
    if str(account.get("user_id") or "").isdigit():
        return f"{ZOTERO}/users/{account['user_id']}"
    return f"{ZOTERO}/users/local/{account.get('local_user_key') or 'unknown'}"
