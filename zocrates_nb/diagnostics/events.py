"""Append-only diagnostics events, one JSON line each, one file per process.

Why this shape: DuckDB allows one writing process per database file, and several
kernels log at once. So nobody writes DuckDB: each process appends to its own
``events-<host>-<pid>-<start>.jsonl`` (``O_APPEND``, one ``write()`` per record, no
fsync — losing the last few events on a crash is acceptable), and
``views.Diagnostics`` reads all the segments together. A torn last line left by a
killed process is skipped by the reader.

Logging must never break the work being logged: ``emit`` catches every failure,
warns once through ``logging`` and carries on.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

EVENT_KINDS = ("sync", "search", "read", "llm", "save", "eval", "answer")
_PROCESS_START = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
_HOST = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())[:40] or "host"

# One open descriptor per (directory, pid): every EventLog of a process shares its segment.
_fds: dict[tuple[str, int], int] = {}
_fds_lock = threading.Lock()


def new_session_id() -> str:
    return uuid.uuid4().hex[:12]


_last_ts_us = 0
_ts_lock = threading.Lock()


def _utc_now_iso() -> str:
    """ISO UTC with microseconds, strictly increasing within a process.

    Why: views order a session's events by ``ts`` ("was this result read AFTER the
    search?"); two events in the same microsecond would otherwise tie.
    """
    global _last_ts_us
    with _ts_lock:
        now_us = max(time.time_ns() // 1000, _last_ts_us + 1)
        _last_ts_us = now_us
    stamp = datetime.fromtimestamp(now_us // 1_000_000, tz=UTC).replace(microsecond=now_us % 1_000_000)
    return stamp.isoformat(timespec="microseconds").replace("+00:00", "Z")


#: segments whose last record was cut short (a full disk): the next record starts on a new line
_torn: set[int] = set()


class EventLog:
    """Writes events for one session into this process's segment of ``directory``."""

    def __init__(self, directory: str | os.PathLike, session: str | None = None) -> None:
        self.directory = Path(directory)
        self.session = session or new_session_id()
        self._warned = False

    def __repr__(self) -> str:
        return f"EventLog({str(self.directory)!r}, session={self.session!r})"

    @property
    def path(self) -> Path:
        """This process's segment (a forked child gets its own, by pid)."""
        return self.directory / f"events-{_HOST}-{os.getpid()}-{_PROCESS_START}.jsonl"

    def with_session(self, session: str | None = None) -> EventLog:
        """Same directory, another session (e.g. one per chat)."""
        return EventLog(self.directory, session)

    def _fd(self) -> int:
        key = (str(self.directory), os.getpid())
        fd = _fds.get(key)
        if fd is None:
            with _fds_lock:
                fd = _fds.get(key)
                if fd is None:
                    self.directory.mkdir(parents=True, exist_ok=True)
                    fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                    _fds[key] = fd
        return fd

    def emit(self, kind: str, **fields: Any) -> None:
        """Append one event ``{ts, kind, session, **fields}``. Never raises."""
        try:
            record = {"ts": _utc_now_iso(), "kind": kind, "session": fields.pop("session", None) or self.session}
            record.update(fields)
            line = (json.dumps(record, ensure_ascii=False, default=str, allow_nan=False) + "\n").encode("utf-8")
            fd = self._fd()
            if fd in _torn:  # a record cut short before (a full disk): end its line, or this one joins it
                line = b"\n" + line
            _torn.add(fd)  # until this write is known to be whole
            written = os.write(fd, line)  # one write per record: O_APPEND keeps records whole
            if written != len(line):
                raise OSError(f"short write ({written} of {len(line)} bytes)")
            _torn.discard(fd)
        except Exception as exc:  # noqa: BLE001 — diagnostics must not break the caller; warned below
            if not self._warned:
                self._warned = True
                log.warning(
                    "zocrates_nb diagnostics: could not record a %r event in %s (%s: %s); "
                    "further failures of this log are not reported.",
                    kind,
                    self.directory,
                    exc.__class__.__name__,
                    exc,
                )

    @contextmanager
    def timed(self, kind: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """Emit ``kind`` with ``latency_ms`` when the block ends; the block may add fields to the dict."""
        extra: dict[str, Any] = dict(fields)
        start = time.perf_counter()
        try:
            yield extra
        finally:
            extra.setdefault("latency_ms", round((time.perf_counter() - start) * 1000, 3))
            self.emit(kind, **extra)


class NullEventLog(EventLog):
    """An EventLog that records nothing (tests, or diagnostics switched off)."""

    def __init__(self, directory: str | os.PathLike | None = None, session: str | None = None) -> None:
        self.directory = Path(directory) if directory else Path(os.devnull)
        self.session = session or new_session_id()
        self._warned = False

    def __repr__(self) -> str:
        return f"NullEventLog(session={self.session!r})"

    def with_session(self, session: str | None = None) -> NullEventLog:
        return NullEventLog(None, session)

    def emit(self, kind: str, **fields: Any) -> None:
        return None
