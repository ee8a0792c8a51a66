"""One corpus from several libraries: a key two libraries share never mixes two items up (issue 22)."""

from __future__ import annotations

from zocrates_nb.library.base import LibraryInfo, LibrarySnapshot, Note, Paper, unique_across_libraries

MINE, LAB = LibraryInfo(1, "My Library"), LibraryInfo(2, "Lab reading", "group", group_id=4711)


def test_the_first_library_keeps_a_shared_key_and_the_later_one_is_reported():
    failures: list[tuple[str, str]] = []
    kept = unique_across_libraries(
        {
            # the group's paper comes first in the list, but the user's library is read first
            "papers": [Paper("SAMEKEY2", "Group paper", library_id=2), Paper("OWNPAPR2", "Mine", library_id=1)],
            "notes": [Note("SAMEKEY2", "<p>my note</p>", library_id=1), Note("LABNTE22", "<p>lab</p>", library_id=2)],
            "collections": [],
            "annotations": [],
        },
        [MINE, LAB],
        failures,
    )
    assert [p.key for p in kept["papers"]] == ["OWNPAPR2"]
    assert [(n.key, n.library_id) for n in kept["notes"]] == [("SAMEKEY2", 1), ("LABNTE22", 2)]
    assert failures == [("SAMEKEY2", "the key is taken by an item in My Library; this one in Lab reading is left out")]


def test_every_document_key_maps_to_its_library_and_unknown_ones_to_the_first():
    snap = LibrarySnapshot(
        papers=(Paper("PAPER222", "P"),),  # no library_id: the source's first library
        notes=(Note("LABNTE22", "<p>x</p>", library_id=2),),
        libraries=(MINE, LAB),
    )
    assert snap.library_of_keys() == {"PAPER222": 1, "LABNTE22": 2}
    assert LibrarySnapshot().library_of_keys() == {}
    assert (MINE.link_path, LAB.link_path, LibraryInfo(3, "x", "group").link_path) == ("library", "groups/4711", None)
    assert LibraryInfo(1, "Demo library", "local").link_path is None
