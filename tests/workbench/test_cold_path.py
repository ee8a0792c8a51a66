"""Cold paths (issue 13): heavy libraries stay off the imports that do not need them, and a search
issued before the dense side has loaded answers lexically with a notice. Behaviour only, no timings
(benchmarks/bench_cold.py measures them)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest

from tests.index.test_hybrid import stage_all
from zocrates_nb.index.hybrid import HybridIndex
from zocrates_nb.index.warmup import LOADING_NOTICE
from zocrates_nb.paths import DataPaths

HEAVY = ("chromadb", "onnxruntime", "tokenizers", "pandas", "duckdb", "matplotlib", "openai", "ipywidgets")


@pytest.fixture(scope="module")
def embedder():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    return MiniLMEmbedder()


def _imported_after(code: str) -> list[str]:
    """The heavy top-level packages a fresh interpreter has imported after running ``code``."""
    probe = (
        code
        + f"\nimport json, sys\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "module",
    [
        "zocrates_nb",
        "zocrates_nb.cli",
        "zocrates_nb.cli.library",
        "zocrates_nb.workbench.core",
        "zocrates_nb.retrieval.tools",
        "zocrates_nb.index.hybrid",
        "zocrates_nb.corpus.sync",
        "zocrates_nb.health.status",
        "zocrates_nb.workbench.engine",
        "zocrates_nb.cli.engine",
    ],
)
def test_importing_the_entry_points_loads_no_heavy_library(module):
    assert _imported_after(f"import {module}") == []


def test_cli_parser_and_status_load_no_heavy_library(data_dir):
    code = (
        "from zocrates_nb.cli import build_parser, main\n"
        "build_parser()\n"
        f"main(['--data-dir', {str(data_dir)!r}, 'status', '--json'])\n"
    )
    assert _imported_after(code) == []


class GatedEmbedder:
    """The real MiniLM embedder behind a gate: ``embed`` waits until the test opens it, so the
    test decides when "the model has loaded"."""

    def __init__(self, real) -> None:
        self.real, self.gate = real, threading.Event()
        self.model_id, self.dim = real.model_id, real.dim

    def embed(self, texts):
        assert self.gate.wait(60), "the test never opened the gate"
        return self.real.embed(texts)


@pytest.fixture
def gated_index(data_dir, embedder):
    paths = DataPaths(data_dir)
    staged = HybridIndex(paths, {}, embedder=embedder)
    stage_all(staged, paths)
    staged.close()
    gated = GatedEmbedder(embedder)
    index = HybridIndex(paths, {}, embedder=gated)
    yield index, gated
    gated.gate.set()
    index.close()


def test_a_search_before_the_model_is_loaded_is_lexical_with_a_notice(gated_index):
    index, gated = gated_index
    warmup = index.start_warmup()
    assert index.start_warmup() is warmup  # one load per index
    hits, notices = index.search_with_notices("deconvolve Visium spots")
    assert not warmup.ready
    assert hits and hits[0].key == "NOTE2222"
    assert all(h.ranks["dense"] is None for h in hits)
    assert notices == [LOADING_NOTICE] and "lexical results only" in notices[0]

    gated.gate.set()
    assert warmup.wait(120) and warmup.error is None
    hits, notices = index.search_with_notices("deconvolve Visium spots")
    assert notices == [] and any(h.ranks["dense"] is not None for h in hits)


def test_explicit_dense_and_plain_search_wait_for_the_load(gated_index):
    """``search()`` (no fallback: evaluations) and mode="dense" never get lexical stand-ins."""
    index, gated = gated_index
    index.start_warmup()
    threading.Timer(0.3, gated.gate.set).start()
    hits = index.search("how to split mixed spots into cell types", mode="dense")
    assert hits and hits[0].ranks["dense"] == 1
    assert any(h.ranks["dense"] is not None for h in index.search("deconvolve Visium spots"))


def test_a_failed_load_degrades_to_lexical_with_the_reason(data_dir, embedder):
    paths = DataPaths(data_dir)
    staged = HybridIndex(paths, {}, embedder=embedder)
    stage_all(staged, paths)
    staged.close()

    class Broken:
        model_id, dim = embedder.model_id, embedder.dim

        def embed(self, texts):
            from zocrates_nb.errors import ZocratesError

            raise ZocratesError("The embedder broke.", hint="Reinstall it.")

    index = HybridIndex(paths, {}, embedder=Broken())
    warmup = index.start_warmup()
    assert warmup.wait(60) and "embedder broke" in str(warmup.error)
    hits, notices = index.search_with_notices("deconvolve Visium spots")
    assert hits[0].key == "NOTE2222" and "Dense retrieval is unavailable" in notices[0]
    index.close()


def test_open_workbench_returns_before_the_dense_side_and_says_so(demo_home):
    """A fresh interpreter: open_workbench() has not imported chromadb when it returns, and its first
    search (issued at once) is either lexical with the loading notice or, if the load won, hybrid."""
    code = (
        "import sys, json\n"
        "from zocrates_nb import open_workbench\n"
        f"wb = open_workbench({str(demo_home)!r})\n"
        "opened_with_chroma = 'chromadb' in sys.modules and wb.index.warmup.ready\n"
        "r = wb.search('cell-type deconvolution of Visium spots', k=5)\n"
        "ready_before = wb.index.warmup.ready\n"
        "wb.index.warmup.wait(300)\n"
        "again = wb.search('cell-type deconvolution of Visium spots', k=5)\n"
        "print(json.dumps({'notice': r.notice, 'n': len(r.hits), 'dense_first': [h.ranks['dense'] for h in r.hits],\n"
        "                  'again_notice': again.notice, 'dense_again': [h.ranks['dense'] for h in again.hits],\n"
        "                  'opened_with_chroma': opened_with_chroma, 'ready_before': ready_before}))\n"
        "wb.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["n"] == 5 and not out["opened_with_chroma"]
    if not out["ready_before"]:
        assert out["notice"] and "lexical results only" in out["notice"]
        assert all(rank is None for rank in out["dense_first"])
    assert not out["again_notice"] and any(rank is not None for rank in out["dense_again"])


def test_python_and_cli_search_honour_k_beyond_the_agents_cap(demo_workbench, demo_home, capsys):
    from zocrates_nb.cli import main

    results = demo_workbench.search("cell", k=100)
    assert len(results.hits) > 50 and not results.notice  # the demo has 89 documents
    assert "capped at 50" in demo_workbench.tools.search_corpus("cell", k=100).notice  # the agents' tool
    assert main(["--data-dir", str(demo_home), "search", "cell", "--k", "100", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["hits"]) == len(results.hits)


def test_a_first_open_commits_lexical_first_and_embeds_behind_it(tmp_path):
    """open_workbench() on a fresh data directory returns once the lexical index is complete; the
    vectors fill in on the warm-up thread, visible in status, and searches become hybrid after."""
    data = tmp_path / "fresh"
    code = (
        "import json, sys\n"
        "from zocrates_nb import open_workbench\n"
        "from zocrates_nb.index.vectors.fill import read_progress\n"
        "from zocrates_nb.health.status import collect_status\n"
        f"wb = open_workbench({str(data)!r}, progress=False)\n"
        "progress = read_progress(wb.paths.root)\n"
        "lexical_chunks = collect_status(wb.paths)['index']['chunks']\n"
        "first = wb.search('cell-type deconvolution of Visium spots', k=5)\n"
        "assert wb.index.warmup.wait(600)\n"
        "again = wb.search('cell-type deconvolution of Visium spots', k=5)\n"
        "print(json.dumps({'progress': progress, 'chunks': lexical_chunks, 'first': first.notice,\n"
        "                  'error': repr(wb.index.warmup.error), 'vectors': wb.index.vectors.count(),\n"
        "                  'after': read_progress(wb.paths.root), 'again': again.notice,\n"
        "                  'dense': [h.ranks['dense'] for h in again.hits]}))\n"
        "wb.close()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["chunks"] > 100 and out["progress"] is not None  # lexical complete, vectors owed
    assert out["first"] and "lexical results only" in out["first"]
    assert out["error"] == "None" and out["vectors"] == out["chunks"] and out["after"] is None
    assert not out["again"] and any(rank is not None for rank in out["dense"])


def test_cli_hybrid_search_reads_vectors_without_importing_chromadb(demo_home):
    """The one-shot CLI search (no engine) embeds the query and asks the vector store through
    Chroma's Rust bindings (index/vectors/fast.py): ``chromadb`` itself is never imported."""
    code = (
        "import contextlib, io, json\n"
        "from zocrates_nb.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    rc = main(['--data-dir', {str(demo_home)!r}, 'search', 'cell-type deconvolution of Visium spots',\n"
        "               '--json', '--no-engine'])\n"
        "result = json.loads(out.getvalue())\n"
        "assert rc == 0 and not result.get('notice'), result\n"
        "assert any(h['ranks']['dense'] is not None for h in result['hits']), result\n"
    )
    assert _imported_after(code) == ["onnxruntime", "tokenizers"]


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
@pytest.mark.parametrize("filters", [None, {"item_type": "note"}, {"collection": "Deconvolution & cell mapping"}])
def test_one_shot_search_ranks_exactly_like_the_full_client(demo_home, filters, mode):
    """The CLI's one-shot index (bindings reads, no reconcile) against the notebook's (full client)."""
    from zocrates_nb.workbench.core import Workbench

    def ranked(wb):
        try:
            results = wb.search("cell-type deconvolution of Visium spots", k=20, filters=filters, mode=mode)
            return [(h.key, h.chunk_id, h.ranks) for h in results.hits], [h.score for h in results.hits], results.notice
        finally:
            wb.close()

    fast = Workbench(demo_home, one_shot=True)
    reads = fast.index.vector_store()
    want_hits, want_scores, want_notice = ranked(Workbench(demo_home))
    got_hits, got_scores, got_notice = ranked(fast)
    assert got_hits == want_hits and got_notice == want_notice is None
    assert max(map(abs, np.subtract(got_scores, want_scores)), default=0.0) < 1e-6
    assert reads.fast_reason is None and any(ranks["dense"] for _, _, ranks in want_hits)
