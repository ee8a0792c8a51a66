"""PDF annotations read from zotero.sqlite: fixtures with the real schema (Zotero 7, 9, 10) and the real
Zotero 9 database (skipped when it is not at hand)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary

REAL_DB = Path(__file__).resolve().parents[3] / "shared" / "data" / "zotero" / "zotero9-profile.sqlite"


def build_annotated(zotero_dir: Path, variant: str) -> None:
    zotero_dir.mkdir(parents=True, exist_ok=True)
    with ZoteroDB(zotero_dir / "zotero.sqlite", variant) as db:
        db.add_paper("PAPER222", "Robust decomposition of cell type mixtures", creators=[("Dylan", "Cable", "author")])
        db.add_paper("PAPER333", "A trashed paper")
        db.add_attachment("PDFATT22", "PAPER222")
        db.add_attachment("PDFATT33", "PAPER333")
        db.add_annotation(
            "HILITE22",
            "PDFATT22",
            text="RCTD learns platform effects from a single-cell reference",
            comment="the key trick for Visium",
            page_label="12",
            page_index=11,
            tags=["method", "key finding"],
        )
        db.add_annotation("STICKY22", "PDFATT22", type_id=2, comment="compare with cell2location", page_label="3")
        db.add_annotation("UNDERL22", "PDFATT22", type_id=5, text="doublet mode", color="#2ea8e5", page_label="")
        db.add_annotation("IMAGE222", "PDFATT22", type_id=3, page_label="7", page_index=6)
        db.add_annotation("INK22222", "PDFATT22", type_id=4, comment="circled the figure")
        db.add_annotation("TRASHED2", "PDFATT22", text="trashed highlight")
        db.add_annotation("ONTRASH3", "PDFATT33", text="on a trashed paper's PDF")
        # the lab's group library (zotero.org group 4711) holds a paper with a highlighted PDF of its own
        db.add_group(4711, "Lab reading")
        db.add_paper("GPAPER22", "Stereo-seq maps the mouse embryo", library_id=2)
        db.add_attachment("GPDFAT22", "GPAPER22", library_id=2)
        db.add_annotation(
            "GRPANN22",
            "GPDFAT22",
            text="nanoball patterned arrays at subcellular resolution",
            page_label="4",
            page_index=3,
            library_id=2,
        )
        db.trash("TRASHED2")
        db.trash("PAPER333")


@pytest.mark.parametrize("variant", ["7", "9", "10"])
def test_annotations_on_every_modern_schema(tmp_path, variant):
    build_annotated(tmp_path / "z", variant)
    lib = ZoteroDesktopLibrary(zotero_dir=tmp_path / "z")
    found = {a.key: a for a in lib.snapshot().annotations}
    # trashed itself and trashed with its paper: absent; the group library's is read with its own library id
    assert set(found) == {"HILITE22", "STICKY22", "UNDERL22", "IMAGE222", "INK22222", "GRPANN22"}
    assert found["GRPANN22"].library_id == 2
    only_mine = ZoteroDesktopLibrary(zotero_dir=tmp_path / "z", library_id=1).snapshot()
    assert "GRPANN22" not in {a.key for a in only_mine.annotations}  # library.desktop_library_id keeps to one
    hi = found["HILITE22"]
    assert (hi.annotation_type, hi.attachment_key, hi.parent_key, hi.library_id) == (
        "highlight",
        "PDFATT22",
        "PAPER222",
        1,
    )
    assert hi.text.startswith("RCTD learns") and hi.comment == "the key trick for Visium"
    assert (hi.page_label, hi.page_index, hi.page, hi.color_name) == ("12", 11, "12", "yellow")
    assert hi.tags == ("key finding", "method")
    assert json.loads(hi.position)["pageIndex"] == 11 and hi.sort_index == "00011|000000|00069"
    assert hi.date_modified == "2023-01-17T15:44:41Z" and hi.indexable
    assert [found[k].annotation_type for k in ("STICKY22", "UNDERL22", "IMAGE222", "INK22222")] == [
        "note",
        "underline",
        "image",
        "ink",
    ]
    assert found["UNDERL22"].page == "1" and found["UNDERL22"].color_name == "blue"  # no label: page number
    # an image without text is provenance only; ink with a comment has words to find it by
    assert not found["IMAGE222"].indexable and found["INK22222"].indexable
    assert lib.get_annotation("HILITE22") == hi and lib.get_annotation("TRASHED2") is None


def test_a_group_library_reads_its_own_annotations(tmp_path):
    build_annotated(tmp_path / "z", "9")
    lib = ZoteroDesktopLibrary(zotero_dir=tmp_path / "z", library_id=2)
    assert [(a.key, a.library_id) for a in lib.snapshot().annotations] == [("GRPANN22", 2)]


def test_zotero5_has_no_annotations(tmp_path):
    (tmp_path / "z").mkdir()
    with ZoteroDB(tmp_path / "z" / "zotero.sqlite", "5") as db:
        db.add_paper("PAPER222", "Old")
    assert ZoteroDesktopLibrary(zotero_dir=tmp_path / "z").snapshot().annotations == ()


def test_an_edit_and_a_deletion_are_seen_on_the_next_snapshot(tmp_path):
    build_annotated(tmp_path / "z", "10")
    lib = ZoteroDesktopLibrary(zotero_dir=tmp_path / "z")
    assert lib.get_annotation("STICKY22").comment == "compare with cell2location"
    db = ZoteroDB.reopen(tmp_path / "z" / "zotero.sqlite", "10")
    db.update_annotation("STICKY22", comment="compare with Tangram")
    db.delete_item("UNDERL22")
    db.close()
    keys = {a.key for a in lib.snapshot().annotations}
    assert "UNDERL22" not in keys and lib.get_annotation("STICKY22").comment == "compare with Tangram"


@pytest.mark.skipif(not REAL_DB.exists(), reason="the real Zotero 9 database is not in ../shared/data")
def test_the_real_zotero9_database_has_one_sticky_note(tmp_path):
    lib = ZoteroDesktopLibrary(sqlite_path=REAL_DB)
    (note,) = lib.snapshot().annotations
    assert (note.key, note.annotation_type, note.comment, note.page_label) == ("C6SETCGM", "note", "note here", "1")
    assert (note.attachment_key, note.parent_key, note.library_id) == ("IY4WDTBE", "TUAXBMBS", 1)
    assert note.color_name == "yellow" and note.page_index == 0 and note.indexable


def test_the_real_zotero_9_database_reads_every_library_but_its_feed(tmp_path):
    """Group libraries on the real Zotero 9 profile: My Library (99 items), an empty group library
    ("better-bibtex", zotero.org group 4355231) and an RSS feed whose 5 items are not the user's."""
    if not REAL_DB.is_file():
        pytest.skip("the real Zotero 9 database is not at hand")
    import shutil

    folder = tmp_path / "z"
    folder.mkdir()
    shutil.copy(REAL_DB, folder / "zotero.sqlite")
    snap = ZoteroDesktopLibrary(zotero_dir=folder).snapshot()
    assert [(lib.library_id, lib.name, lib.kind, lib.group_id) for lib in snap.libraries] == [
        (1, "My Library", "user", None),
        (2, "better-bibtex", "group", 4355231),
    ]
    records = (*snap.papers, *snap.notes, *snap.annotations)
    assert records and {r.library_id for r in records} == {1}  # the group is empty; the feed is not read
    only_group = ZoteroDesktopLibrary(zotero_dir=folder, library_id=2).snapshot()
    assert (
        not only_group.papers
        and not only_group.notes
        and [lib.name for lib in only_group.libraries] == ["better-bibtex"]
    )
