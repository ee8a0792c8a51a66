"""One SQLite write transaction, the way every store here needs it.

``BEGIN IMMEDIATE`` takes the write lock up front, so two processes queue on
``busy_timeout`` instead of failing with ``SQLITE_BUSY_SNAPSHOT`` when a deferred
transaction tries to upgrade from read to write (reliability-perf-anchors §2.1).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from zocrates_nb.storage.space import write_problem


@contextmanager
def immediate_transaction(
    conn: sqlite3.Connection, lock: threading.Lock | threading.RLock
) -> Iterator[sqlite3.Connection]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on ``conn`` (autocommit mode), ``ROLLBACK`` on any error.

    ``lock`` serialises threads sharing the connection within this process.
    """
    with lock:
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def enable_wal(conn: sqlite3.Connection, timeout: float = 30.0) -> None:
    """``PRAGMA journal_mode = WAL``, waiting up to ``timeout`` s for other processes.

    Why not just the pragma: switching a database to WAL needs an exclusive lock, and SQLite may
    answer "database is locked" at once, without calling the busy handler, while another process
    is creating or opening the same new file (seen with two processes seeding the demo library).
    Once the pragma runs, its answer stands (as before): a database that cannot use WAL (in
    memory, some network file systems) keeps its own mode and is not retried.
    """
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            contended = "locked" in str(exc) or "busy" in str(exc)
            if not contended or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(0.25, delay * 2)


def connect_reading(path: str | Path, **kwargs: Any) -> sqlite3.Connection:
    """A reader for a check or a count: plain ``mode=ro`` where the directory can be written (a locked
    or damaged store then says so), ``connect_read_only`` where it cannot."""
    if write_problem(Path(path)):
        return connect_read_only(path, **kwargs)
    return sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, **kwargs)


def has_unapplied_wal(path: str | Path) -> bool:
    """Whether ``path`` has a non-empty ``-wal``: commits that a reader which cannot write beside the
    file (``immutable``) does not see, so a check from there would judge a file missing its last pages."""
    wal = Path(path).with_name(Path(path).name + "-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


def connect_read_only(path: str | Path, **kwargs: Any) -> sqlite3.Connection:
    """A connection that never writes ``path``'s directory: for a data directory that cannot be written.

    Why three tries: ``mode=ro`` still creates the ``-shm`` file of a WAL database (it cannot on a
    read-only mount, nor reliably on a full disk), while ``immutable=1`` opens anything but ignores a
    ``-wal`` file: a store whose last commits wait there would read as stale or even "malformed". So
    ``mode=ro`` first (it sees such a WAL when its ``-shm`` exists); then, with a non-empty ``-wal``,
    a private copy of the two files elsewhere (``_applied_copy``); else ``immutable=1``. The caller
    has already refused every write.
    """
    uri = Path(path).resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, **kwargs)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
    copied = _applied_copy(Path(path), **kwargs)
    if copied is not None:
        return copied
    conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, **kwargs)
    conn.execute("PRAGMA schema_version").fetchone()
    return conn


def _applied_copy(path: Path, **kwargs: Any) -> sqlite3.Connection | None:
    """``path`` and its non-empty ``-wal`` copied to the temporary folder, the log applied there and the
    copy's files unlinked while open (Linux keeps reading them): None without a log, or without room."""
    if not has_unapplied_wal(path):
        return None
    wal = path.with_name(path.name + "-wal")
    folder = Path(tempfile.mkdtemp(prefix="zocrates-ro-"))
    try:
        shutil.copyfile(path, folder / path.name)
        shutil.copyfile(wal, folder / wal.name)
        conn = sqlite3.connect(str(folder / path.name), **kwargs)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("PRAGMA journal_mode = DELETE")
        return conn
    except (OSError, sqlite3.Error):
        return None  # no room for a copy either: the caller reads the file as it is
    finally:
        shutil.rmtree(folder, ignore_errors=True)
