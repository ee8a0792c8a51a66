"""``wb.export`` and ``ask --export``: an answer's citations as Pandoc Markdown + .bib, BibTeX and CSL-JSON."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from pathlib import Path

import bibtexparser
import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.cli import main
from zocrates_nb.errors import ZocratesError

QUESTION = "How does Harmony integrate single-cell data across batches?"
needs_pandoc = pytest.mark.skipif(
    shutil.which("pandoc") is None, reason="pandoc (Debian package) is not installed: make test installs it"
)


@needs_pandoc
def test_markdown_export_renders_with_citeproc_into_the_same_references(demo_workbench, tmp_path):
    answer = demo_workbench.ask(QUESTION)
    export = demo_workbench.export(answer, "markdown")
    md_path, bib_path = export.write(tmp_path / "draft" / "harmony.md")
    assert bib_path == tmp_path / "draft" / "harmony.bib" and 'bibliography: "harmony.bib"' in md_path.read_text()
    bib = {e["ID"]: e for e in bibtexparser.loads(bib_path.read_text(encoding="utf-8")).entries}
    assert [r["citekey"] for r in export.references] == list(bib)
    # one entry per paper cited, directly or through a child note or an annotation on it
    by_key = {e["key"]: e for e in answer.evidence if e.get("key")}
    cited = {c.key: by_key.get(c.key, {}) for c in answer.citations if c.key}
    papers = {k if e.get("kind") == "paper" else e.get("parent_key") for k, e in cited.items()} - {None}
    assert len(bib) == len(papers) >= 1, (papers, list(bib))
    for key in bib:  # every reference is cited in the text or listed through nocite
        assert f"@{key}" in md_path.read_text(encoding="utf-8")
    assert "(Korsunsky et al., 2019)" not in md_path.read_text(encoding="utf-8")
    out = subprocess.run(
        ["pandoc", "--citeproc", "-t", "plain", "--columns=1000", md_path.name],
        cwd=md_path.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "[WARNING]" not in out.stderr, out.stderr  # e.g. "Citeproc: citation x not found"
    listing = out.stdout.split("References", 1)[1]
    for entry in bib.values():
        assert entry["title"].lower()[:40] in listing.lower(), entry["title"]


def test_bibtex_and_csl_json_hold_the_same_items_with_the_same_keys(demo_workbench):
    answer = demo_workbench.ask(QUESTION)
    items = json.loads(demo_workbench.export(answer, "csl-json").text)
    bib = bibtexparser.loads(demo_workbench.export(answer, "bibtex").text).entries
    assert [i["id"] for i in items] == [e["ID"] for e in bib]
    assert all(i["DOI"] == e["doi"] for i, e in zip(items, bib, strict=True))
    again = demo_workbench.export(demo_workbench.ask(QUESTION), "csl-json")
    assert json.loads(again.text) == items  # stable across runs
    with pytest.raises(ZocratesError, match="Unknown export format"):
        demo_workbench.export(answer, "docx")
    assert demo_workbench.export(answer, "bibtex")._repr_markdown_().startswith("```\n@")


def test_ask_export_writes_the_files_and_says_where(demo_home, tmp_path, capsys):
    target = tmp_path / "out" / "answer.md"
    code = main(["--data-dir", str(demo_home), "ask", QUESTION, "--export", "markdown", "--export-to", str(target)])
    _, err = capsys.readouterr()
    assert code == 0 and target.exists() and target.with_suffix(".bib").exists()
    assert f"{target.with_suffix('.bib')}" in err and "reference(s)" in err
    assert main(["--data-dir", str(demo_home), "ask", QUESTION, "--export-to", str(target)]) == 1
    assert "--export-to only applies with --export" in capsys.readouterr().err


def test_better_bibtex_and_pinned_keys_win_over_generated_ones(tmp_path):
    from zocrates_nb.workbench.core import Workbench

    zdir = tmp_path / "zotero"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        db.add_paper(
            "PAPER222",
            "Spatial transcriptomics of mouse olfactory bulb tissue sections",
            creators=[("Patrik", "Ståhl", "author")],
            date="2016-07-01 2016-07-01",
            extra="Citation Key: Stahl2016-pinned",
        )
        db.add_paper(
            "PAPER333",
            "Spatial transcriptomics of human heart tissue sections",
            creators=[("Michaela", "Asp", "author")],
            date="2019-12-01 2019-12-01",
        )
        db.add_paper(
            "PAPER444",
            "Spatial transcriptomics of human skin tissue sections",
            creators=[("Alex", "Nobody", "author")],
            date="2020",
        )
    bbt = sqlite3.connect(zdir / "better-bibtex.sqlite")
    bbt.execute("CREATE TABLE citationkey (itemID INTEGER, itemKey TEXT, libraryID INTEGER, citationKey TEXT, pinned)")
    bbt.execute("INSERT INTO citationkey VALUES (2, 'PAPER333', 1, 'aspHeart2019', 0)")
    bbt.commit()
    bbt.close()
    wb = Workbench(tmp_path / "data", zotero_dir=zdir, progress=False)
    try:
        wb.sync(progress=False)
        answer = wb.ask("spatial transcriptomics tissue sections")
        keys = {r["title"].split(" of ")[1]: r["citekey"] for r in wb.export(answer, "csl-json").references}
    finally:
        wb.close()
    assert keys == {
        "mouse olfactory bulb tissue sections": "Stahl2016-pinned",
        "human heart tissue sections": "aspHeart2019",
        "human skin tissue sections": "nobody2020spatial",
    }


def test_an_unreadable_better_bibtex_file_means_generated_keys_and_a_warning(tmp_path, caplog):
    from zocrates_nb.library.desktop.bbt import better_bibtex_keys

    (tmp_path / "better-bibtex.sqlite").write_bytes(b"not a database at all" * 100)
    assert better_bibtex_keys(tmp_path / "zotero.sqlite", 1) == {}
    assert "generates citation keys" in caplog.text
    assert better_bibtex_keys(Path(tmp_path / "elsewhere" / "zotero.sqlite"), 1) == {}
