"""`zocrates-nb search` and `ask` over PDF annotations read from a Zotero desktop database."""

from __future__ import annotations

import json

from tests.cli.test_cli_library import run
from tests.library.test_desktop_annotations import build_annotated

HIGHLIGHT = "RCTD learns platform effects from a single-cell reference"


def test_search_returns_the_annotation_with_its_page_and_link(capsys, tmp_path):
    build_annotated(tmp_path / "zotero", "9")
    data = str(tmp_path / "data")
    code, _, err = run(
        capsys, "--data-dir", data, "sync", "--zotero-sqlite", str(tmp_path / "zotero" / "zotero.sqlite")
    )
    assert code == 0, err
    code, out, _ = run(capsys, "--data-dir", data, "search", HIGHLIGHT, "--json", "--k", "5")
    payload = json.loads(out)
    top = payload["hits"][0]
    assert (top["kind"], top["key"], top["parent_key"], top["attachment_key"]) == (
        "annotation",
        "HILITE22",
        "PAPER222",
        "PDFATT22",
    )
    assert (top["page_label"], top["library_id"], top["annotation_type"]) == ("12", 1, "highlight")
    assert top["highlighted_text"] == HIGHLIGHT and top["comment"] == "the key trick for Visium"
    assert top["open_pdf"] == "zotero://open-pdf/library/items/PDFATT22?page=12&annotation=HILITE22"
    assert "[Annotation on Paper Key: PAPER222, p. 12]" in payload["evidence_text"]
    assert "Highlighted (highlight): RCTD learns" in payload["evidence_text"]
    # --type annotation: annotations only (the paper, which has no words of the highlight's, is left out)
    code, out, _ = run(capsys, "--data-dir", data, "search", "Visium Tangram", "--json", "--type", "annotation")
    hits = json.loads(out)["hits"]
    assert hits and {h["kind"] for h in hits} == {"annotation"}
    code, out, _ = run(capsys, "--data-dir", data, "search", "Visium Tangram", "--json", "--type", "paper")
    assert {h["kind"] for h in json.loads(out)["hits"]} <= {"paper"}
    # an evidence-only answer quotes the annotation, never an internal key
    code, out, _ = run(capsys, "--data-dir", data, "ask", "What did I highlight about platform effects?", "--json")
    answer = json.loads(out)
    assert code == 0 and answer["mode"] == "evidence-only"
    assert not {"HILITE22", "PDFATT22", "PAPER222"} & set(answer["answer"].replace("*", " ").split())
    assert any(e.get("kind") == "annotation" for e in answer["evidence"])


GROUP_WORDS = "nanoball patterned arrays subcellular resolution"


def test_two_libraries_one_search_filtered_by_library(capsys, tmp_path):
    """Issue 22's group libraries: a desktop database with annotations in the user's library and in a group's
    is one corpus; every hit says its library and links into it; --library and --type narrow the search."""
    build_annotated(tmp_path / "zotero", "9")
    data = str(tmp_path / "data")
    code, _, err = run(
        capsys, "--data-dir", data, "sync", "--zotero-sqlite", str(tmp_path / "zotero" / "zotero.sqlite")
    )
    assert code == 0, err
    code, out, _ = run(capsys, "--data-dir", data, "search", GROUP_WORDS, "--json", "--k", "5")
    top = json.loads(out)["hits"][0]
    assert (top["kind"], top["key"], top["parent_key"], top["attachment_key"], top["page_label"]) == (
        "annotation",
        "GRPANN22",
        "GPAPER22",
        "GPDFAT22",
        "4",
    )
    assert (top["library_id"], top["library_name"], top["library_kind"], top["group_id"]) == (
        2,
        "Lab reading",
        "group",
        4711,
    )
    # a group's items open in the group (zotero.org's group id), never under the user's library
    assert top["open_pdf"] == "zotero://open-pdf/groups/4711/items/GPDFAT22?page=4&annotation=GRPANN22"
    assert top["zotero_select"] == "zotero://select/groups/4711/items/GPAPER22"
    assert "Library: Lab reading (group)" in json.loads(out)["evidence_text"]
    # the user's own highlight: its own library and links
    code, out, _ = run(capsys, "--data-dir", data, "search", HIGHLIGHT, "--json", "--k", "3")
    mine = json.loads(out)["hits"][0]
    assert (mine["key"], mine["library_id"], mine["library_name"]) == ("HILITE22", 1, "My Library")
    assert mine["open_pdf"].startswith("zotero://open-pdf/library/items/PDFATT22")
    # --library by name, by zotero.org group id or by desktop library id; with --type
    for name in ("Lab reading", "lab READING", "4711", "2"):
        code, out, _ = run(
            capsys, "--data-dir", data, "search", "highlight arrays platform", "--json", "--library", name
        )
        hits = json.loads(out)["hits"]
        assert code == 0 and hits and {h["library_id"] for h in hits} == {2}, name
    code, out, _ = run(capsys, "--data-dir", data, "search", GROUP_WORDS, "--json", "--library", "My Library")
    assert "GRPANN22" not in {h["key"] for h in json.loads(out)["hits"]}
    code, out, _ = run(
        capsys, "--data-dir", data, "search", GROUP_WORDS, "--json", "--library", "4711", "--type", "paper"
    )
    assert {h["key"] for h in json.loads(out)["hits"]} <= {"GPAPER22"}
    # a library that is not there: refused, naming the ones that are
    code, out, err = run(capsys, "--data-dir", data, "search", GROUP_WORDS, "--library", "Nope")
    assert code != 0 and "No library named 'Nope'" in err and "Lab reading (id 4711)" in err
    code, out, _ = run(capsys, "--data-dir", data, "library", "list", "--json")
    listed = {lib["name"]: lib for lib in json.loads(out)}
    assert set(listed) == {"My Library", "Lab reading"} and listed["Lab reading"]["group_id"] == 4711
    assert listed["Lab reading"]["documents"] == 2  # the group's paper and its highlight
    code, out, _ = run(capsys, "--data-dir", data, "status", "--json")
    assert [(lib["name"], lib["kind"]) for lib in json.loads(out)["corpus"]["libraries"]] == [
        ("My Library", "user"),
        ("Lab reading", "group"),
    ]
    code, out, _ = run(capsys, "--data-dir", data, "status")
    assert "libraries      : My Library (" in out and "Lab reading (group, 2 documents)" in out
    # ask --library keeps every search to that library
    code, out, _ = run(
        capsys, "--data-dir", data, "ask", "What did we highlight about arrays?", "--json", "--library", "Lab reading"
    )
    answer = json.loads(out)
    assert code == 0 and answer["evidence"] and {e.get("library_id") for e in answer["evidence"]} == {2}
    code, _, err = run(capsys, "--data-dir", data, "ask", "anything", "--library", "Nope")
    assert code != 0 and "No library named 'Nope'" in err
