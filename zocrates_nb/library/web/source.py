"""The Zotero Web API (and Zotero 10's local API) as a library source, via pyzotero.

Why a local cache: a Zotero library can hold tens of thousands of items and the
Web API pages 100 at a time, so every read after the first is incremental —
``items?since=<library version>&includeTrashed=1``, ``collections?since=…`` and
``deleted?since=…`` — applied to a SQLite cache (``zotero_web_cache.sqlite``)
in one transaction together with the new library version. ``snapshot()`` and
``get_note()`` are then local reads.

Writes follow the Web API's rules (../shared/docs/zotero-formats.md §3): notes
are HTML (the API would escape Markdown), a note is a child (``parentItem``) or
standalone in collections, never both; updates carry the version they were
based on, and a ``412`` means someone else changed the note — we re-fetch it
and refuse, rather than overwrite. pyzotero retries rate-limited *reads* only,
so writes are wrapped here: ``Backoff``/``Retry-After`` are honoured and a
refused write is re-sent a bounded number of times.

The API key lives in the pyzotero client only; it never appears in messages or reprs.
Every key the API hands us (items, attachment full text, a created note) is checked against
the bundle key rule (``base.is_safe_key``) before it names a URL, a cache row or a folder.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
from pyzotero import Zotero
from pyzotero import errors as ze

from zocrates_nb.errors import LibraryError, NotFoundError
from zocrates_nb.library.base import (
    Annotation,
    LibrarySnapshot,
    Note,
    Paper,
    check_note_html,
    is_safe_key,
    with_valid_keys,
)
from zocrates_nb.library.web.cache import WebCache
from zocrates_nb.library.web.objects import note_from_object, web_library_info

WEB_API = "https://api.zotero.org"
LOCAL_API = "http://localhost:23119/api"
_RETRY_STATUSES = (429, 503)
_NOTE_TEMPLATE = {"itemType": "note", "note": "", "tags": [], "collections": [], "relations": {}}
_BAD_KEY = "refused: not a valid key (letters, digits, _ and - only)"
log = logging.getLogger(__name__)


class NoteConflictError(LibraryError):
    """The note changed in Zotero since we read it (HTTP 412); nothing was overwritten."""


class ZoteroWebLibrary:
    """A Zotero Web API (or local API) library with an incremental local cache. Read/write."""

    writable = True

    def __init__(
        self,
        library_id: int | str,
        library_type: str = "user",
        api_key: str | None = None,
        cache_path: Path | None = None,
        local: bool = False,
        base_url: str | None = None,
        server_id: str | None = None,
        *,
        page_size: int = 100,
        max_write_attempts: int = 4,
    ) -> None:
        if library_type not in ("user", "group"):
            raise LibraryError(
                f"library_type must be 'user' or 'group', not {library_type!r}.",
                "Set library.library_type in zocrates_config.json.",
            )
        self.library_id, self.library_type, self.local = str(library_id), library_type, local
        self.base_url = (base_url or (LOCAL_API if local else WEB_API)).rstrip("/")
        self.page_size, self.max_write_attempts = page_size, max_write_attempts
        self._api_key = api_key
        # Zotero 10's local API takes its own key (Zotero-API-Key) for writes, never a Bearer token
        self._zot = Zotero(
            library_id,
            library_type,
            api_key=None if local else api_key,
            local=local,
            server_id=server_id,
            local_api_key=api_key if local else None,
        )
        self._zot.endpoint = self.base_url  # pyzotero builds every URL from this attribute
        self._lock = threading.RLock()
        self._backoff_until = 0.0
        self._last_sync_error: str | None = None
        self._refused: list[tuple[str, str]] = []  # crafted keys the last sync skipped (snapshot failures)
        self.cache_path = Path(cache_path) if cache_path else None
        identity = f"{self.library_type}s/{self.library_id}@{self.base_url}"
        self._cache = WebCache(self.cache_path, identity, self._lock)

    # -- plumbing -------------------------------------------------------
    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    @contextmanager
    def _api_errors(self, doing: str) -> Iterator[None]:
        """Turn pyzotero/transport failures into LibraryErrors with a hint (and no API key)."""
        try:
            yield
        except (LibraryError, NotFoundError):
            raise
        except ze.ResourceNotFoundError as exc:
            raise NotFoundError(
                f"Zotero says not found while {doing}.", "Sync the library; the item may have been deleted."
            ) from exc
        except (ze.UserNotAuthorisedError, ze.MissingCredentialsError) as exc:
            raise LibraryError(
                f"Zotero refused access while {doing}: {self._redact(str(exc))[:300]}",
                "Check the API key (it needs library and notes access, and write access to "
                "save) — for the local API, approve zocrates_nb in Zotero.",
            ) from exc
        except ze.PyZoteroError as exc:
            raise LibraryError(
                f"Zotero API error while {doing}: {self._redact(str(exc))[:500]}",
                "Retry later; if it persists, check the library settings.",
            ) from exc
        except httpx2.HTTPError as exc:
            raise LibraryError(
                f"Could not reach Zotero at {self.base_url} while {doing}: {self._redact(str(exc))[:300]}",
                "Check the network, or for the local API that Zotero is running with "
                "'Allow other applications to communicate with Zotero' enabled.",
            ) from exc

    # -- sync -----------------------------------------------------------
    def _fetch_all(self, first_page: Callable[[], list]) -> tuple[list, int]:
        """One listing, following ``Link: rel=next``; the version is the first page's."""
        zot = self._zot
        objects = list(first_page())
        headers = zot.request.headers if zot.request is not None else {}
        version = int(headers.get("Last-Modified-Version", 0))
        while zot.links and zot.links.get("next"):
            objects.extend(zot.follow())
        return objects, version

    def sync(self) -> dict:
        """Fetch what changed since the cached library version; returns counts and the new version."""
        with self._lock, self._api_errors("syncing"):
            since = self._cache.version() or 0
            zot = self._zot
            items, version = self._fetch_all(lambda: zot.items(since=since, includeTrashed=1, limit=self.page_size))
            collections, _ = self._fetch_all(lambda: zot.collections(since=since, limit=self.page_size))
            deleted = zot.deleted(since=since) if since else {}
            texts = self._fetch_fulltext(since)
            deleted_count = self._cache.apply_sync(items, collections, deleted, texts, max(version, since))
            self._last_sync_error = None
            return {
                "items": len(items),
                "collections": len(collections),
                "deleted": deleted_count,
                "since": since,
                "version": max(version, since),
            }

    def _fetch_fulltext(self, since: int) -> list[tuple[str, int, str]]:
        """(attachment key, version, text) changed since ``since`` (the local API has no /fulltext: none).

        A key that breaks the key rule (``../../x``) is skipped and reported, never put into the
        ``/items/<key>/fulltext`` URL nor the cache.
        """
        self._refused = []
        if self.local:
            return []
        changed = self._zot.new_fulltext(since) or {}
        texts = []
        for key, version in changed.items():
            if not is_safe_key(key):
                log.warning("Zotero Web API: skipped the full text of attachment %r: not a valid key", key[:40])
                self._refused.append((repr(key)[:40], f"{_BAD_KEY}; its attachment full text was skipped"))
                continue
            body = self._zot.fulltext_item(key)
            if isinstance(body, dict) and isinstance(body.get("content"), str):
                texts.append((key, int(version), body["content"]))
        return texts

    # -- protocol reads -------------------------------------------------
    def describe(self) -> str:
        return f"Zotero {'local' if self.local else 'Web'} API {self.library_type}s/{self.library_id} ({self.base_url})"

    def snapshot(self) -> LibrarySnapshot:
        """Sync, then read the cache. Offline with a cache: the cached library plus a failure entry."""
        failures: tuple = ()
        try:
            self.sync()
        except LibraryError as exc:
            if self._cache.version() is None:
                raise
            self._last_sync_error = exc.message
            failures = (("sync", f"using the cached library: {exc.message}"),)
        papers, notes, collections, version = self._cache.read()
        failures += tuple(self._refused)
        annotations = self._cache.annotations()  # items of itemType annotation, under their PDF
        library = web_library_info(self.library_type, self.library_id, self._cache.library_name())
        return with_valid_keys(
            LibrarySnapshot(papers, notes, collections, version, annotations, failures, libraries=(library,))
        )

    def get_note(self, key: str) -> Note | None:
        """The cached note, filtered like ``snapshot()``: a crafted key (asked for or cached) is not served."""
        return _served(self._cache.get_note(key) if is_safe_key(key) else None, key)

    def get_paper(self, key: str) -> Paper | None:
        """The cached paper, filtered like ``snapshot()``."""
        return _served(self._cache.get_paper(key) if is_safe_key(key) else None, key)

    def get_annotation(self, key: str) -> Annotation | None:  # the cached annotation, filtered like snapshot()
        return _served(self._cache.get_annotation(key) if is_safe_key(key) else None, key)

    # -- writes ---------------------------------------------------------
    def _send_write(self, doing: str, send: Callable[[], tuple[Any, Any]]) -> tuple[Any, Any]:
        """Send a write, honouring Backoff/Retry-After and re-sending refused (429/503) writes.

        pyzotero's ``create_items`` does not retry a 429 (it records the delay and then fails
        to parse the body); ``update_item`` retries a few times itself and then raises
        ``TooManyRetriesError``. Both end up here, bounded by ``max_write_attempts``.
        """
        for attempt in range(self.max_write_attempts):
            wait = self._backoff_until - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                response, body = send()
            except ze.TooManyRetriesError:
                server_wait = self._zot.backoff_until - time.time()
                self._backoff_until = time.monotonic() + (server_wait if server_wait > 0 else 2.0**attempt)
                continue
            headers = response.headers if response is not None else {}
            delay = headers.get("Retry-After") or headers.get("Backoff")
            try:
                delay_s = float(delay) if delay else None
            except ValueError:
                delay_s = None
            if response is not None and response.status_code in _RETRY_STATUSES:
                self._backoff_until = time.monotonic() + (delay_s if delay_s is not None else 2.0**attempt)
                continue
            if delay_s:
                self._backoff_until = time.monotonic() + delay_s
            return response, body
        raise LibraryError(
            f"Zotero kept refusing the write ({doing}) after {self.max_write_attempts} attempts (rate limited).",
            "Wait a few minutes and save again; nothing was written.",
        )

    def create_note(self, html: str, *, parent_key: str | None = None, collection_keys: Sequence[str] = ()) -> Note:
        """Create a note as HTML: a child of ``parent_key`` xor standalone in ``collection_keys``."""
        check_note_html(html)
        collection_keys = list(collection_keys or ())
        if parent_key and collection_keys:
            raise LibraryError(
                "A note can be a child of a paper or filed in collections, not both.",
                "Pass either parent_key or collection_keys (Zotero rejects child notes with collections).",
            )
        zot = self._zot
        with self._lock, self._api_errors("creating a note"):
            template = dict(_NOTE_TEMPLATE) if self.local else zot.item_template("note")
            payload = {**template, "note": html, "collections": collection_keys}

            def send():
                zot.request = None
                try:
                    body = zot.create_items([payload], parentid=parent_key)
                except (ValueError, ze.PyZoteroError):
                    # a 429/503 body is not the JSON create_items expects; anything else is real
                    if zot.request is not None and zot.request.status_code in _RETRY_STATUSES:
                        return zot.request, None
                    raise
                return zot.request, body

            _, body = self._send_write("creating a note", send)
            failed = (body or {}).get("failed") or {}
            if failed:
                entry = next(iter(failed.values()))
                message, code = entry.get("message", "unknown error"), entry.get("code")
                cls = NotFoundError if "doesn't exist" in message or code == 404 else LibraryError
                raise cls(
                    f"Zotero refused the note (HTTP {code}): {message}",
                    "Check the parent paper / collection keys (sync first) and try again.",
                )
            obj = (body.get("successful") or {}).get("0")
            if obj is None:
                obj = zot.item(_answered_key((body.get("success") or {})["0"]))
            return self._store_note(obj)

    def _store_note(self, obj: dict) -> Note:
        """Cache and return the note Zotero sent back, unless its key breaks the key rule."""
        _answered_key((obj.get("data") or obj).get("key"))
        self._cache.store(obj)
        return note_from_object(obj)

    def update_note(self, key: str, html: str) -> Note:
        """Replace a note's HTML, based on the cached version; a 412 conflict is reported, never overwritten."""
        check_note_html(html)
        if not is_safe_key(key):
            raise NotFoundError(f"{repr(key)[:40]} is not a valid note key.", "Pass a note key from the library.")
        zot = self._zot
        with self._lock, self._api_errors(f"updating note {key}"):
            row = self._cache.version_and_type(key)
            if row is None:
                obj = zot.item(key)
                self._cache.store(obj)
                row = (obj["version"], obj["data"].get("itemType"))
            if row[1] != "note":
                raise NotFoundError(f"{key} is not a note in this library.", "Pass a note key.")
            version = row[0]

            def send():
                try:
                    zot.update_item({"key": key, "version": version, "note": html})
                except ze.ServerIDMismatchError:
                    raise
                except ze.PreConditionFailedError:
                    return None, 412
                except ze.ServerIDRequiredError:
                    raise
                except ze.PreConditionRequiredError:
                    return None, 428
                return zot.request, 204

            for _ in range(2):  # a second round only after a 428 (version missing) re-read
                _, status = self._send_write(f"updating note {key}", send)
                if status == 204:
                    return self._store_note(zot.item(key))
                if status == 412:
                    fresh = zot.item(key)
                    self._cache.store(fresh)
                    raise NoteConflictError(
                        f"Note {key} was changed in Zotero since it was read (we had version {version}, "
                        f"Zotero has {fresh['version']}); your edit was not saved over it.",
                        "Sync, look at the current note, and save your change again.",
                    )
                version = zot.item(key)["version"]  # 428: the server wants a version
            raise LibraryError(f"Zotero kept asking for the version of note {key} (HTTP 428).", "Sync and try again.")

    def close(self) -> None:
        with self._lock:
            self._cache.close()
            client = getattr(self._zot, "client", None)
            if client is not None:
                client.close()

    def __repr__(self) -> str:
        return f"<ZoteroWebLibrary {self.library_type}s/{self.library_id} via {self.base_url}>"


