"""Saving is exactly once across failures (issue 26): a retried save finds the note it already wrote.

A save can fail after the library accepted the note (a full disk while indexing it); the user
retries. The demo library and the outbox must hand back the note they hold, not write a second.
"""

from __future__ import annotations

import pytest

from tests.library.test_library_local import write_content
from zocrates_nb.errors import StorageUnavailableError
from zocrates_nb.library.local import DemoLibrary
from zocrates_nb.library.writing.outbox import Outbox
from zocrates_nb.paths import DataPaths


def test_the_demo_library_returns_the_note_it_holds_for_the_same_save(tmp_path):
    lib = DemoLibrary(tmp_path / "demo.sqlite", write_content(tmp_path / "c"))
    first = lib.create_note("<p>Retried save</p>", parent_key="PAPER222")
    again = lib.create_note("<p>Retried save</p>", parent_key="PAPER222")
    assert again.key == first.key
    elsewhere = lib.create_note("<p>Retried save</p>", collection_keys=["SPATIAL2"])  # another place: a new note
    edited = lib.create_note("<p>Retried save, edited</p>", parent_key="PAPER222")
    assert len({first.key, elsewhere.key, edited.key}) == 3
    assert [n.key for n in lib.snapshot().notes].count(first.key) == 1
    lib.trash_note(first.key)
    assert lib.create_note("<p>Retried save</p>", parent_key="PAPER222").key != first.key  # trashed: saved anew
    lib.close()


def test_a_read_only_demo_library_reads_and_is_never_created(tmp_path):
    content = write_content(tmp_path / "c")
    writable = DemoLibrary(tmp_path / "demo.sqlite", content)
    key = writable.create_note("<p>Kept</p>", parent_key="PAPER222").key
    writable.close()
    reading = DemoLibrary(tmp_path / "demo.sqlite", content, read_only="read-only")
    assert key in {n.key for n in reading.snapshot().notes}
    reading.close()
    with pytest.raises(StorageUnavailableError) as caught:
        DemoLibrary(tmp_path / "absent.sqlite", content, read_only="full")
    assert "Free some space" in caught.value.hint and not (tmp_path / "absent.sqlite").exists()


def test_the_outbox_returns_the_entry_it_holds_for_the_same_note(tmp_path):
    outbox = Outbox.for_paths(DataPaths(tmp_path).ensure())
    first = outbox.add("<p>Queued</p>", title="Queued", parent_key="PAPER222")
    again = outbox.add("<p>Queued</p>", title="Queued", parent_key="PAPER222")
    assert again.key == first.key and again.write_token == first.write_token  # Zotero sees one write
    other = outbox.add("<p>Queued</p>", title="Queued", collection_keys=["SPATIAL2"])
    assert other.key != first.key and len(outbox.entries()) == 2
