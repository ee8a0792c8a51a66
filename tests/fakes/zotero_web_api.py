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
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
ITEM_FIELDS = ["title", "abstractNote", "publicationTitle", "date", "DOI", "url", "extra"]


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeZoteroAPI:
    """State + server. ``with FakeZoteroAPI() as api: ZoteroWebLibrary(..., base_url=api.base_url)``."""

    def __init__(self, library_id: int = 475425, library_type: str = "user", api_key: str = "s3cr3t-key-XYZ",
                 *, local: bool = False, server_id: str = "srv-1234") -> None:
        self.library_id, self.library_type, self.api_key = library_id, library_type, api_key
        self.local, self.server_id = local, server_id
        self.version = 0
        self.items: dict[str, dict] = {}            # key → data (data["version"] is the item version)
        self.collections: dict[str, dict] = {}
        self.deletions: list[tuple[int, str, str]] = []   # (version, "items"|"collections", key)
        self.injected: list[tuple[set[str], int, dict[str, str]]] = []
        self.success_headers: dict[str, str] = {}
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.used_write_tokens: set[str] = set()     # Zotero-Write-Token: reuse → 412
        self.created_by_post: list[str] = []         # every item key a POST created (duplicates show here)
        self.latency_s = 0.0                         # per request: widens the window a test may kill in
        self.fulltext: dict[str, tuple[int, dict]] = {}   # attachment key → (version, {"content", …})
        self.key_user_id = library_id if library_type == "user" else 475425
        self.key_access: dict = {"user": {"library": True, "files": True, "notes": True, "write": True},
                                 "groups": {"all": {"library": True, "write": True}}}
        self.lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None

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
            self.collections[key] = {"key": key, "version": self._bump(), "name": name,
                                     "parentCollection": parent or False, "relations": {}}

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

    def add_note(self, html: str, *, key: str | None = None, parent: str | None = None,
                 collections: list[str] = ()) -> dict:
        data = {"key": key, "itemType": "note", "note": html}
        if parent:
            data["parentItem"] = parent
        else:
            data["collections"] = list(collections)
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
        return {"type": self.library_type, "id": self.library_id, "name": "zocrates-test",
                "links": {"alternate": {"href": "https://www.zotero.org/zocrates-test", "type": "text/html"}}}

    def item_obj(self, data: dict) -> dict:
        base = f"{self.base_url}/{self.library_type}s/{self.library_id}"
        links = {"self": {"href": f"{base}/items/{data['key']}", "type": "application/json"},
                 "alternate": {"href": f"https://www.zotero.org/zocrates-test/items/{data['key']}",
                               "type": "text/html"}}
        if data.get("parentItem"):
            links["up"] = {"href": f"{base}/items/{data['parentItem']}", "type": "application/json"}
        meta: dict = {"numChildren": sum(1 for d in self.items.values() if d.get("parentItem") == data["key"])}
        if data.get("itemType") not in ("note", "attachment"):
            creators = data.get("creators") or []
            if creators:
                meta["creatorSummary"] = creators[0].get("lastName") or creators[0].get("name", "")
            if data.get("date"):
                meta["parsedDate"] = data["date"][:10]
        return {"key": data["key"], "version": data["version"], "library": self.library_obj(),
                "links": links, "meta": meta, "data": dict(data)}

    def collection_obj(self, data: dict) -> dict:
        base = f"{self.base_url}/{self.library_type}s/{self.library_id}"
        return {"key": data["key"], "version": data["version"], "library": self.library_obj(),
                "links": {"self": {"href": f"{base}/collections/{data['key']}", "type": "application/json"}},
                "meta": {"numCollections": sum(1 for c in self.collections.values()
                                               if c.get("parentCollection") == data["key"]),
                         "numItems": sum(1 for d in self.items.values() if data["key"] in d.get("collections", []))},
                "data": dict(data)}

    # -- server -------------------------------------------------------------
    def start(self) -> "FakeZoteroAPI":
        self._server = _Server(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.base_url = f"http://{host}:{port}" + ("/api" if self.local else "")
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> "FakeZoteroAPI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    """A client that hangs up mid-answer (a test killed it) is no server error: say nothing."""

    def handle_error(self, request, client_address) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _make_handler(api: FakeZoteroAPI):
    prefix = "/api" if api.local else ""
    lib_path = f"/{api.library_type}s/{api.library_id}"
    local_lib_path = f"/{api.library_type}s/0"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:      # keep test output clean
            pass

        # -- helpers --
        def _send(self, status: int, body=None, headers: dict | None = None) -> None:
            raw = b"" if body is None else (body if isinstance(body, bytes) else
                                             json.dumps(body).encode() if not isinstance(body, str)
                                             else body.encode())
            self.send_response(status)
            ctype = "application/json" if body is not None and not isinstance(body, str) else "text/plain"
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(raw)))
            self.send_header("Zotero-API-Version", "3")
            if api.local:
                self.send_header("Zotero-Server-ID", api.server_id)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if raw and self.command != "HEAD":
                self.wfile.write(raw)

        def _read_body(self) -> None:
            """Always consume the body first: an early answer must not leave it on a kept-alive socket."""
            length = int(self.headers.get("Content-Length") or 0)
            self._raw_body = self.rfile.read(length) if length else b""

        def _body(self):
            return json.loads(self._raw_body or b"null")

        def _route(self) -> tuple[str, dict]:
            url = urlparse(self.path)
            path = url.path
            if prefix and path.startswith(prefix):
                path = path[len(prefix):] or "/"
            for lp in (lib_path, local_lib_path) if api.local else (lib_path,):
                if path.startswith(lp):
                    path = "/LIB" + path[len(lp):]
            return path, {k: v[0] for k, v in parse_qs(url.query).items()}

        def _injected(self) -> bool:
            if api.latency_s:
                time.sleep(api.latency_s)
            with api.lock:
                for i, (methods, status, headers) in enumerate(api.injected):
                    if self.command in methods:
                        api.injected.pop(i)
                        self._send(status, "Too many requests — please slow down" if status == 429 else "Error",
                                   headers)
                        return True
            return False

        def _write_allowed(self) -> bool:
            if api.local:
                sid = self.headers.get("Zotero-Server-ID")
                if not sid:
                    self._send(428, "Zotero-Server-ID not provided")
                    return False
                if sid != api.server_id:
                    self._send(412, "Zotero-Server-ID does not match")
                    return False
                if self.headers.get("Zotero-API-Key") != api.api_key:
                    self._send(403, "Invalid local API key")
                    return False
                return True
            auth = self.headers.get("Authorization", "")
            if auth != f"Bearer {api.api_key}" and self.headers.get("Zotero-API-Key") != api.api_key:
                self._send(403, "Write access denied")
                return False
            return True

        def _listing(self, objects: list[dict], q: dict) -> None:
            start, limit = int(q.get("start", 0)), int(q.get("limit", 25))
            page = objects[start:start + limit]
            headers = {"Total-Results": str(len(objects)), "Last-Modified-Version": str(api.version)}
            if start + limit < len(objects):
                url = urlparse(self.path)
                nxt = {**q, "start": str(start + limit), "limit": str(limit)}
                host = f"http://{self.headers.get('Host')}"
                headers["Link"] = (f'<{host}{url.path}?{urlencode(nxt)}>; rel="next", '
                                   f'<{host}{url.path}?{urlencode({**q, "start": str(len(objects) - 1)})}>; rel="last"')
            self._send(200, page, headers)

        # -- verbs --
        def do_GET(self) -> None:
            api.requests.append(("GET", self.path, dict(self.headers)))
            if self._injected():
                return
            path, q = self._route()
            with api.lock:
                if path in ("/", ""):
                    return self._send(200, "Nothing to see here.")
                if path in ("/keys/current", f"/keys/{api.api_key}"):
                    if self.headers.get("Zotero-API-Key") != api.api_key and \
                            self.headers.get("Authorization") != f"Bearer {api.api_key}":
                        return self._send(403, "Invalid key")
                    return self._send(200, {"key": api.api_key, "userID": api.key_user_id, "username": "tester",
                                            "displayName": "Tester", "access": api.key_access})
                if path == "/itemFields":
                    return self._send(200, [{"field": f, "localized": f} for f in ITEM_FIELDS])
                if path == "/items/new":
                    if api.local:
                        return self._send(404, "Not found")
                    if q.get("itemType") != "note":
                        return self._send(400, "Only note templates in this fake")
                    return self._send(200, {"itemType": "note", "note": "", "tags": [], "collections": [],
                                            "relations": {}})
                since = int(q.get("since", 0))
                if path == "/LIB/items":
                    objs = [api.item_obj(d) for d in sorted(api.items.values(), key=lambda d: d["version"])
                            if d["version"] > since and (q.get("includeTrashed") == "1" or not d.get("deleted"))
                            and (not q.get("itemType") or d.get("itemType") == q["itemType"])]
                    return self._listing(objs, q)
                if path == "/LIB/fulltext":
                    if api.local:
                        return self._send(404, "Not found")
                    return self._send(200, {k: v for k, (v, _) in api.fulltext.items() if v > since},
                                      {"Last-Modified-Version": str(api.version)})
                if path.startswith("/LIB/items/") and path.endswith("/fulltext"):
                    key = path.split("/")[3]
                    if key not in api.fulltext:
                        return self._send(404, "Not found")
                    version, body = api.fulltext[key]
                    return self._send(200, body, {"Last-Modified-Version": str(version)})
                if path.startswith("/LIB/items/"):
                    key = path.rsplit("/", 1)[1]
                    if key not in api.items:
                        return self._send(404, "Not found")
                    return self._send(200, api.item_obj(api.items[key]),
                                      {"Last-Modified-Version": str(api.items[key]["version"])})
                if path == "/LIB/collections":
                    objs = [api.collection_obj(c) for c in sorted(api.collections.values(),
                                                                  key=lambda c: c["version"])
                            if c["version"] > since]
                    return self._listing(objs, q)
                if path == "/LIB/deleted":
                    if "since" not in q:
                        return self._send(400, "'since' parameter must be provided")
                    out = {"collections": [], "items": [], "searches": [], "tags": [], "settings": []}
                    for version, kind, key in api.deletions:
                        if version > since:
                            out[kind].append(key)
                    return self._send(200, out, {"Last-Modified-Version": str(api.version)})
            self._send(404, "Not found")

        def do_POST(self) -> None:
            self._read_body()
            api.requests.append(("POST", self.path, dict(self.headers)))
            if self._injected():
                return
            path, _ = self._route()
            if api.local and path == "/local/authorize":     # Zotero 10: the user clicked "Always Allow"
                if self.headers.get("Zotero-Server-ID") != api.server_id:
                    return self._send(428, "Zotero-Server-ID not provided")
                return self._send(200, {"key": api.api_key, "remember": True})
            if path != "/LIB/items":
                return self._send(404, "Not found")
            if not self._write_allowed():
                return
            objects = self._body()
            if not isinstance(objects, list) or len(objects) > 50:
                return self._send(400, "Body must be a JSON array of at most 50 objects")
            with api.lock:
                token = self.headers.get("Zotero-Write-Token")
                if token is not None:
                    if token in api.used_write_tokens:
                        return self._send(412, "Write token already used")
                    api.used_write_tokens.add(token)
                if_unmod = self.headers.get("If-Unmodified-Since-Version")
                if if_unmod is not None and int(if_unmod) != api.version:
                    return self._send(412, f"Library has been modified since specified version "
                                           f"(expected {if_unmod}, found {api.version})")
                result = {"successful": {}, "success": {}, "unchanged": {}, "failed": {}}
                for i, obj in enumerate(objects):
                    idx, key = str(i), obj.get("key")
                    parent, colls = obj.get("parentItem"), obj.get("collections") or []
                    if parent and colls:
                        result["failed"][idx] = {"key": key, "code": 400,
                                                 "message": "Child items cannot be assigned to collections"}
                    elif parent and parent not in api.items:
                        result["failed"][idx] = {"key": key, "code": 400,
                                                 "message": f"Parent item {parent} doesn't exist"}
                    elif any(c not in api.collections for c in colls):
                        missing = next(c for c in colls if c not in api.collections)
                        result["failed"][idx] = {"key": key, "code": 409,
                                                 "message": f"Collection {missing} doesn't exist"}
                    else:
                        data = {k: v for k, v in obj.items() if k != "version"}
                        if parent:
                            data.pop("collections", None)
                        data = api.add_item(data)
                        result["successful"][idx] = api.item_obj(data)
                        api.created_by_post.append(data["key"])
                        result["success"][idx] = data["key"]
                self._send(200, result, {"Last-Modified-Version": str(api.version), **api.success_headers})

        def do_PATCH(self) -> None:
            self._read_body()
            api.requests.append(("PATCH", self.path, dict(self.headers)))
            if self._injected():
                return
            path, _ = self._route()
            if not path.startswith("/LIB/items/"):
                return self._send(404, "Not found")
            if not self._write_allowed():
                return
            key = path.rsplit("/", 1)[1]
            body = self._body() or {}
            with api.lock:
                if key not in api.items:
                    return self._send(404, "Not found")
                current = api.items[key]
                given = self.headers.get("If-Unmodified-Since-Version") or body.get("version")
                if given is None:
                    return self._send(428, "If-Unmodified-Since-Version not provided")
                if int(given) != current["version"]:
                    return self._send(412, f"Item has been modified since specified version "
                                           f"(expected {given}, found {current['version']})")
                if current.get("parentItem") and body.get("collections"):
                    return self._send(400, "Child items cannot be assigned to collections")
                api.modify(key, **{k: v for k, v in body.items() if k not in ("key", "version")})
                self._send(204, None, {"Last-Modified-Version": str(api.version), **api.success_headers})

    return Handler
