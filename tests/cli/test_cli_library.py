"""The library commands of ``zocrates-nb``: sync, search, ask, convert, eval, library, demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.cli import main

REPO = Path(__file__).resolve().parents[2]

NOTE_HTML = """<div data-schema-version="9"><h1>Batch effects in Visium pilots</h1>
<p>Slides from the second run had <strong>lower UMI counts</strong>; <span class="math">$\\log_2$</span> fold change 0.8.</p>
<h2>Next</h2><ul><li>rerun SCTransform per slide</li><li>check <code>n_latent</code> in scVI</li></ul></div>"""  # noqa: E501


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def zotero_sqlite(tmp_path) -> Path:
    path = tmp_path / "zotero" / "zotero.sqlite"
    path.parent.mkdir()
    with ZoteroDB(path, "9") as db:
        db.add_collection("SPATIAL2", "Spatial")
        db.add_paper(
            "PAPER222",
            "Visualization and analysis of gene expression in tissue sections",
            creators=[("Patrik", "Ståhl", "author")],
            date="2016-07-01 2016-07-01",
        )
        db.add_note("STAND222", NOTE_HTML, collections=["SPATIAL2"])
        db.add_note(
            "CHILD222",
            "<p>Spot size 100 µm, pitch 200 µm: about a fifth of the tissue is captured.</p>",
            parent="PAPER222",
        )
    return path


def test_sync_zotero_sqlite_json_list_and_data_dir_after_command(capsys, tmp_path, zotero_sqlite):
    data = tmp_path / "data"
    code, out, _ = run(
        capsys, "sync", "--zotero-sqlite", str(zotero_sqlite), "--json", "--list", "--data-dir", str(data)
    )
    assert code == 0
    payload = json.loads(out)
    assert payload["counts"] == {"new": 3, "changed": 0, "unchanged": 0, "removed": 0, "failed": 0}
    notes = {n["key"]: n for n in payload["notes"]}
    assert set(notes) == {"STAND222", "CHILD222"}
    assert notes["CHILD222"]["parent_key"] == "PAPER222"
    assert notes["STAND222"]["title"] == "Batch effects in Visium pilots"
    assert notes["STAND222"]["collections"] in (["Spatial"], ["SPATIAL2"])
    # the source is remembered: a second sync (global option before the command) sees nothing new
    code, out, _ = run(capsys, "--data-dir", str(data), "sync", "--json")
    assert code == 0
    assert json.loads(out)["counts"]["unchanged"] == 3
    # and search finds the note, with provenance
    code, out, _ = run(
        capsys, "--data-dir", str(data), "search", "lower UMI counts in the second run", "--json", "--k", "3"
    )
    hits = json.loads(out)["hits"]
    assert hits[0]["key"] == "STAND222" and hits[0]["kind"] == "note"
    assert set(hits[0]["ranks"]) == {"lexical", "dense"}


def test_sync_missing_database_is_a_clear_error(capsys, tmp_path):
    code, _, err = run(
        capsys, "sync", "--zotero-sqlite", str(tmp_path / "nope.sqlite"), "--data-dir", str(tmp_path / "d")
    )
    assert code == 1
    assert "does not exist" in err and "hint" in err


def test_convert_json(capsys, tmp_path):
    note = tmp_path / "NOTE2222.html"
    note.write_text(NOTE_HTML, encoding="utf-8")
    code, out, _ = run(capsys, "convert", str(note), "--json")
    assert code == 0
    payload = json.loads(out)
    manifest = payload["manifest"]
    assert manifest["title"] == "Batch effects in Visium pilots"
    assert manifest["okf_version"] == "0.2" and manifest["content_type"] == "text/note"
    assert manifest["abstract"] is None and manifest["abstract_source"] is None  # < 100 words
    assert [t["title"] for t in manifest["toc"]] == ["Batch effects in Visium pilots", "Next"]
    assert len(manifest["source_hash"]) == 64
    assert "$\\log_2$" in payload["markdown"]


def test_search_ask_eval_on_demo(capsys, demo_home):
    code, out, _ = run(capsys, "search", "cells per spot prior for cell2location", "--json")
    assert code == 0
    assert json.loads(out)["hits"], "the demo library answers"
    code, out, _ = run(capsys, "ask", "What did I note about RCTD modes on Visium?", "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["mode"] == "evidence-only"
    assert set(answer) >= {"answer", "citations", "evidence", "usage", "mode"}
    assert "FK7CX7VJ" not in answer["answer"]  # no internal key reaches the answer
    code, out, _ = run(capsys, "eval", "--notes", "--json")
    result = json.loads(out)
    assert result["queries"] >= 30 and 0.0 <= result["recall@5"] <= 1.0


def test_empty_query_is_refused(capsys, demo_home):
    code, _, err = run(capsys, "search", "   ")
    assert code != 0 and "hint" in err


def test_search_in_an_unknown_collection_is_refused_with_the_known_names(capsys, demo_home):
    code, out, err = run(capsys, "search", "spot deconvolution", "--collection", "nonexistent")
    assert code != 0 and out == ""
    assert "No collection 'nonexistent'" in err and "hint:" in err and "'Reading group'" in err
    code, _, err = run(capsys, "search", "spot deconvolution", "--parent", "ZZZZ9999")
    assert code != 0 and "'ZZZZ9999'" in err


def test_library_use_and_show(capsys, tmp_path, zotero_sqlite):
    data = str(tmp_path / "d")
    assert run(capsys, "library", "use", "sqlite", str(zotero_sqlite), "--data-dir", data)[0] == 0
    code, out, _ = run(capsys, "library", "show", "--json", "--data-dir", data)
    assert json.loads(out)["source"] == "zotero-sqlite"
    code, _, err = run(capsys, "library", "use", "web", "--data-dir", data)
    assert code == 1 and "--library-id" in err


def test_demo_command_runs_headless(demo_home):
    proc = subprocess.run(
        [sys.executable, "-m", "zocrates_nb", "demo"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    for heading in ("== Sync", "== Status", "== User Research Profile section", "== Search", "== Ask"):
        assert heading in proc.stdout
    assert "no language model configured" in proc.stdout
