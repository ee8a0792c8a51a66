"""The four notebooks execute headless (nbclient), offline, on the demo library.

Each runs in a fresh ``ZOCRATES_HOME`` (the conftest's per-test data directory), so a notebook
must work on a machine with no previous state. The committed files must carry no outputs.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("0*.ipynb"))
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def execute(path: Path, workdir: Path, monkeypatch) -> nbformat.NotebookNode:
    # The kernel inherits this environment: ZOCRATES_HOME from the conftest, and the repo on the
    # path in case the package is not pip-installed.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}})
    client.execute()
    return nb


def outputs(nb) -> list[dict]:
    return [out for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])]


def text_of(nb) -> str:
    parts = []
    for out in outputs(nb):
        data = out.get("data", {})
        parts += [
            data.get("text/html", ""),
            data.get("text/plain", ""),
            data.get("text/markdown", ""),
            out.get("text", ""),
        ]
    return "\n".join(p if isinstance(p, str) else "".join(p) for p in parts)


def test_there_are_four_notebooks():
    assert [p.name for p in NOTEBOOKS] == [
        "01-quickstart.ipynb",
        "02-curated-memory.ipynb",
        "03-retrieval-quality.ipynb",
        "04-diagnostics.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebooks_have_no_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear the outputs"


def test_quickstart_runs_and_finds_the_saved_note(tmp_path, data_dir, monkeypatch):
    nb = execute(REPO / "notebooks" / "01-quickstart.ipynb", tmp_path, monkeypatch)
    text = text_of(nb)
    assert "Evidence from your library" in text or "zc-answer" in text  # the answer rendered
    assert "My summary: estimating cell-type proportions per Visium spot" in text
    assert any(WIDGET_MIME in out.get("data", {}) for out in outputs(nb)), "ChatPanel did not display"
    assert "<script" not in text.lower()
    # the notebook used the test's data directory, not a global one
    assert (data_dir / "corpus").is_dir() and any((data_dir / "corpus").iterdir())


def test_curated_memory_shows_staleness_and_rematerialisation(tmp_path, data_dir, monkeypatch):
    nb = execute(REPO / "notebooks" / "02-curated-memory.ipynb", tmp_path, monkeypatch)
    assert any(WIDGET_MIME in out.get("data", {}) for out in outputs(nb)), "ProfileEditor did not display"
    text = text_of(nb)
    assert "zc-bundle" in text and "revisit this with the MERFISH atlas" in text
    assert sum("image/png" in out.get("data", {}) for out in outputs(nb)) >= 1, "plot_staleness did not draw"
    assert "<script" not in text.lower()
    import json

    config = json.loads((data_dir / "zocrates_config.json").read_text())
    assert config["user_research_profile"].startswith("Postdoc in spatial transcriptomics")


def test_retrieval_quality_compares_modes_with_plots(tmp_path, data_dir, monkeypatch):
    monkeypatch.delenv("ZOCRATES_EVAL_DATASET", raising=False)
    nb = execute(REPO / "notebooks" / "03-retrieval-quality.ipynb", tmp_path, monkeypatch)
    text = text_of(nb)
    for mode in ("lexical", "dense", "hybrid"):
        assert mode in text
    assert "recall@5" in text
    # BEIR nDCG@10, and note recall@5 and MRR per mode
    assert sum("image/png" in out.get("data", {}) for out in outputs(nb)) >= 3


def test_diagnostics_notebook_plots_hit_rates_tokens_latency(tmp_path, data_dir, monkeypatch):
    nb = execute(REPO / "notebooks" / "04-diagnostics.ipynb", tmp_path, monkeypatch)
    assert sum("image/png" in out.get("data", {}) for out in outputs(nb)) >= 3
    text = text_of(nb)
    assert "hit_rate" in text and "p95" in text
    assert "fabrication_rate" in text and "not_in_evidence" in text  # the citation checks, per model
