"""Writers: how a note reaches Zotero when the library itself is read from a snapshot.

A desktop source (``zotero.sqlite``) is read-only: Zotero owns that file. Notes are
written through Zotero's own doors instead, tried in this order (``writer.kind = auto``):

1. **Zotero 10's local API** (``http://127.0.0.1:23119/api/users/0/items``): needs a local key
   the user approved once (``zocrates-nb library writer local``) and the ``Zotero-Server-ID``
   header (428 without, 412 when Zotero restarted with another id: we fetch it again);
2. **the Web API** (``https://api.zotero.org/users/<id>/items``): the note comes back into
   ``zotero.sqlite`` when Zotero syncs.

Exactly once: every note gets its Zotero key *on our side* (an outbox entry's id is its
future Zotero key) and a ``Zotero-Write-Token``. A retry after a crash between Zotero's
200 and our bookkeeping re-sends the same token; Zotero answers "412 Write token already
used", and ``GET items/KEY`` confirms the note is there. So a note is never written twice
and never given a second key.

HTTP is plain ``urllib`` (stdlib): a write is one request with a handful of headers.
Errors split in two: ``WriterUnavailable`` (5xx, 429, timeout, offline: keep the note in
the outbox and try later) and ``LibraryError`` (Zotero refused it: say why).
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from zocrates_nb.errors import LibraryError

WEB_API = "https://api.zotero.org"
LOCAL_API = "http://127.0.0.1:23119/api"
_TIMEOUT_S = 15.0


class WriterUnavailable(LibraryError):
    """Zotero could not be reached or answered 5xx/429: nothing was refused, try again later."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


def http_json(method: str, url: str, headers: dict[str, str], body: Any = None, timeout: float = _TIMEOUT_S) -> Reply:
    """One HTTP exchange with JSON in and out. Transport failures become ``WriterUnavailable``."""
    data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Zotero-API-Version": "3", **headers, **({"Content-Type": "application/json"} if data else {})},
    )
    try:
        raw, status, got = _exchange(request, timeout)
    except http.client.HTTPException as exc:  # IncompleteRead, BadStatusLine, …: the answer broke off
        raise WriterUnavailable(
            f"Zotero's answer from {url.split('?')[0]} broke off ({type(exc).__name__}: {str(exc)[:120]}).",
            "The note waits in the outbox; `zocrates-nb outbox push` sends it again later "
            "(its write token keeps Zotero from saving it twice).",
        ) from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise WriterUnavailable(
            f"Cannot reach Zotero at {url.split('?')[0]}: {reason}.",
            "The note waits in the outbox; `zocrates-nb outbox push` sends it later.",
        ) from exc
    text = raw.decode("utf-8", "replace")
    try:
        parsed = json.loads(text) if text and got.get("Content-Type", "").startswith("application/json") else text
    except json.JSONDecodeError:
        parsed = text
    return Reply(status, {k.lower(): v for k, v in got.items()}, parsed)


def _exchange(request: urllib.request.Request, timeout: float) -> tuple[bytes, int, dict[str, str]]:
    """(body, status, headers) of one request; an HTTP error status is an answer too.

    Why ``http_json`` also catches ``http.client.HTTPException``: a reply cut short (``Content-Length``
    larger than the body, then the connection closes) raises ``IncompleteRead`` from ``read()``,
    which is no ``OSError``; it means "no answer", like an outage, not a refusal.
    """
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http(s) checked by config)
            return response.read(), response.status, dict(response.headers.items())
    except urllib.error.HTTPError as exc:
        return exc.read(), exc.code, dict(exc.headers.items())


