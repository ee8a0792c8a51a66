"""Read-only and full are told apart from damage (storage/space.py), so hints never say "delete" for them."""

from __future__ import annotations

import errno
import sqlite3

from zocrates_nb.errors import StorageUnavailableError
from zocrates_nb.storage.space import human_bytes, unavailable, write_problem


def test_the_errors_sqlite_and_the_os_give_are_classified(tmp_path):
    target = tmp_path / "x.sqlite"
    assert write_problem(target) is None  # a writable directory with space: an error here is something else
    assert write_problem(target, sqlite3.DatabaseError("file is not a database")) is None
    assert write_problem(target, sqlite3.OperationalError("database or disk is full")) == "full"
    assert write_problem(target, OSError(errno.ENOSPC, "No space left on device")) == "full"
    assert write_problem(target, OSError(errno.EROFS, "Read-only file system")) == "read-only"
    assert write_problem(target, sqlite3.OperationalError("attempt to write a readonly database")) == "read-only"


def test_the_errors_say_what_to_free_or_allow_and_never_to_delete(tmp_path):
    for problem, words in (("read-only", "writable"), ("full", "Free some space")):
        err = unavailable("The demo library", tmp_path / "demo_library.sqlite", problem)
        assert isinstance(err, StorageUnavailableError) and words in err.hint
        assert "delete" not in str(err).lower() and "doctor --repair" not in str(err)
    assert human_bytes(0) == "0 bytes" and human_bytes(150 * 1024 * 1024) == "150.0 MiB"
