"""Find the user's Zotero data directories the way Zotero does, and describe each one.

Zotero 5+ keeps its data directory in the profile's ``prefs.js``
(``user_pref("extensions.zotero.dataDir", "…")`` with ``useDataDir`` true), else uses
``~/Zotero``. Profiles live under one root per platform; ``ZOCRATES_ZOTERO_PROFILE_ROOTS``
(``os.pathsep``-separated) and ``HOME`` override them, so tests point them at a tmp dir.

Each found directory is described from a *copy* of its ``zotero.sqlite`` (Zotero holds
an exclusive lock while it runs): schema version, ``client.lastVersion``, counts, and the
``account.userID`` it syncs with. ``running``/``local_api`` probe 127.0.0.1:23119 with a
short timeout: never hang.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LOCAL_PORT = 23119
#: one pref line; the value is a whole JavaScript string literal (a ``);`` inside a path cannot end it)
_PREF_RE = re.compile(
    r'user_pref\(\s*"extensions\.zotero\.(dataDir|useDataDir|baseAttachmentPath)"\s*,\s*'
    r'("(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|true|false)\s*\)\s*;',
    re.S,
)
_JS_ESCAPE_RE = re.compile(r"\\(u\{[0-9a-fA-F]{1,6}\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)", re.S)
_JS_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


@dataclass(frozen=True)
class DetectedLibrary:
    path: str
    how_found: str
    userdata_schema: int | None
    zotero_version: str | None
    items: int
    notes: int
    collections: int
    user_id: int | None
    running: bool
    local_api: bool

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def offer(self) -> str:
        """The one-line offer the notebook and the ChatPanel show."""
        return f"Use my Zotero library ({self.items:,} items, {self.notes:,} notes)"


def profile_roots(home: Path | None = None) -> list[Path]:
    """Where Zotero keeps its profiles on this platform (overridable for tests)."""
    override = os.environ.get("ZOCRATES_ZOTERO_PROFILE_ROOTS")
    if override is not None:
        return [Path(p) for p in override.split(os.pathsep) if p]
    home = home or Path.home()
    if sys.platform == "darwin":
        return [home / "Library" / "Application Support" / "Zotero" / "Profiles"]
    if sys.platform.startswith("win"):
        appdata = Path(os.environ.get("APPDATA", home / "AppData" / "Roaming"))
        return [appdata / "Zotero" / "Zotero" / "Profiles"]
    return [home / ".zotero" / "zotero", home / ".var" / "app" / "org.zotero.Zotero" / ".zotero" / "zotero"]


def js_string_value(literal: str) -> str:
    """The text of a JavaScript string literal as Firefox/Zotero write it into ``prefs.js`` (pure).

    Why not ``unicode_escape``: that codec reads the UTF-8 bytes of ``/home/josé`` as Latin-1
    (``josÃ©``), so a non-ASCII data directory was silently not found. The file is UTF-8 text;
    only backslash escapes need decoding. A double-quoted literal is JSON in practice
    (``\\\\``, ``\\"``, ``\\n``, ``\\uXXXX`` with surrogate pairs); what JSON refuses (single
    quotes, ``\\xXX``, ``\\'``, ``\\u{…}``) is decoded by the same rules Firefox's pref parser uses.
    """
    if len(literal) < 2 or literal[0] not in "\"'" or literal[-1] != literal[0]:
        return literal
    decoded = None
    if literal[0] == '"':
        try:
            decoded = json.loads(literal)
        except ValueError:
            decoded = None
    if not isinstance(decoded, str):
        decoded = _JS_ESCAPE_RE.sub(_js_escape, literal[1:-1])
    # "\\uD83D\\uDE00" may leave two surrogates: pair them; a lone one (no file name can hold it) → U+FFFD
    return decoded.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _js_escape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code.startswith("u{"):
        return chr(min(int(code[2:-1], 16), 0x10FFFF))
    if len(code) > 1:  # uXXXX or xXX
        return chr(int(code[1:], 16))
    return _JS_SIMPLE_ESCAPES.get(code, "" if code == "\n" else code)  # \\<newline> continues the line


def parse_prefs(text: str) -> Path | None:
    """The data directory a ``prefs.js`` names, when ``useDataDir`` is true (pure)."""
    prefs = {name: value for name, value in _PREF_RE.findall(text)}
    if prefs.get("useDataDir") != "true" or "dataDir" not in prefs:
        return None
    raw = js_string_value(prefs["dataDir"])
    return Path(raw) if raw else None


def parse_base_attachment_path(text: str) -> Path | None:
    """The "Linked Attachment Base Directory" a ``prefs.js`` names (``extensions.zotero.baseAttachmentPath``):
    what a linked file's ``attachments:REL`` path is relative to (zotero/zotero ``attachments.js``,
    ``resolveRelativePath``). Pure."""
    prefs = {name: value for name, value in _PREF_RE.findall(text)}
    raw = js_string_value(prefs["baseAttachmentPath"]) if "baseAttachmentPath" in prefs else ""
    return Path(raw) if raw else None


def attachment_base_dir(data_dir: Path, home: Path | None = None) -> Path | None:
    """The linked-attachment base directory of the profile whose data directory is ``data_dir``.

    Zotero keeps the preference in its *profile* (``prefs.js``), not beside ``zotero.sqlite``, so
    the profile that points at this data directory is looked up the way ``candidate_dirs`` finds
    them (a profile without ``dataDir`` uses ``~/Zotero``). None when no profile names one.
    """
    home = home or Path(os.environ.get("HOME") or Path.home())
    try:
        wanted = Path(data_dir).expanduser().resolve()
    except OSError:
        return None
    for root in profile_roots(home):
        for prefs in sorted(root.glob("*/prefs.js")) if root.is_dir() else []:
            try:
                text = prefs.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            folder = parse_prefs(text) or home / "Zotero"
            try:
                same = folder.expanduser().resolve() == wanted
            except OSError:
                continue
            if same:
                return parse_base_attachment_path(text)
    return None


def candidate_dirs(home: Path | None = None) -> list[tuple[Path, str]]:
    """(data dir, how it was found), without duplicates, in Zotero's order."""
    home = home or Path(os.environ.get("HOME") or Path.home())
    found: list[tuple[Path, str]] = []
    for root in profile_roots(home):
        for prefs in sorted(root.glob("*/prefs.js")) if root.is_dir() else []:
            try:
                folder = parse_prefs(prefs.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                continue
            if folder:
                found.append((folder, f"prefs.js ({prefs})"))
    found.append((home / "Zotero", "default (~/Zotero)"))
    unique: dict[str, tuple[Path, str]] = {}
    for folder, how in found:
        if (folder / "zotero.sqlite").is_file():
            unique.setdefault(str(folder.resolve()), (folder, how))
    return list(unique.values())


def read_zotero_db(sqlite_path: Path) -> dict:
    """Settings and counts of a ``zotero.sqlite``, read from a temporary copy (with its ``-wal``/``-journal``)."""
    return _from_copy(sqlite_path, lambda conn: {**_settings(conn), **_synced_counts(conn, sqlite_path)})


def _from_copy(sqlite_path: Path, read: Callable[[sqlite3.Connection], dict]) -> dict:
    """``read`` on a temporary copy of the database (Zotero holds an exclusive lock while it runs)."""
    with tempfile.TemporaryDirectory(prefix="zocrates-detect-") as tmp:
        copy = Path(tmp) / "zotero.sqlite"
        shutil.copyfile(sqlite_path, copy)
        for suffix in ("-wal", "-journal"):
            side = sqlite_path.with_name(sqlite_path.name + suffix)
            if side.exists():
                shutil.copyfile(side, copy.with_name(copy.name + suffix))
        with closing(sqlite3.connect(copy, isolation_level=None)) as conn:
            conn.text_factory = lambda b: b.decode("utf-8", "replace")  # as the desktop source reads it
            return read(conn)


def _settings(conn: sqlite3.Connection) -> dict:
    """Schema version, Zotero version, the zotero.org account and the group ids; None where absent."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def one(sql: str):
        try:
            row = conn.execute(sql).fetchone()
        except sqlite3.Error:
            return None
        return row[0] if row else None

    settings = "settings" in tables
    return {
        # desktop libraryID → zotero.org groupID (what the Web API calls it)
        "groups": dict(conn.execute("SELECT libraryID, groupID FROM groups")) if "groups" in tables else {},
        "userdata_schema": one("SELECT version FROM version WHERE schema = 'userdata'"),
        "zotero_version": one("SELECT value FROM settings WHERE setting = 'client' AND key = 'lastVersion'")
        if settings
        else None,
        "user_id": one("SELECT value FROM settings WHERE setting = 'account' AND key = 'userID'") if settings else None,
        # the item URIs of a library never synced: http://zotero.org/users/local/<localUserKey>/items/<KEY>
        "local_user_key": one("SELECT value FROM settings WHERE setting = 'account' AND key = 'localUserKey'")
        if settings
        else None,
    }


def zotero_account(sqlite_path: Path) -> dict:
    """The account settings and group ids of a ``zotero.sqlite`` (``user_id``, ``local_user_key``,
    ``groups``), read in place when it can be (read-only) and from a copy while Zotero holds its lock."""
    try:
        with closing(sqlite3.connect(f"{Path(sqlite_path).resolve().as_uri()}?mode=ro", uri=True)) as conn:
            conn.text_factory = lambda b: b.decode("utf-8", "replace")
            return _settings(conn)
    except sqlite3.Error:  # Zotero running (exclusive lock): the settings of a copy, as detection does
        return _from_copy(Path(sqlite_path), _settings)


def _synced_counts(conn: sqlite3.Connection, sqlite_path: Path) -> dict:
    """Papers, notes and collections of My Library exactly as ``sync`` would read them.

    Why the reader itself: counting with separate SQL drifted (feed items, annotations, the trash
    and group libraries were counted), so the offer promised items that sync never showed. The
    desktop source's ``SnapshotReader`` decides; full text is skipped (counts do not need it).
    """
    from zocrates_nb.errors import LibraryError
    from zocrates_nb.library.desktop.reader import SnapshotReader

    try:
        no_files = lambda rows, failures: (None, ())  # noqa: E731 - counts need no full text
        snap = SnapshotReader(conn, sqlite_path=sqlite_path, library_id=None, fulltext_for=no_files).read()
    except (LibraryError, sqlite3.Error):  # not (or no longer) a Zotero database: nothing sync could read
        return {"items": 0, "notes": 0, "collections": 0}
    return {"items": len(snap.papers), "notes": len(snap.notes), "collections": len(snap.collections)}


def probe_local_api(port: int = LOCAL_PORT, timeout: float = 0.5) -> tuple[bool, bool]:
    """(Zotero running, local API enabled) from 127.0.0.1:port, within ``timeout`` seconds."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/", timeout=timeout) as response:  # noqa: S310
            return True, response.status == 200
    except urllib.error.HTTPError:
        return True, False  # Zotero answers (403 "Local API is not enabled")
    except (OSError, ValueError):
        return False, False