@dataclass
class NoteWriter:
    """Creates notes in one Zotero library over HTTP (Web API or Zotero 10's local API)."""

    kind: str  # "zotero-web" | "zotero-local"
    base_url: str
    library_path: str  # "users/475425", "groups/12345", "users/0" (local)
    api_key: str = field(repr=False)
    server_id: str | None = None  # local API only
    timeout: float = _TIMEOUT_S

    def _headers(self) -> dict[str, str]:
        headers = {"Zotero-API-Key": self.api_key}
        if self.kind == "zotero-local":
            headers["Zotero-Server-ID"] = self.server_id or self._fetch_server_id()
        return headers

    def _fetch_server_id(self) -> str:
        reply = http_json("GET", f"{self.base_url.rstrip('/')}/", {}, timeout=self.timeout)
        server_id = reply.headers.get("zotero-server-id")
        if not server_id:
            raise WriterUnavailable(
                "Zotero's local API did not send a Zotero-Server-ID (Zotero 7–9 cannot write through the local API).",
                "Update to Zotero 10, or use the Web API: `zocrates-nb library writer web`.",
            )
        self.server_id = server_id
        return server_id

    def in_library(self, library_path: str) -> NoteWriter:
        """This writer aimed at another library (``groups/<groupID>``: a note saved into a group); "": itself."""
        return dataclasses.replace(self, library_path=library_path) if library_path else self

    def _url(self, tail: str) -> str:
        return f"{self.base_url.rstrip('/')}/{self.library_path}/{tail}"

    def fetch(self, key: str) -> dict | None:
        """The item object for ``key``, or None when Zotero does not have it."""
        reply = http_json("GET", self._url(f"items/{key}"), self._headers(), timeout=self.timeout)
        self._raise_for_transient(reply)
        return reply.body if reply.status == 200 and isinstance(reply.body, dict) else None

    def item_state(self, key: str) -> str:
        """What Zotero says about ``key``: present | trashed | gone (404) | unknown (any other answer).

        Why: a note written here may be trashed or deleted in Zotero before Zotero ever syncs
        it down; only the writer's side can tell, and then sync must stop waiting for it.
        Raises ``WriterUnavailable`` when Zotero cannot be asked now.
        """
        reply = http_json("GET", self._url(f"items/{key}"), self._headers(), timeout=self.timeout)
        self._raise_for_transient(reply)
        if reply.status == 404:
            return "gone"
        if reply.status != 200 or not isinstance(reply.body, dict):
            return "unknown"
        body: dict = reply.body
        data = body["data"] if isinstance(body.get("data"), dict) else body
        return "trashed" if data.get("deleted") in (1, True, "1") else "present"

    def create_note(
        self,
        key: str,
        html: str,
        *,
        write_token: str,
        parent_key: str | None = None,
        collection_keys: Sequence[str] = (),
    ) -> dict:
        """Write the note with our ``key`` and ``write_token``; return Zotero's item object."""
        note = {
            "key": key,
            "itemType": "note",
            "note": html,
            "tags": [],
            "relations": {},
            "collections": [] if parent_key else list(collection_keys),
        }
        if parent_key:
            note["parentItem"] = parent_key
        reply = http_json(
            "POST",
            self._url("items"),
            {**self._headers(), "Zotero-Write-Token": write_token},
            [note],
            timeout=self.timeout,
        )
        if reply.status == 412 and self.kind == "zotero-local" and "Server-ID" in str(reply.body):
            self.server_id = None  # Zotero restarted: fetch the new id and send once more
            reply = http_json(
                "POST",
                self._url("items"),
                {**self._headers(), "Zotero-Write-Token": write_token},
                [note],
                timeout=self.timeout,
            )
        self._raise_for_transient(reply)
        if reply.status == 412 and "token" in str(reply.body).lower():
            return self._confirm_earlier_write(key)
        if reply.status != 200 or not isinstance(reply.body, dict):
            raise self._refused(reply)
        return self._created_object(key, reply.body)

    def _confirm_earlier_write(self, key: str) -> dict:
        """Our token was already used: an earlier attempt reached Zotero. Confirm by key."""
        obj = self.fetch(key)
        if obj is None:
            raise WriterUnavailable(
                f"Zotero has seen this note's write token but not note {key} yet.",
                "Run `zocrates-nb outbox push` again in a minute.",
            )
        return obj

    def _created_object(self, key: str, body: dict) -> dict:
        failed = body.get("failed") or {}
        if failed:
            entry = next(iter(failed.values()))
            raise LibraryError(
                f"Zotero refused note {key} (HTTP {entry.get('code')}): {entry.get('message')}",
                "Check the parent paper or collection (run `zocrates-nb sync`), then "
                "`zocrates-nb outbox push`; `zocrates-nb outbox export DIR` keeps a copy.",
            )
        obj = (body.get("successful") or {}).get("0")
        if obj is None and (body.get("success") or body.get("unchanged")):
            obj = self.fetch(key)
        if obj is None:
            raise WriterUnavailable(f"Zotero did not confirm note {key}.", "Run `zocrates-nb outbox push` again.")
        return obj

    @staticmethod
    def _raise_for_transient(reply: Reply) -> None:
        if reply.status >= 500 or reply.status == 429:
            raise WriterUnavailable(
                f"Zotero answered HTTP {reply.status} ({str(reply.body)[:120]}).",
                "The note waits in the outbox; `zocrates-nb outbox push` sends it later.",
            )

    def _refused(self, reply: Reply) -> LibraryError:
        if reply.status == 403:
            return LibraryError(
                f"Zotero refused the key ({self.kind}): HTTP 403 {str(reply.body)[:120]}.",
                "Set up the writer again: `zocrates-nb library writer local` or "
                "`zocrates-nb library writer web --api-key-env ENV`.",
            )
        return LibraryError(
            f"Zotero refused the note: HTTP {reply.status} {str(reply.body)[:200]}.",
            "`zocrates-nb outbox list` shows it; `zocrates-nb outbox export DIR` keeps a copy.",
        )


