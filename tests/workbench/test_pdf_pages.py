"""Page numbers from the PDFs, end to end: a Zotero desktop folder with stored, linked, missing and encrypted
PDFs → sync → chunks with pages → evidence, ``search --json``, an evidence-only answer and ``status``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fakes.pdf_files import page_texts, write_pdf
from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.cli import main
from zocrates_nb.workbench.core import Workbench

STORED, LINKED, MISSING, LOCKED = "PAPERAAA", "PAPERBBB", "PAPERCCC", "PAPERDDD"
#: i, ii for the front matter, then 1, 2, 3 …: page index 3 is printed "2"
FRONT_THEN_ARABIC = [(0, "r", "", 1), (2, "D", "", 1)]


def _zotero(tmp_path: Path, monkeypatch) -> Path:
    zdir, linked = tmp_path / "Zotero", tmp_path / "Linked"
    zdir.mkdir()
    with ZoteroDB(zdir / "zotero.sqlite", "9") as db:
        db.add_paper(STORED, "Mapping tissue by spots", creators=[("Ana", "Lee", "author")], date="2021")
        db.add_attachment("ATTAAAAA", STORED, path="storage:Lee 2021.pdf")
        db.add_paper(LINKED, "A linked reading", creators=[("Bo", "Kim", "author")], date="2019")
        db.add_attachment("ATTBBBBB", LINKED, link_mode=2, path="attachments:reading/kim.pdf")
        db.add_paper(MISSING, "PDF left on another computer", creators=[("Cy", "Ray", "author")], date="2020")
        db.add_attachment("ATTCCCCC", MISSING, path="storage:ray.pdf")
        db.add_paper(LOCKED, "A password-protected PDF", creators=[("Di", "Fox", "author")], date="2018")
        db.add_attachment("ATTDDDDD", LOCKED, path="storage:fox.pdf")
    write_pdf(zdir / "storage" / "ATTAAAAA" / "Lee 2021.pdf", page_texts(6, 220, "lee"), labels=FRONT_THEN_ARABIC)
    write_pdf(linked / "reading" / "kim.pdf", page_texts(3, 200, "kim"))
    write_pdf(zdir / "storage" / "ATTDDDDD" / "fox.pdf", page_texts(2, 100, "fox"), encrypted=True)
    caches = {
        "ATTAAAAA": "Zotero's cache of the stored PDF mentions cacheonlyword.",
        "ATTCCCCC": "The zephyrine passage survives only in Zotero's full-text cache.",
        "ATTDDDDD": "The quokkaword passage of the locked PDF, as Zotero indexed it.",
    }
    for key, text in caches.items():
        (zdir / "storage" / key).mkdir(parents=True, exist_ok=True)
        (zdir / "storage" / key / ".zotero-ft-cache").write_text(text, encoding="utf-8")
    profile = tmp_path / "profiles" / "abc.default"
    profile.mkdir(parents=True)
    (profile / "prefs.js").write_text(
        f'user_pref("extensions.zotero.dataDir", "{zdir}");\nuser_pref("extensions.zotero.useDataDir", true);\n'
        f'user_pref("extensions.zotero.baseAttachmentPath", "{linked}");\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", str(tmp_path / "profiles"))
    return zdir


@pytest.fixture
def library(tmp_path, monkeypatch) -> tuple[Path, Path]:
    return _zotero(tmp_path, monkeypatch), tmp_path / "data"


def run(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def _hit(results: dict, key: str) -> dict:
    return next(h for h in results["hits"] if h["key"] == key)


def test_a_paper_whose_pdf_is_present_is_found_with_its_pages(library, capsys):
    zdir, data = library
    code, out = run(capsys, "sync", "--zotero-dir", str(zdir), "--data-dir", str(data), "--json")
    assert code == 0, out
    report = json.loads(out)
    assert any("ATTDDDDD" in str(w) and "encrypted" in str(w) for w in report["warnings"]), report["warnings"]

    code, out = run(capsys, "search", "leemarker3", "--data-dir", str(data), "--json", "--mode", "lexical")
    found = json.loads(out)
    hit = _hit(found, STORED)
    assert hit["page_start"] <= 4 <= hit["page_end"]  # index 3: the fourth page, printed "2"
    labels = {3: "1", 4: "2", 5: "3"}
    assert (hit["page_label_start"], hit["page_label_end"]) == (labels[hit["page_start"]], labels[hit["page_end"]])
    assert hit["attachment_key"] == "ATTAAAAA"
    assert hit["open_pdf"] == f"zotero://open-pdf/library/items/ATTAAAAA?page={hit['page_start']}"
    assert f"[Paper Key: PAPERAAA, {hit['pages']}]" in found["evidence_text"]
    assert hit["pages"] in ("p. 2", "pp. 1–2", "pp. 2–3")

    code, out = run(capsys, "search", "kimmarker1", "--data-dir", str(data), "--json", "--mode", "lexical")
    linked = _hit(json.loads(out), LINKED)  # a linked file, under the base directory; no labels: numbers
    assert linked["page_start"] <= 2 <= linked["page_end"] and linked["page_label_start"] == str(linked["page_start"])

    # nothing is lost where there is no PDF to read: the cache text is indexed, without pages
    for word, key in (("zephyrine", MISSING), ("quokkaword", LOCKED)):
        code, out = run(capsys, "search", word, "--data-dir", str(data), "--json", "--mode", "lexical")
        hit = _hit(json.loads(out), key)
        assert "page_start" not in hit and "open_pdf" not in hit
    code, out = run(capsys, "search", "cacheonlyword", "--data-dir", str(data), "--json", "--mode", "lexical")
    assert all(h["key"] != STORED for h in json.loads(out)["hits"])  # its PDF's pages replaced the cache text

    code, out = run(capsys, "status", "--data-dir", str(data))
    assert "pages          : 2 of 4 papers from their PDF; 2 from Zotero's full-text cache (no pages)" in out
    assert "1 PDFs could not be read" in out
    code, out = run(capsys, "status", "--data-dir", str(data), "--json")
    assert json.loads(out)["corpus"]["pages"] == {
        "from_pdf": 2,
        "from_fulltext": 2,
        "metadata_only": 0,
        "pdf_failures": 1,
    }


def test_evidence_and_an_evidence_only_answer_cite_the_page(library):
    zdir, data = library
    wb = Workbench(data, zotero_dir=zdir, progress=False)
    try:
        results = wb.tools.search_corpus("leemarker4 tissue", k=3, mode="lexical")
        top = results.hits[0]
        assert top.key == STORED and top.pages is not None and top.pages.start <= 4 <= top.pages.end
        assert f"[Paper Key: {STORED}, {top.pages.cite()}]" in results.evidence_text
        assert '<a class="zc-open-pdf" href="zotero://open-pdf/library/items/ATTAAAAA?page=' in results._repr_html_()
        answer = wb.ask("Which passage mentions leemarker4?")
        assert answer.mode == "evidence-only"
        assert f"(Lee, 2021, {top.pages.cite()})" in answer.text
        cited = next(c for c in answer.citations if c.key == STORED)
        assert cited.citation == f"Lee, 2021, {top.pages.cite()}"
        evidence = next(e for e in answer.evidence if e["key"] == STORED)
        assert evidence["page_label_start"] == top.pages.start_label and evidence["attachment_key"] == "ATTAAAAA"
        json.dumps(answer.to_json())  # the evidence stays JSON (ask --json)
    finally:
        wb.close()


def test_an_unchanged_pdf_is_not_read_again_and_a_changed_one_is(library):
    zdir, data = library
    wb = Workbench(data, zotero_dir=zdir, progress=False)
    try:
        reader = wb.corpus.pages
        assert reader.extracted == 3  # stored, linked and the encrypted one (which failed)
        wb.sync(progress=False)
        assert reader.extracted == 0 + 3  # nothing changed: nothing read
        pdf = zdir / "storage" / "ATTAAAAA" / "Lee 2021.pdf"
        mtime = pdf.stat().st_mtime_ns
        write_pdf(pdf, page_texts(4, 220, "revised"), labels=FRONT_THEN_ARABIC)
        os.utime(pdf, ns=(mtime + 2 * 10**9, mtime + 2 * 10**9))
        report = wb.sync(progress=False)
        assert reader.extracted == 4 and STORED in report.changed_keys
        hit = wb.tools.search_corpus("revisedmarker2", k=3, mode="lexical").hits[0]
        assert hit.key == STORED and hit.pages.start_label in ("ii", "1") and hit.pages.start <= 2 <= hit.pages.end
        assert not wb.tools.search_corpus("leemarker5", k=3, mode="lexical").hits  # the old pages are gone
    finally:
        wb.close()


def test_a_rebuild_from_the_bundles_keeps_the_pages(library):
    zdir, data = library
    wb = Workbench(data, zotero_dir=zdir, progress=False)
    try:
        before = wb.tools.search_corpus("leemarker3", k=3, mode="lexical").hits[0].pages
        wb.index.rebuild(wb.corpus)
        after = wb.tools.search_corpus("leemarker3", k=3, mode="lexical").hits[0].pages
        assert after == before is not None
    finally:
        wb.close()


def test_pdf_pages_can_be_turned_off(library, capsys):
    zdir, data = library
    assert run(capsys, "sync", "--zotero-dir", str(zdir), "--data-dir", str(data))[0] == 0
    assert run(capsys, "library", "use", "dir", str(zdir), "--no-pdf-pages", "--data-dir", str(data))[0] == 0
    assert run(capsys, "sync", "--data-dir", str(data))[0] == 0
    code, out = run(capsys, "search", "cacheonlyword", "--data-dir", str(data), "--json", "--mode", "lexical")
    assert _hit(json.loads(out), STORED).get("page_start") is None  # Zotero's text again, no pages
    code, out = run(capsys, "status", "--data-dir", str(data))
    assert "0 of 4 papers from their PDF" in out


def test_the_demo_library_shows_no_pages_line(demo_home, capsys):
    code, out = run(capsys, "status")
    assert code == 0 and "pages          :" not in out  # no PDFs to read there: nothing to say
    code, out = run(capsys, "status", "--json")
    assert json.loads(out)["corpus"]["pages"]["from_pdf"] == 0
