"""The request side of the fake Zotero API: a route table of small handlers, one per endpoint.

``tests.fakes.zotero_web_api`` holds the library state and its wire shapes; this module reads requests, applies the
API's checks (keys, server id, versions, write tokens) and answers from that state.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlencode, urlparse

if TYPE_CHECKING:
    from tests.fakes.zotero_web_api import FakeZoteroAPI

ITEM_FIELDS = ["title", "abstractNote", "publicationTitle", "date", "DOI", "url", "extra"]


def make_handler(api: FakeZoteroAPI) -> type[BaseHTTPRequestHandler]:
    """A handler class bound to ``api`` and its route table."""
    return type("Handler", (_Handler,), {"api": api, "routes": _routes(api)})


_Route = tuple[str, "re.Pattern[str]", Callable[["_Handler", "re.Match[str]", dict], None]]


class _Handler(BaseHTTPRequestHandler):
    """Reads the request, applies injected failures, then answers from the first matching route (else 404)."""

    protocol_version = "HTTP/1.1"
    api: FakeZoteroAPI
    routes: list[_Route]

    def log_message(self, *args) -> None:  # keep test output clean
        pass

    # -- helpers --
    def _send(self, status: int, body=None, headers: dict | None = None) -> None:
        if body is None:
            raw = b""
        elif isinstance(body, bytes):
            raw = body
        elif isinstance(body, str):
            raw = body.encode()
        else:
            raw = json.dumps(body).encode()
        self.send_response(status)
        ctype = "application/json" if body is not None and not isinstance(body, str) else "text/plain"
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(raw)))
        self.send_header("Zotero-API-Version", "3")
        if self.api.local:
            self.send_header("Zotero-Server-ID", self.api.server_id)
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
        """The path with the API prefix dropped and the library part written ``/LIB``, and the query."""
        api = self.api
        url = urlparse(self.path)
        path = url.path
        prefix = "/api" if api.local else ""
        if prefix and path.startswith(prefix):
            path = path[len(prefix) :] or "/"
        lib_paths = [f"/{api.library_type}s/{api.library_id}"]
        if api.local:
            lib_paths.append(f"/{api.library_type}s/0")
        for lp in lib_paths:
            if path.startswith(lp):
                path = "/LIB" + path[len(lp) :]
        return path, {k: v[0] for k, v in parse_qs(url.query).items()}

    def _choose_library(self) -> None:
        """A request under ``/groups/<id>`` is answered from that group's state (``FakeZoteroAPI.add_group``)."""
        owner = type(self).api
        self.api, self.routes = owner, type(self).routes
        match = re.match(r"(?:/api)?/groups/(\d+)(?:/|$)", urlparse(self.path).path)
        group = owner.groups.get(int(match.group(1))) if match else None
        if group is not None:
            self.api, self.routes = group, _routes(group)

    def _injected(self) -> bool:
        api = self.api
        if api.latency_s:
            time.sleep(api.latency_s)
        with api.lock:
            for i, (methods, status, headers) in enumerate(api.injected):
                if self.command in methods:
                    api.injected.pop(i)
                    self._send(status, "Too many requests — please slow down" if status == 429 else "Error", headers)
                    return True
        return False

    def _write_allowed(self) -> bool:
        """Send the refusal and say False when the request may not write."""
        refusal = _local_write_refusal(self) if self.api.local else _web_write_refusal(self)
        if refusal:
            self._send(*refusal)
            return False
        return True

    def _listing(self, objects: list[dict], q: dict) -> None:
        start, limit = int(q.get("start", 0)), int(q.get("limit", 25))
        page = objects[start : start + limit]
        headers = {"Total-Results": str(len(objects)), "Last-Modified-Version": str(self.api.version)}
        if start + limit < len(objects):
            url = urlparse(self.path)
            nxt = {**q, "start": str(start + limit), "limit": str(limit)}
            last = {**q, "start": str(len(objects) - 1)}
            host = f"http://{self.headers.get('Host')}"
            headers["Link"] = (
                f'<{host}{url.path}?{urlencode(nxt)}>; rel="next", <{host}{url.path}?{urlencode(last)}>; rel="last"'
            )
        self._send(200, page, headers)

    def _dispatch(self, method: str) -> None:
        if method != "GET":
            self._read_body()
        self._choose_library()
        self.api.requests.append((method, self.path, dict(self.headers)))
        if self._injected():
            return
        path, q = self._route()
        # reads answer from one consistent state; writes take the lock themselves once the request is checked
        with self.api.lock if method == "GET" else contextlib.nullcontext():
            for route_method, pattern, handler in self.routes:
                match = pattern.fullmatch(path)
                if route_method == method and match:
                    return handler(self, match, q)
        self._send(404, "Not found")

    # -- verbs --
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")


