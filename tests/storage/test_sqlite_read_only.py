"""``connect_read_only``: reads a store as last written and never changes it (issue 26).

(On a writable disk SQLite may still make its empty ``-wal``/``-shm`` beside it; on a read-only
mount it cannot, and the tmpfs suite in tests/system shows the reads work there.)"""

from __future__ import annotations

import sqlite3

import pytest

from zocrates_nb.storage.space import write_problem
from zocrates_nb.storage.sqlite_tx import connect_read_only, enable_wal


def test_a_wal_store_is_read_as_written_and_any_write_is_refused(tmp_path):
    path = tmp_path / "store.sqlite"
    conn = sqlite3.connect(path)
    enable_wal(conn)
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(5)])
    conn.commit()
    conn.close()
    before = path.read_bytes()
    reader = connect_read_only(path)
    assert reader.execute("SELECT count(*) FROM t").fetchone() == (5,)
    with pytest.raises(sqlite3.OperationalError) as caught:
        reader.execute("INSERT INTO t VALUES (6)")
    assert write_problem(path, caught.value) == "read-only"  # told apart from damage: no "delete" hint
    reader.close()
    assert path.read_bytes() == before


def test_a_missing_store_is_not_created(tmp_path):
    with pytest.raises(sqlite3.OperationalError):
        connect_read_only(tmp_path / "absent.sqlite")
    assert not (tmp_path / "absent.sqlite").exists()