def detect(home: Path | None = None, *, port: int | None = None, probe: bool = True) -> list[DetectedLibrary]:
    """Every Zotero data directory found, described (``probe=False``: skip the local API probe)."""
    port = port or int(os.environ.get("ZOCRATES_ZOTERO_LOCAL_PORT", LOCAL_PORT))
    running, local_api = probe_local_api(port) if probe else (False, False)
    found = []
    for folder, how in candidate_dirs(home):
        try:
            info = read_zotero_db(folder / "zotero.sqlite")
        except (OSError, sqlite3.Error):
            continue
        user_id = info.pop("user_id")
        info.pop("groups")
        info.pop("local_user_key")
        found.append(
            DetectedLibrary(
                str(folder),
                how,
                running=running,
                local_api=local_api,
                user_id=int(user_id) if str(user_id or "").isdigit() else None,
                **info,
            )
        )
    return found


def desktop_account(library: dict[str, Any]) -> tuple[bool, int | None, int | None]:
    """(is the source a desktop db, its account.userID, the groupID of ``desktop_library_id`` if a group)."""
    if library.get("source") == "zotero-dir" and library.get("zotero_dir"):
        db = Path(library["zotero_dir"]) / "zotero.sqlite"
    elif library.get("source") == "zotero-sqlite" and library.get("sqlite_path"):
        db = Path(library["sqlite_path"])
    else:
        return False, None, None
    if not db.expanduser().exists():
        return True, None, None
    info = read_zotero_db(db.expanduser())
    user_id = str(info.get("user_id") or "")
    group_id = info["groups"].get(library.get("desktop_library_id"))
    return True, int(user_id) if user_id.isdigit() else None, group_id
