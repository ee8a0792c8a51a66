"""sqlite_tx.enable_wal waits for another process's lock instead of failing at once."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from zocrates_nb.storage.sqlite_tx import enable_wal


def test_wal_is_enabled_once_the_other_lock_is_released(tmp_path):
    path = tmp_path / "new.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE t(x)")
    threading.Timer(0.3, lambda: holder.execute("COMMIT")).start()
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    started = time.monotonic()
    enable_wal(other, timeout=10)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert time.monotonic() - started >= 0.2  # it waited for the lock, it did not fail


def test_a_lock_held_past_the_timeout_is_reported(tmp_path):
    path = tmp_path / "held.sqlite"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("CREATE TABLE t(x)")
    other = sqlite3.connect(path, isolation_level=None, timeout=0)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enable_wal(other, timeout=0.3)
    holder.execute("COMMIT")


def test_a_database_that_cannot_use_wal_keeps_its_mode_without_waiting():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    started = time.monotonic()
    enable_wal(conn, timeout=10)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "memory"
    assert time.monotonic() - started < 1.0