def _answered_key(key: Any) -> str:
    """A key from a write's answer, checked before it names a URL or a cache row."""
    if not is_safe_key(key):
        raise LibraryError(
            f"Zotero answered the write with an invalid note key ({repr(key)[:40]}); it was not used.",
            "Check in Zotero whether the note arrived before saving again, and that base_url in "
            "zocrates_config.json points at Zotero.",
        )
    return key


def _served(record: Any, key: str) -> Any:
    """``record`` unless the key it carries breaks the key rule (then None, with a warning)."""
    if record is not None and not is_safe_key(record.key):
        log.warning("Zotero Web API cache: %r holds an invalid key %r; not served", key[:40], str(record.key)[:40])
        return None
    return record


def authorize_local_key(base_url: str | None = None, app_name: str = "zocrates-nb") -> dict:
    """Zotero 10's one-time approval (pyzotero's ``authorize_local``): ``{"key", "remember", "server_id"}``.

    Zotero shows Allow / Always Allow / Deny. "Allow" keys are single-use (``remember`` false).
    """
    zot = Zotero(0, "user", local=True)
    zot.endpoint = (base_url or LOCAL_API).rstrip("/")
    try:
        granted = zot.authorize_local(app_name)
    except ze.LocalAPIDeniedError as exc:
        raise LibraryError(
            "Zotero denied the request.",
            "Run `zocrates-nb library writer local` again and choose “Always Allow” in Zotero.",
        ) from exc
    except (ze.PyZoteroError, httpx2.HTTPError) as exc:
        raise LibraryError(
            f"Zotero's local API did not answer the approval request: {str(exc)[:200]}",
            "Start Zotero 10 and enable Settings → Advanced → “Allow other applications on this "
            "computer to communicate with Zotero”, then run "
            "`zocrates-nb library writer local`.",
        ) from exc
    return {"key": granted["key"], "remember": bool(granted.get("remember")), "server_id": zot.server_id}
