"""Library sources: where notes and papers come from.

``open_source(paths, config)`` picks one from ``config["library"]["source"]``:

- ``"demo"`` (default): the embedded demo library, read/write (``local.DemoLibrary``);
- ``"zotero-sqlite"``: a read-only snapshot of ``sqlite_path`` (``zotero_desktop``);
- ``"zotero-dir"``: the same from ``zotero_dir`` (``zotero.sqlite`` + ``storage/`` full text);
  ``desktop_library_id`` picks a group library's ``libraryID`` (default: My Library);
- ``"zotero-web"``: the Zotero Web API, or Zotero 10's local API with ``local: true``
  (``zotero_web``; the Web API key is read from the environment variable ``api_key_env``; the
  local API takes ``$ZOTERO_LOCAL_API_KEY`` or the approved local key, never ``$ZOTERO_API_KEY``).

Sources are imported lazily so that the demo library never loads pyzotero.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zocrates_nb.errors import ConfigError
from zocrates_nb.library.base import Collection, LibrarySnapshot, LibrarySource, Note, Paper
from zocrates_nb.settings.schema import LIBRARY_SOURCES

__all__ = ["open_source", "local_api_key", "LibrarySource", "LibrarySnapshot", "Note", "Paper", "Collection", "SOURCES"]

SOURCES = LIBRARY_SOURCES  # declared once, in config_schema
#: the schema's default ``library.api_key_env``: a zotero.org key, never sent to the local API
WEB_KEY_ENV = "ZOTERO_API_KEY"
LOCAL_KEY_ENV = "ZOTERO_LOCAL_API_KEY"


def local_api_key(lib: dict, approved_key: Callable[[], str | None] | None) -> str | None:
    """The key sent to Zotero's local API on 127.0.0.1, by the read source and the local writer alike.

    Why not ``api_key_env``: the schema (and ``library use web``) fill it with ``ZOTERO_API_KEY``,
    a zotero.org key that must never go to localhost. So the local source takes the variable the
    user named explicitly, else ``approved_key()`` (the wiring passes ``writers.read_local_key``:
    ``$ZOTERO_LOCAL_API_KEY``, else the key approved with ``library writer local``), else
    ``$ZOTERO_LOCAL_API_KEY``. The library layer does not reach up into the writers itself.
    """
    named = lib.get("api_key_env")
    if named and named != WEB_KEY_ENV and os.environ.get(named, "").strip():
        return os.environ[named].strip()
    if approved_key is not None:
        return approved_key() or None
    return os.environ.get(LOCAL_KEY_ENV, "").strip() or None


def open_source(paths, config: dict, *, local_key: Callable[[], str | None] | None = None) -> LibrarySource:
    """The library source the config asks for (``paths`` is a ``DataPaths``).

    ``local_key()``: the approved Zotero 10 local API key (the wiring passes ``writers.read_local_key``)."""
    lib = dict((config or {}).get("library") or {})
    source = lib.get("source") or "demo"
    if source == "demo":
        from zocrates_nb.library.local import DemoLibrary

        content = Path(lib["content_dir"]) if lib.get("content_dir") else None
        return DemoLibrary(paths.demo_library, content, read_only=paths.unwritable)
    if source in ("zotero-sqlite", "zotero-dir"):
        from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary

        setting = "sqlite_path" if source == "zotero-sqlite" else "zotero_dir"
        if not lib.get(setting):
            raise ConfigError(
                f'library.source is "{source}" but library.{setting} is not set.',
                f"Set library.{setting} in zocrates_config.json, or pass "
                f"--{'zotero-sqlite PATH' if setting == 'sqlite_path' else 'zotero-dir DIR'}.",
            )
        where = Path(lib[setting]).expanduser()
        return ZoteroDesktopLibrary(
            sqlite_path=where if setting == "sqlite_path" else None,
            zotero_dir=where if setting == "zotero_dir" else None,
            library_id=lib.get("desktop_library_id"),
            read_pdfs=bool(lib.get("pdf_pages", True)),
            attachment_base_dir=Path(lib["attachment_base_dir"]) if lib.get("attachment_base_dir") else None,
        )
    if source == "zotero-web":
        from zocrates_nb.library.web.source import ZoteroWebLibrary

        local = bool(lib.get("local"))
        library_id = lib.get("library_id")
        if library_id in (None, "") and not local:
            raise ConfigError(
                'library.source is "zotero-web" but library.library_id is not set.',
                "Set library.library_id to your Zotero user ID (zotero.org/settings/keys) "
                'or a group ID, and library.library_type to "user" or "group".',
            )
        api_key = (
            local_api_key(lib, local_key) if local else (os.environ.get(lib.get("api_key_env") or WEB_KEY_ENV) or None)
        )

        def web_library(number: Any, kind: str, cache: Path | None) -> ZoteroWebLibrary:
            return ZoteroWebLibrary(
                library_id=number,
                library_type=kind,
                api_key=api_key,
                cache_path=cache,
                local=local,
                base_url=lib.get("base_url"),
                server_id=lib.get("server_id"),
            )

        user = web_library(
            library_id if library_id not in (None, "") else 0, lib.get("library_type") or "user", paths.web_cache
        )
        if user.library_type != "user" or lib.get("groups", "all") == "none":
            return user
        from zocrates_nb.library.web.groups import ZoteroWebLibraries, group_cache_path, list_groups

        return ZoteroWebLibraries(
            user,
            lambda group_id: web_library(group_id, "group", group_cache_path(paths.web_cache, group_id)),
            lambda: list_groups(user.base_url, user.library_id, api_key, local=local),
        )
    raise ConfigError(f"Unknown library source {source!r}.", f"Set library.source to one of: {', '.join(SOURCES)}.")
