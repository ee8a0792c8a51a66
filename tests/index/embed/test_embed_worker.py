"""The embedder in a child process (index/embed/worker.py), real processes and the real int8 model: the
same vectors bit for bit, parts answered in order, a child that dies or cannot load its model is a
clear error, and a child never outlives its parent. Then a big sync with it: the feed's vectors are the
in-process ones, and a child killed mid-sync leaves the sync's final pass to embed what it had not."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.index import consistency
from zocrates_nb.index.embed.worker import EmbedWorker, WorkerFailed
from zocrates_nb.index.lexical import fts

TEXTS = [
    "Spatial transcriptomics maps gene expression onto tissue sections.",
    "Cell-type deconvolution of Visium spots with a reference atlas.",
    "Über die Zellteilung — Mitose und Meiose im Vergleich.",
    "量子计算的基础 and an emoji 🧬",
    "Reciprocal rank fusion merges lexical and dense rankings " * 40,  # past the 256-token window
    "",
]


@pytest.fixture(scope="module")
def in_process():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    model = MiniLMEmbedder()
    yield model
    model.close()


@pytest.fixture
def worker():
    process = EmbedWorker()
    yield process
    process.close()


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child: reap it, or it lingers as a zombie
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


def test_its_vectors_are_the_in_process_ones_bit_for_bit(worker, in_process):
    assert np.array_equal(worker.embed(TEXTS), in_process.embed(TEXTS))
    parts = [TEXTS[:2], [], TEXTS[2:5], TEXTS[5:]]
    streamed = list(worker.embed_stream(parts))
    assert [len(v) for v in streamed] == [2, 0, 3, 1]
    assert np.array_equal(np.vstack(streamed), in_process.embed(TEXTS))
    assert worker.pid != os.getpid() and "running" in repr(worker)


def test_a_stream_closed_early_keeps_the_next_answers_in_step(worker, in_process):
    vectors = worker.embed_stream([[t] for t in TEXTS], ahead=4)
    next(vectors)
    vectors.close()  # three parts were still in flight: their answers must not reach the next caller
    assert np.array_equal(worker.embed(TEXTS[2:4]), in_process.embed(TEXTS[2:4]))


def test_a_killed_child_is_an_error_that_says_so(worker):
    worker.embed(TEXTS[:1])
    os.kill(worker.pid, signal.SIGKILL)
    with pytest.raises(WorkerFailed) as caught:
        worker.embed(TEXTS)
    assert str(worker.pid) in caught.value.message and "exit code -9" in caught.value.message
    assert "final pass" in caught.value.hint
    with pytest.raises(WorkerFailed):  # and it stays failed: no answer from a dead process
        worker.submit(TEXTS[:1])


def test_a_damaged_model_is_the_rebuild_error_from_the_child(tmp_path):
    from zocrates_nb.index.embed.model import default_model_dir

    broken = tmp_path / "model"
    subprocess.run(["cp", "-r", str(default_model_dir()), str(broken)], check=True)
    (broken / "model.onnx").write_bytes(b"not an onnx graph")
    with EmbedWorker(broken) as process:
        with pytest.raises(IndexCorruptError) as caught:
            process.embed(TEXTS[:1])
    assert "could not be loaded" in caught.value.message and "--build --force" in caught.value.hint


def test_ctrl_c_is_left_to_the_parent(worker, in_process):
    worker.embed(TEXTS[:1])  # loaded
    os.kill(worker.pid, signal.SIGINT)
    assert np.array_equal(worker.embed(TEXTS[:2]), in_process.embed(TEXTS[:2]))


def test_closing_ends_the_child(worker):
    worker.embed(TEXTS[:1])
    worker.close()
    assert _gone(worker.pid, 10) and "ended (0)" in repr(worker)


def test_the_child_never_outlives_a_killed_parent(tmp_path):
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import time
                from zocrates_nb.index.embed.worker import EmbedWorker
                worker = EmbedWorker()
                worker.embed(["loaded"])
                print(worker.pid, flush=True)
                time.sleep(120)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    assert _gone(child, 20), f"the embedding process {child} outlived its killed parent"


# ----------------------------------------------------------------- a big sync with the worker


@pytest.fixture
def big_sync(monkeypatch):
    """Every sync gets its feed's own embedding process (the demo library is below the real threshold)."""
    monkeypatch.setattr(consistency, "WORKER_MIN_DOCUMENTS", 1)
    started: list[EmbedWorker] = []
    real_init = EmbedWorker.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(EmbedWorker, "__init__", recording_init)
    return started


