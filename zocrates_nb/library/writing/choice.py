"""Which note writer a Save as Note goes through, and whether it may write: one idea apart from the saving.

Why this module exists: ``saving.py`` decides the *order* of a save (outbox first, index at once,
then a writer); this module decides *which* writers exist for a config (the Zotero 10 local API
with its approved key, the zotero.org Web API with its key) and checks a Web API writer once
before its first write. Split out of ``saving.py`` (issue 12); ``saving`` re-exports every name.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from zocrates_nb.errors import ConfigError, LibraryError
from zocrates_nb.library import local_api_key
from zocrates_nb.library.desktop.detect import desktop_account
from zocrates_nb.library.writing.note_writers import (
    LOCAL_API,
    WEB_API,
    NoteWriter,
    WriterUnavailable,
    check_web_key,
    key_info,
)
from zocrates_nb.storage.atomic import write_atomically
from zocrates_nb.storage.locks import file_lock

LOCAL_KEY_ENV = "ZOTERO_LOCAL_API_KEY"
_log = logging.getLogger(__name__)
NO_WRITER = (
    "no writer is set up for this Zotero library: run `zocrates-nb library writer local` (Zotero 10) or "
    "`zocrates-nb library writer web --api-key-env ENV` (zotero.org account)"
)


# ----------------------------------------------------------------------------- the local API key


def local_key_path(paths) -> Any:
    return paths.root / "zotero_local_key.json"


def read_local_key(paths) -> str | None:
    """The Zotero 10 local API key: ``$ZOTERO_LOCAL_API_KEY``, else the 0600 file, else None."""
    from_env = os.environ.get(LOCAL_KEY_ENV, "").strip()
    if from_env:
        return from_env
    try:
        data = json.loads(local_key_path(paths).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"{local_key_path(paths)} is damaged.", "Delete it and run `zocrates-nb library writer local` again."
        ) from exc
    return data.get("key") if isinstance(data, dict) and isinstance(data.get("key"), str) else None


def store_local_key(paths, key: str) -> None:
    """Keep the approved local key owner-only (mode 0600 from the first byte), never in the config."""
    with file_lock(paths.locks / "secrets.lock"):
        write_atomically(local_key_path(paths), json.dumps({"key": key}).encode("utf-8"))


# ----------------------------------------------------------------------------- choosing writers


def _library_path(library_type: str, library_id: Any) -> str:
    return f"{'groups' if library_type == 'group' else 'users'}/{library_id}"


def choose_writers(paths, config: dict) -> tuple[list[NoteWriter], str]:
    """The writers to try, in order, for this config; with the reason when there is none."""
    library, writer = config.get("library") or {}, config.get("writer") or {}
    if library.get("source") == "zotero-web":
        key = os.environ.get(library.get("api_key_env") or "ZOTERO_API_KEY", "").strip()
        if library.get("local"):  # the key the local read source sends: never the zotero.org key
            local_key = local_api_key(library, lambda: read_local_key(paths))
            if not local_key:
                return [], "no local API key: run `zocrates-nb library writer local` (Zotero 10)"
            return [
                NoteWriter(
                    "zotero-local", library.get("base_url") or LOCAL_API, "users/0", local_key, library.get("server_id")
                )
            ], ""
        if not key:
            return [], f"the Zotero API key is not set (${library.get('api_key_env')})"
        return [
            NoteWriter(
                "zotero-web",
                library.get("base_url") or WEB_API,
                _library_path(library.get("library_type") or "user", library.get("library_id")),
                key,
            )
        ], ""
    kind = writer.get("kind") or "auto"
    writers: list[NoteWriter] = []
    if kind in ("auto", "local"):
        approved_key = read_local_key(paths)
        if approved_key:
            writers.append(
                NoteWriter(
                    "zotero-local",
                    writer.get("local_base_url") or LOCAL_API,
                    "users/0",
                    approved_key,
                    writer.get("server_id"),
                )
            )
    if kind in ("auto", "web") and writer.get("library_id") not in (None, ""):
        key = os.environ.get(writer.get("api_key_env") or "ZOTERO_API_KEY", "").strip()
        if key:
            writers.append(
                NoteWriter(
                    "zotero-web",
                    writer.get("base_url") or WEB_API,
                    _library_path(writer.get("library_type") or "user", writer["library_id"]),
                    key,
                )
            )
        elif kind == "web":
            return [], f"the Web API key is not set (${writer.get('api_key_env')})"
    if not writers:
        return [], "writer.kind is none" if kind == "none" else NO_WRITER
    return writers, ""


def writer_summary(paths, config: dict) -> dict:
    """``library show --json``'s "writer": the kind that would write now, never a key."""
    try:
        writers, reason = choose_writers(paths, config)
    except ConfigError as exc:
        return {"kind": "none", "reason": exc.message}
    if not writers:
        return {"kind": "none", "reason": reason}
    first = writers[0]
    return {"kind": first.kind.removeprefix("zotero-"), "base_url": first.base_url, "library": first.library_path}