# ----------------------------------------------------------------------------- the Web API key


@dataclass(frozen=True)
class KeyInfo:
    user_id: int
    username: str
    can_write_user_notes: bool
    writable_groups: tuple[str, ...]  # group ids, or ("all",)


def key_info(base_url: str, api_key: str, timeout: float = _TIMEOUT_S) -> KeyInfo:
    """``GET /keys/current``: whose key it is and what it may write."""
    reply = http_json("GET", f"{base_url.rstrip('/')}/keys/current", {"Zotero-API-Key": api_key}, timeout=timeout)
    NoteWriter._raise_for_transient(reply)
    if reply.status != 200 or not isinstance(reply.body, dict):
        raise LibraryError(
            f"Zotero did not accept the API key (HTTP {reply.status}).",
            "Create a key at zotero.org/settings/keys (library, notes and write access) and "
            "run `zocrates-nb library writer web --api-key-env ENV` again.",
        )
    access = reply.body.get("access") or {}
    user = access.get("user") or {}
    groups = access.get("groups") or {}
    return KeyInfo(
        int(reply.body.get("userID") or 0),
        str(reply.body.get("username") or ""),
        bool(user.get("library") and user.get("notes") and user.get("write")),
        tuple(str(g) for g, rights in groups.items() if (rights or {}).get("write")),
    )


def check_web_key(
    info: KeyInfo, *, library_type: str, library_id: str, desktop_user_id: int | None, desktop: bool
) -> None:
    """Refuse a key that would write where the notes never come back (pure; raises LibraryError)."""
    if library_type == "group":
        if not ({"all", str(library_id)} & set(info.writable_groups)):
            raise LibraryError(
                f"This API key may not write to group {library_id}.",
                "Give the key write access to the group at zotero.org/settings/keys.",
            )
        return
    if not info.can_write_user_notes:
        raise LibraryError(
            "This API key may not write notes to your library.",
            "Edit the key at zotero.org/settings/keys: allow library access, notes and write access.",
        )
    if str(info.user_id) != str(library_id):
        raise LibraryError(
            f"The API key belongs to user {info.user_id}, not library {library_id}.",
            "Use a key of that account, or omit --library-id.",
        )
    if desktop and desktop_user_id is None:
        raise LibraryError(
            "This Zotero desktop library was never synced with a zotero.org account, so notes "
            "written through the Web API would never appear in it.",
            "Sign in and sync in Zotero (Settings → Sync), or use Zotero 10's local API: "
            "`zocrates-nb library writer local`. Until then notes wait in the outbox.",
        )
    if desktop and str(desktop_user_id) != str(info.user_id):
        raise LibraryError(
            f"This Zotero desktop library syncs with account {desktop_user_id}, but the API key "
            f"belongs to account {info.user_id}: notes would go to another library.",
            "Create a key for the account this Zotero syncs with (zotero.org/settings/keys).",
        )
