"""The destination picker that scales (pure functions) and the "use my Zotero" offer (issue 9 §1, §5)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.library.base import Collection, Paper
from zocrates_nb.widgets.picker import PaperIndex, collection_tree, filter_papers, fold, suggested_parent


def _papers(n: int) -> list[Paper]:
    return [
        Paper(
            f"P{i:07d}",
            f"Paper number {i} on {'spatial' if i % 2 else 'single-cell'} methods",
            creators=(f"Author{i % 50}, A",),
            year=1990 + i % 35,
        )
        for i in range(n)
    ]


def test_filter_matches_every_word_in_title_author_or_year():
    papers = [
        Paper(
            "AAAA2222",
            "Visualization and analysis of gene expression in tissue sections",
            creators=("Ståhl, Patrik",),
            year=2016,
        ),
        Paper("BBBB2222", "Cell2location maps fine-grained cell types", creators=("Kleshchenko, V",), year=2022),
        Paper("CCCC2222", "Tissue maps of the mouse brain", creators=("Lee, A",), year=2016),
    ]
    index = PaperIndex.build(papers)
    assert [k for _, k in filter_papers(index, "tissue")] == ["CCCC2222", "AAAA2222"]  # title prefix first
    assert [k for _, k in filter_papers(index, "stahl 2016")] == ["AAAA2222"]  # accents folded
    assert [k for _, k in filter_papers(index, "Tissue maps")] == ["CCCC2222"]
    assert filter_papers(index, "nothing like this") == []
    assert [k for _, k in filter_papers(index, "")] == ["BBBB2222", "AAAA2222", "CCCC2222"]  # newest first


def test_title_prefix_ranks_first_and_top_20_only():
    index = PaperIndex.build(_papers(1000))
    hits = filter_papers(index, "number 1 spatial")
    assert len(hits) == 20
    assert all(all(w in fold(label) for w in ("number", "1", "spatial")) for label, _ in hits)


def test_collection_tree_nests_and_survives_cycles():
    colls = [
        Collection("A", "Zeta"),
        Collection("B", "alpha"),
        Collection("C", "child", "B"),
        Collection("D", "grandchild", "C"),
        Collection("E", "orphan", "MISSING"),
        Collection("X", "cycle1", "Y"),
        Collection("Y", "cycle2", "X"),
    ]
    tree = collection_tree(colls)
    assert [k for _, k in tree[:5]] == ["B", "C", "D", "E", "A"]
    labels = dict((k, label) for label, k in tree)
    assert labels["C"].endswith("└ child") and labels["D"].startswith("\u2003\u2003")
    assert "X" not in labels and "Y" not in labels  # a cycle has no root: not shown, no hang


def test_suggested_parent_is_the_most_cited_paper():
    cite = lambda k: SimpleNamespace(key=k)  # noqa: E731
    answer = SimpleNamespace(citations=[cite("N1"), cite("P2"), cite("P1"), cite("P2")], cited_keys=[])
    assert suggested_parent(answer, {"P1", "P2"}) == "P2"
    assert suggested_parent(SimpleNamespace(citations=[cite("N1")]), {"P1"}) is None


def test_chat_panel_type_ahead_and_save_on_a_found_paper(demo_workbench):
    from zocrates_nb.widgets.chat import ChatPanel

    panel = ChatPanel(demo_workbench)
    paper = demo_workbench.papers()[0]
    word = paper.title.split()[0]
    panel.paper_search.value = paper.title[:25]
    keys = [k for _, k in panel.parent_picker.options]
    assert paper.key in keys and len(keys) <= 22
    panel.parent_picker.value = paper.key
    panel.send("What did I note about this?")
    saved = panel.save_answer()
    assert saved.parent_key == paper.key
    assert word


def test_offer_and_use_zotero(tmp_path, monkeypatch, data_dir):
    from zocrates_nb.widgets.chat import ChatPanel
    from zocrates_nb.workbench.core import Workbench

    home = tmp_path / "home"
    (home / "Zotero").mkdir(parents=True)
    with ZoteroDB(home / "Zotero" / "zotero.sqlite", "9") as db:
        db.add_paper("PAPER555", "A paper", creators=[("A", "Lee", "author")], date="2020-01-01 2020-01-01")
        db.add_note("NOTE5555", "<p>A note about spots.</p>", parent="PAPER555")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", "")
    wb = Workbench(data_dir, auto_sync=False)
    offer = wb.zotero_offer()
    assert offer.offer == "Use my Zotero library (1 items, 1 notes)"
    panel = ChatPanel(wb)  # returns at once: the offer is found on a thread
    assert panel.wait_for_offer() and panel.offer[0].description == offer.offer
    assert tuple(panel.offer) == panel.offer_box.children
    assert wb.source.describe().startswith("demo")  # nothing switched by itself
    panel.offer[0].click()
    assert wb.config.read()["library"]["source"] == "zotero-dir"
    assert wb.corpus.keys("note") == ["NOTE5555"]
    assert wb.zotero_offer() is None
    wb.close()


def test_use_zotero_without_a_library_says_how(tmp_path, monkeypatch, data_dir):
    from zocrates_nb.errors import NotFoundError
    from zocrates_nb.workbench.core import Workbench

    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", "")
    wb = Workbench(data_dir, auto_sync=False)
    with pytest.raises(NotFoundError, match="No Zotero data directory"):
        wb.use_zotero()
    wb.close()
    assert Path(data_dir).exists()


def test_chat_panel_says_not_yet_in_zotero_for_an_outbox_save(tmp_path, data_dir):
    from zocrates_nb.widgets.chat import ChatPanel
    from zocrates_nb.workbench.core import Workbench

    folder = tmp_path / "Zotero"
    folder.mkdir()
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.add_paper(
            "PAPER666", "Spot deconvolution benchmark", creators=[("A", "Lee", "author")], date="2022-01-01 2022-01-01"
        )
        db.add_note("NOTE6666", "<p>Spot deconvolution: cell2location did best.</p>", parent="PAPER666")
    wb = Workbench(data_dir, zotero_dir=folder)
    panel = ChatPanel(wb)
    panel.send("Which method did best at spot deconvolution?")
    assert panel.suggest_parent(panel.answers[-1].answer) == "PAPER666"  # cited via its note and itself
    assert panel.parent_picker.options[1] == ("★ most cited: Spot deconvolution benchmark", "PAPER666")
    panel.paper_search.value = "deconvolution bench"
    panel.parent_picker.value = "PAPER666"
    saved = panel.save_answer()
    assert saved.destination == "outbox"
    line = panel.messages[-1].widget.saved_line.value
    assert "not yet in Zotero" in line and "library writer" in line
    assert saved.key in wb.search("which method did best at spot deconvolution", k=5).keys()
    wb.close()