# ----------------------------------------------------------------------------- checking a Web API writer once


def _checks_path(paths) -> Path:
    return paths.root / "writer_checks.json"


def _check_id(writer: NoteWriter, desktop_user_id: int | None) -> str:
    """One id per writer configuration (URL, library, key, desktop account); the key only as a hash."""
    key_hash = hashlib.sha256(writer.api_key.encode("utf-8")).hexdigest()
    return hashlib.sha256(
        json.dumps([writer.base_url, writer.library_path, key_hash, desktop_user_id]).encode("utf-8")
    ).hexdigest()[:32]


def _checked_ids(paths) -> list[str]:
    try:
        data = json.loads(_checks_path(paths).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:  # derived data: a damaged cache only means "check again"
        _log.warning("ignoring damaged %s (%s): the writer is checked again", _checks_path(paths), exc)
        return []
    return [str(x) for x in data.get("checked", [])] if isinstance(data, dict) else []


def _remember_checked(paths, check_id: str) -> None:
    with file_lock(paths.locks / "writer_checks.lock"):
        ids = [i for i in _checked_ids(paths) if i != check_id][-15:] + [check_id]
        write_atomically(_checks_path(paths), json.dumps({"checked": ids}).encode("utf-8"))


def verify_web_writer(paths, config: dict, writer: NoteWriter) -> None:
    """Before the first write through a desktop library's Web API writer: may this key write notes, and
    into the library Zotero desktop syncs with? Done by ``library writer web``; done here once for a
    writer configured by editing ``zocrates_config.json``. Success is cached per writer configuration
    in the data directory. Raises ``LibraryError`` (refused: why) or ``WriterUnavailable`` (ask later).
    """
    library, section = config.get("library") or {}, config.get("writer") or {}
    if writer.kind != "zotero-web" or library.get("source") == "zotero-web":
        return  # the local API and the Web API source write into the library they read
    desktop, desktop_user_id, _group_id = desktop_account(library)
    check_id = _check_id(writer, desktop_user_id)
    if check_id in _checked_ids(paths):
        return
    library_type = section.get("library_type") or "user"
    check_web_key(
        key_info(writer.base_url, writer.api_key, timeout=writer.timeout),
        library_type=library_type,
        library_id=str(section.get("library_id")),
        desktop_user_id=desktop_user_id,
        desktop=desktop and library_type == "user",
    )
    _remember_checked(paths, check_id)


def usable_writers(paths, config: dict) -> tuple[list[NoteWriter], str]:
    """``choose_writers`` minus the Web API writers whose key check refuses them (with the reason)."""
    writers, reason = choose_writers(paths, config)
    usable = []
    for writer in writers:
        try:
            verify_web_writer(paths, config, writer)
        except WriterUnavailable as exc:
            reason = exc.message
        except LibraryError as exc:
            reason = f"{exc.message} {exc.hint}".strip()
        else:
            usable.append(writer)
    return usable, reason
