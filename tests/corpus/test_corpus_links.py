"""Note -> paper links stored at sync (index/lexical/note_links.py), kept current and shown by explain."""

from __future__ import annotations

from zocrates_nb.retrieval.explain import explain

CELL2LOCATION = "7K964I5Y"
TANGRAM = "2S8Z57QF"
HARMONY = "MDPFJJ8T"


def test_sync_stores_a_notes_links_and_an_edit_or_trash_updates_them(demo_workbench):
    wb = demo_workbench
    stored = {paper: reason for paper, reason, _ in wb.index.note_links("6KRNUSXH")}
    assert stored[CELL2LOCATION] == "citation" and stored[TANGRAM] == "citation"
    assert all(title for _, _, title in wb.index.note_links("6KRNUSXH"))
    # a child note does not link its own paper (it rides with it already)
    assert "7K964I5Y" not in {p for p, _, _ in wb.index.note_links("RN5636UL")}
    # the edit removes both citations and names Harmony instead: the stored links follow at the next sync
    wb.source.update_note("6KRNUSXH", "<p>Plan: batch correction with Harmony, theta 2.</p>")
    report = wb.sync()
    assert "6KRNUSXH" in report.changed_keys
    assert wb.index.note_links("6KRNUSXH") == [(HARMONY, "name", wb.index.note_links("6KRNUSXH")[0][2])]
    unchanged = wb.sync()
    assert unchanged.counts["changed"] == 0  # links are part of the context hash: same links, no re-index
    wb.source.trash_note("6KRNUSXH")
    wb.sync()
    assert wb.index.note_links("6KRNUSXH") == []


def test_explain_shows_the_papers_a_note_was_found_through(demo_workbench):
    report = explain(demo_workbench.index, "spatial mapping of single cells with Tangram", "6KRNUSXH")
    links = {link["key"]: link for link in report.links}
    assert links[TANGRAM]["reason"] == "citation" and links[TANGRAM]["rank"] is not None
    assert report.link_share > 0
    text = report.summary()
    assert "linked papers (" in text and "found through" in text and TANGRAM in text
    assert "linked:" in report._repr_html_()
