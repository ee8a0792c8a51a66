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