def _routes(api: FakeZoteroAPI) -> list[_Route]:
    """(method, path pattern, handler) in match order; paths are as ``_Handler._route`` rewrites them."""
    item = re.compile(r"/LIB/items/(?:.*/)?([^/]*)", re.DOTALL)  # the last path segment is the key
    routes: list[_Route] = [
        ("GET", re.compile(r"/?"), _get_root),
        ("GET", re.compile(rf"/keys/(?:current|{re.escape(api.api_key)})"), _get_key_info),
        ("GET", re.compile(r"/itemFields"), _get_item_fields),
    ]
    if not api.local:  # the local API has neither templates nor the library's fulltext versions
        routes.append(("GET", re.compile(r"/items/new"), _get_item_template))
    routes.append(("GET", re.compile(r"/LIB/items"), _get_items))
    if not api.local:
        routes.append(("GET", re.compile(r"/LIB/fulltext"), _get_fulltext_versions))
    routes += [
        ("GET", re.compile(r"/LIB/items/([^/]*)(?:/.*)?/fulltext", re.DOTALL), _get_item_fulltext),
        ("GET", item, _get_item),
        ("GET", re.compile(r"/LIB/collections"), _get_collections),
        ("GET", re.compile(r"/LIB/deleted"), _get_deleted),
        ("GET", re.compile(r"/LIB/groups"), _get_groups),
        ("POST", re.compile(r"/LIB/items"), _post_items),
        ("PATCH", item, _patch_item),
    ]
    if api.local:
        routes.insert(0, ("POST", re.compile(r"/local/authorize"), _post_local_authorize))
    return routes


def _since(q: dict) -> int:
    return int(q.get("since", 0))


def _version_header(version: int) -> dict[str, str]:
    return {"Last-Modified-Version": str(version)}


def _local_write_refusal(h: _Handler) -> tuple[int, str] | None:
    """Zotero 10's local API: the server id (428 missing, 412 other server), then the local key (403)."""
    sid = h.headers.get("Zotero-Server-ID")
    if not sid:
        return 428, "Zotero-Server-ID not provided"
    if sid != h.api.server_id:
        return 412, "Zotero-Server-ID does not match"
    if h.headers.get("Zotero-API-Key") != h.api.api_key:
        return 403, "Invalid local API key"
    return None


def _web_write_refusal(h: _Handler) -> tuple[int, str] | None:
    return None if _has_key(h) else (403, "Write access denied")


def _has_key(h: _Handler) -> bool:
    key = h.api.api_key
    return h.headers.get("Authorization", "") == f"Bearer {key}" or h.headers.get("Zotero-API-Key") == key


# -- GET --------------------------------------------------------------------
def _get_root(h: _Handler, match: re.Match[str], q: dict) -> None:
    h._send(200, "Nothing to see here.")


def _get_groups(h: _Handler, match: re.Match[str], q: dict) -> None:
    if not h.api.local and not _has_key(h):
        return h._send(403, "Forbidden")
    if h.api.group_status != 200:
        return h._send(h.api.group_status, "Forbidden")
    h._send(200, h.api.group_objs(), _version_header(h.api.version))


def _get_key_info(h: _Handler, match: re.Match[str], q: dict) -> None:
    api = h.api
    if not _has_key(h):
        return h._send(403, "Invalid key")
    h._send(
        200,
        {
            "key": api.api_key,
            "userID": api.key_user_id,
            "username": "tester",
            "displayName": "Tester",
            "access": api.key_access,
        },
    )


def _get_item_fields(h: _Handler, match: re.Match[str], q: dict) -> None:
    h._send(200, [{"field": f, "localized": f} for f in ITEM_FIELDS])


def _get_item_template(h: _Handler, match: re.Match[str], q: dict) -> None:
    if q.get("itemType") != "note":
        return h._send(400, "Only note templates in this fake")
    h._send(200, {"itemType": "note", "note": "", "tags": [], "collections": [], "relations": {}})


def _listed_item(data: dict, q: dict, since: int) -> bool:
    """``since``, ``includeTrashed`` and ``itemType`` as the listing applies them."""
    if data["version"] <= since:
        return False
    if data.get("deleted") and q.get("includeTrashed") != "1":
        return False
    return not q.get("itemType") or data.get("itemType") == q["itemType"]


def _get_items(h: _Handler, match: re.Match[str], q: dict) -> None:
    api, since = h.api, _since(q)
    ordered = sorted(api.items.values(), key=lambda d: d["version"])
    h._listing([api.item_obj(d) for d in ordered if _listed_item(d, q, since)], q)


def _get_fulltext_versions(h: _Handler, match: re.Match[str], q: dict) -> None:
    api, since = h.api, _since(q)
    h._send(200, {k: v for k, (v, _) in api.fulltext.items() if v > since}, _version_header(api.version))


def _get_item_fulltext(h: _Handler, match: re.Match[str], q: dict) -> None:
    key = match.group(1)
    if key not in h.api.fulltext:
        return h._send(404, "Not found")
    version, body = h.api.fulltext[key]
    h._send(200, body, _version_header(version))


