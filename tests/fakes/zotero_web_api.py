"""A loopback Zotero Web API (and Zotero 10 local API) speaking the real wire format.

Shapes follow ../shared/docs/zotero-formats.md §2–3 and the saved API responses
(../shared/data/zotero/api/*.json): item objects are ``{key, version, library,
links, meta, data}``; listings carry ``Total-Results``, ``Last-Modified-Version``
and ``Link: <…>; rel="next"``; ``since=`` means "modified after that library
version"; trashed items carry ``data.deleted: 1`` and are listed only with
``includeTrashed=1``; ``/deleted?since=`` lists permanent deletions; ``POST
/items`` answers ``{"successful", "success", "unchanged", "failed"}`` with
per-object failures (400 for a child note with collections); ``PATCH`` needs
``If-Unmodified-Since-Version`` (or ``version`` in the body): 428 without, 412
when stale, 204 on success. Failures (429 + ``Retry-After``, ``Backoff``) can
be injected. With ``local=True`` it lives under ``/api`` and write requests
need ``Zotero-Server-ID`` (428/412) and the local ``Zotero-API-Key`` (403).
"""

from __future__ import annotations

import json
import random
import sys
import threading
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer

from tests.fakes.zotero_web_handler import ITEM_FIELDS, make_handler

_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeZoteroAPI:
    """State + server. ``with FakeZoteroAPI() as api: ZoteroWebLibrary(..., base_url=api.base_url)``."""

    def __init__(
        self,
        library_id: int = 475425,
        library_type: str = "user",
        api_key: str = "s3cr3t-key-XYZ",
        *,
        local: bool = False,
        server_id: str = "srv-1234",
    ) -> None:
        self.library_id, self.library_type, self.api_key = library_id, library_type, api_key
        self.local, self.server_id = local, server_id
        self.version = 0
        self.items: dict[str, dict] = {}  # key → data (data["version"] is the item version)
        self.collections: dict[str, dict] = {}
        self.deletions: list[tuple[int, str, str]] = []  # (version, "items"|"collections", key)
        self.injected: list[tuple[set[str], int, dict[str, str]]] = []
        self.success_headers: dict[str, str] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.used_write_tokens: set[str] = set()  # Zotero-Write-Token: reuse → 412
        self.created_by_post: list[str] = []  # every item key a POST created (duplicates show here)
        self.latency_s = 0.0  # per request: widens the window a test may kill in
        self.fulltext: dict[str, tuple[int, dict]] = {}  # attachment key → (version, {"content", …})
        self.key_user_id = library_id if library_type == "user" else 475425
        self.key_access: dict = {
            "user": {"library": True, "files": True, "notes": True, "write": True},
            "groups": {"all": {"library": True, "write": True}},
        }
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self.name = "zocrates-test"
        #: group libraries the user belongs to (``/users/<id>/groups``), each served under ``/groups/<id>``
        self.groups: dict[int, FakeZoteroAPI] = {}
        self.group_status = 200  # what ``/users/<id>/groups`` answers (403: a key that may not list them)

    def add_group(self, group_id: int, name: str) -> FakeZoteroAPI:
        """A group library the user belongs to; fill it like this one (``add_item``, ``add_note`` …)."""
        group = FakeZoteroAPI(group_id, "group", self.api_key, local=self.local, server_id=self.server_id)
        group.name, group.lock = name, self.lock
        group.base_url = getattr(self, "base_url", "")  # its links name the same server
        self.groups[group_id] = group
        return group

    def group_objs(self) -> list[dict]:
        """``GET /users/<id>/groups`` as zotero.org answers it (group objects with their ``data``)."""
        return [
            {
                "id": gid,
                "version": g.version,
                "links": {"alternate": {"href": f"https://www.zotero.org/groups/{gid}", "type": "text/html"}},
                "meta": {"created": _now(), "lastModified": _now(), "numItems": len(g.items)},
                "data": {
                    "id": gid,
                    "version": g.version,
                    "name": g.name,
                    "owner": self.library_id,
                    "type": "Private",
                    "description": "",
                    "url": "",
                    "libraryEditing": "members",
                    "libraryReading": "members",
                    "fileEditing": "members",
                },
            }
            for gid, g in sorted(self.groups.items())
        ]

    # -- library state ----------------------------------------------------
    def _bump(self) -> int:
        self.version += 1
        return self.version

    def new_key(self) -> str:
        while True:
            key = "".join(random.choice(_ALPHABET) for _ in range(8))
            if key not in self.items and key not in self.collections:
                return key

    def add_collection(self, key: str, name: str, parent: str | None = None) -> None:
        with self.lock:
            self.collections[key] = {
                "key": key,
                "version": self._bump(),
                "name": name,
                "parentCollection": parent or False,
                "relations": {},
            }

    def add_item(self, data: dict) -> dict:
        """Add any item (paper or note) as the API would store it; returns its data."""
        with self.lock:
            data = {"key": data.get("key") or self.new_key(), **data}
            data.setdefault("tags", [])
            data.setdefault("relations", {})
            if not data.get("parentItem"):
                data.setdefault("collections", [])
            data.setdefault("dateAdded", _now())
            data["dateModified"] = _now()
            data["version"] = self._bump()
            self.items[data["key"]] = data
            return data

    def add_note(
        self, html: str, *, key: str | None = None, parent: str | None = None, collections: list[str] = ()
    ) -> dict:
        data = {"key": key, "itemType": "note", "note": html}
        if parent:
            data["parentItem"] = parent
        else:
            data["collections"] = list(collections)
        return self.add_item(data)

    def add_annotation(
        self,
        attachment: str,
        *,
        key: str | None = None,
        annotation_type: str = "highlight",
        text: str = "",
        comment: str = "",
        color: str = "#ffd400",
        page_label: str = "1",
        page_index: int = 0,
        tags: list[str] = (),
    ) -> dict:
        """A PDF annotation as the API stores it: a child of its attachment, ``annotationPosition`` a JSON
        string, ``annotationSortIndex`` ``PPPPP|OOOOOO|TTTTT`` (Zotero's schema, itemType annotation)."""
        data = {
            "key": key,
            "itemType": "annotation",
            "parentItem": attachment,
            "annotationType": annotation_type,
            "annotationAuthorName": "",
            "annotationText": text,
            "annotationComment": comment,
            "annotationColor": color,
            "annotationPageLabel": page_label,
            "annotationSortIndex": f"{page_index:05d}|000120|00069",
            "annotationPosition": json.dumps({"pageIndex": page_index, "rects": [[72.0, 600.5, 300.2, 612.0]]}),
            "tags": [{"tag": t} for t in tags],
        }
        if annotation_type not in ("highlight", "underline"):
            data.pop("annotationText")  # only highlights and underlines carry text
        return self.add_item(data)

    def set_fulltext(self, key: str, content: str, pages: int = 1) -> None:
        """An attachment's indexed text, as PUT /items/KEY/fulltext stores it."""
        with self.lock:
            self.fulltext[key] = (self._bump(), {"content": content, "indexedPages": pages, "totalPages": pages})

    def modify(self, key: str, **fields) -> None:
        with self.lock:
            self.items[key].update(fields)
            self.items[key]["dateModified"] = _now()
            self.items[key]["version"] = self._bump()

    def trash(self, key: str) -> None:
        self.modify(key, deleted=1)

    def delete(self, key: str) -> None:
        """Permanent deletion: gone from /items, listed by /deleted."""
        with self.lock:
            kind = "items" if key in self.items else "collections"
            getattr(self, kind).pop(key)
            self.deletions.append((self._bump(), kind, key))

    def inject(self, status: int = 429, *, methods=("POST", "PATCH"), times: int = 1, **headers: str) -> None:
        """The next ``times`` requests with one of ``methods`` get ``status`` (e.g. 429, Retry-After="0.2")."""
        with self.lock:
            for _ in range(times):
                self.injected.append((set(methods), status, {k.replace("_", "-"): v for k, v in headers.items()}))

    # -- wire shapes ------------------------------------------------------
    def library_obj(self) -> dict:
        return {
            "type": self.library_type,
            "id": self.library_id,
            "name": self.name,
            "links": {"alternate": {"href": "https://www.zotero.org/zocrates-test", "type": "text/html"}},
        }

    def item_obj(self, data: dict) -> dict:
        base = f"{self.base_url}/{self.library_type}s/{self.library_id}"
        links = {
            "self": {"href": f"{base}/items/{data['key']}", "type": "application/json"},
            "alternate": {"href": f"https://www.zotero.org/zocrates-test/items/{data['key']}", "type": "text/html"},
        }
        if data.get("parentItem"):
            links["up"] = {"href": f"{base}/items/{data['parentItem']}", "type": "application/json"}
        meta: dict = {"numChildren": sum(1 for d in self.items.values() if d.get("parentItem") == data["key"])}
        if data.get("itemType") not in ("note", "attachment", "annotation"):
            creators = data.get("creators") or []
            if creators:
                meta["creatorSummary"] = creators[0].get("lastName") or creators[0].get("name", "")
            if data.get("date"):
                meta["parsedDate"] = data["date"][:10]
        return {
            "key": data["key"],
            "version": data["version"],
            "library": self.library_obj(),
            "links": links,
            "meta": meta,
            "data": dict(data),
        }

    def collection_obj(self, data: dict) -> dict:
        base = f"{self.base_url}/{self.library_type}s/{self.library_id}"
        return {
            "key": data["key"],
            "version": data["version"],
            "library": self.library_obj(),
            "links": {"self": {"href": f"{base}/collections/{data['key']}", "type": "application/json"}},
            "meta": {
                "numCollections": sum(1 for c in self.collections.values() if c.get("parentCollection") == data["key"]),
                "numItems": sum(1 for d in self.items.values() if data["key"] in d.get("collections", [])),
            },
            "data": dict(data),
        }

    # -- server -------------------------------------------------------------
    def start(self) -> FakeZoteroAPI:
        self._server = _Server(("127.0.0.1", 0), make_handler(self))
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.base_url = f"http://{host}:{port}" + ("/api" if self.local else "")
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> FakeZoteroAPI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    """A client that hangs up mid-answer (a test killed it) is no server error: say nothing."""

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


__all__ = ["ITEM_FIELDS", "FakeZoteroAPI"]