def test_a_big_sync_embeds_in_its_own_process_with_the_same_vectors(data_dir, big_sync, in_process, monkeypatch):
    from zocrates_nb.index.records import embedding_text
    from zocrates_nb.index.vectors.store import VectorStore
    from zocrates_nb.workbench.core import Workbench

    upserted: dict[str, np.ndarray] = {}  # what the sync hands to Chroma (which may move a last bit itself)
    real_upsert = VectorStore.upsert

    def recording_upsert(self, ids, embeddings, metadatas, documents=None):
        upserted.update(zip(ids, np.asarray(embeddings, dtype=np.float32), strict=True))
        real_upsert(self, ids, embeddings, metadatas, documents)

    monkeypatch.setattr(VectorStore, "upsert", recording_upsert)
    wb = Workbench(data_dir, auto_sync=False)
    report = wb.sync(progress=False)
    assert not report.warnings, report.warnings
    assert len(big_sync) == 1 and _gone(big_sync[0].pid, 10)  # one process for the feed, ended with it
    chunk_ids = wb.index._read(fts.chunk_ids)
    assert set(wb.index.vector_store().all_ids()) == chunk_ids == set(upserted)
    rows = wb.index._read(lambda conn: fts.chunk_rows(conn, chunk_ids))
    order = sorted(chunk_ids)
    expected = in_process.embed([embedding_text(rows[c].title, rows[c].text, rows[c].context) for c in order])
    assert np.array_equal(np.vstack([upserted[c] for c in order]), expected)
    assert wb.search("cell-type deconvolution of Visium spots", k=3).notice is None
    wb.close()


def _die_after(answers: int, monkeypatch) -> None:
    """The embedding process is killed once it has sent ``answers`` parts' vectors."""
    real_receive = EmbedWorker._receive_one

    def receive(self):
        if self._received == answers:
            os.kill(self.pid, signal.SIGKILL)
        real_receive(self)

    monkeypatch.setattr(EmbedWorker, "_receive_one", receive)


def test_a_child_killed_mid_sync_leaves_the_rest_to_the_final_pass(data_dir, big_sync, monkeypatch):
    from zocrates_nb.workbench.core import Workbench

    _die_after(1, monkeypatch)
    wb = Workbench(data_dir, auto_sync=False)
    report = wb.sync(progress=False)
    vectors = [w for w in report.warnings if w[0] == "(vectors)"]
    assert vectors and "embedding process" in vectors[0][1] and "final pass" in vectors[0][1], report.warnings
    assert len(big_sync) == 1  # the final pass embedded in this process, without a second child
    assert set(wb.index.vector_store().all_ids()) == wb.index._read(fts.chunk_ids)
    wb.close()


def test_a_big_rebuild_falls_back_to_this_process_when_its_child_dies(demo_home, monkeypatch, caplog):
    from zocrates_nb.workbench.core import Workbench

    monkeypatch.setattr(consistency, "WORKER_MIN_TEXTS", 1)
    _die_after(1, monkeypatch)  # the demo library is two parts: the second one dies with the child
    wb = Workbench(demo_home, auto_sync=False)
    result = wb.index.rebuild(wb.corpus)
    assert result["chunks"] == len(wb.index._read(fts.chunk_ids))
    assert set(wb.index.vector_store().all_ids()) == wb.index._read(fts.chunk_ids)
    assert any("chunks left in this process" in r.getMessage() for r in caplog.records)
    wb.close()