def _get_item(h: _Handler, match: re.Match[str], q: dict) -> None:
    key = match.group(1)
    if key not in h.api.items:
        return h._send(404, "Not found")
    data = h.api.items[key]
    h._send(200, h.api.item_obj(data), _version_header(data["version"]))


def _get_collections(h: _Handler, match: re.Match[str], q: dict) -> None:
    api, since = h.api, _since(q)
    ordered = sorted(api.collections.values(), key=lambda c: c["version"])
    h._listing([api.collection_obj(c) for c in ordered if c["version"] > since], q)


def _get_deleted(h: _Handler, match: re.Match[str], q: dict) -> None:
    if "since" not in q:
        return h._send(400, "'since' parameter must be provided")
    since = _since(q)
    out: dict[str, list[str]] = {"collections": [], "items": [], "searches": [], "tags": [], "settings": []}
    for version, kind, key in h.api.deletions:
        if version > since:
            out[kind].append(key)
    h._send(200, out, _version_header(h.api.version))


# -- POST / PATCH -------------------------------------------------------------
def _post_local_authorize(h: _Handler, match: re.Match[str], q: dict) -> None:
    """Zotero 10: the user clicked "Always Allow"."""
    if h.headers.get("Zotero-Server-ID") != h.api.server_id:
        return h._send(428, "Zotero-Server-ID not provided")
    h._send(200, {"key": h.api.api_key, "remember": True})


def _post_precondition_failure(h: _Handler) -> str | None:
    """412 reasons, checked in order: a reused ``Zotero-Write-Token``, a stale ``If-Unmodified-Since-Version``.

    A fresh token is recorded as used even when the version check then fails, as before."""
    api = h.api
    token = h.headers.get("Zotero-Write-Token")
    if token is not None:
        if token in api.used_write_tokens:
            return "Write token already used"
        api.used_write_tokens.add(token)
    if_unmod = h.headers.get("If-Unmodified-Since-Version")
    if if_unmod is not None and int(if_unmod) != api.version:
        return f"Library has been modified since specified version (expected {if_unmod}, found {api.version})"
    return None


def _object_failure(api: FakeZoteroAPI, obj: dict) -> tuple[int, str] | None:
    """Why the API would refuse one object of a POST (code, message), or None."""
    parent, colls = obj.get("parentItem"), obj.get("collections") or []
    if parent and colls:
        return 400, "Child items cannot be assigned to collections"
    if parent and parent not in api.items:
        return 400, f"Parent item {parent} doesn't exist"
    missing = [c for c in colls if c not in api.collections]
    if missing:
        return 409, f"Collection {missing[0]} doesn't exist"
    return None


def _create_posted(api: FakeZoteroAPI, obj: dict) -> dict:
    data = {k: v for k, v in obj.items() if k != "version"}
    if obj.get("parentItem"):
        data.pop("collections", None)
    data = api.add_item(data)
    api.created_by_post.append(data["key"])
    return data


def _post_items(h: _Handler, match: re.Match[str], q: dict) -> None:
    if not h._write_allowed():
        return
    objects = h._body()
    if not isinstance(objects, list) or len(objects) > 50:
        return h._send(400, "Body must be a JSON array of at most 50 objects")
    api = h.api
    with api.lock:
        failure = _post_precondition_failure(h)
        if failure:
            return h._send(412, failure)
        result: dict[str, dict] = {"successful": {}, "success": {}, "unchanged": {}, "failed": {}}
        for i, obj in enumerate(objects):
            idx, refused = str(i), _object_failure(api, obj)
            if refused:
                result["failed"][idx] = {"key": obj.get("key"), "code": refused[0], "message": refused[1]}
                continue
            data = _create_posted(api, obj)
            result["successful"][idx] = api.item_obj(data)
            result["success"][idx] = data["key"]
        h._send(200, result, {**_version_header(api.version), **api.success_headers})


def _patch_failure(current: dict, given, body: dict) -> tuple[int, str] | None:
    """428 without a version, 412 when it is stale, 400 for collections on a child item."""
    if given is None:
        return 428, "If-Unmodified-Since-Version not provided"
    if int(given) != current["version"]:
        return 412, f"Item has been modified since specified version (expected {given}, found {current['version']})"
    if current.get("parentItem") and body.get("collections"):
        return 400, "Child items cannot be assigned to collections"
    return None


def _patch_item(h: _Handler, match: re.Match[str], q: dict) -> None:
    if not h._write_allowed():
        return
    key, body, api = match.group(1), h._body() or {}, h.api
    with api.lock:
        if key not in api.items:
            return h._send(404, "Not found")
        given = h.headers.get("If-Unmodified-Since-Version") or body.get("version")
        failure = _patch_failure(api.items[key], given, body)
        if failure:
            return h._send(*failure)
        api.modify(key, **{k: v for k, v in body.items() if k not in ("key", "version")})
        h._send(204, None, {**_version_header(api.version), **api.success_headers})
