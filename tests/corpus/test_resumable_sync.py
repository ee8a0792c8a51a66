"""A first sync killed while it embeds (issue 13): lexical search already covers every document,
`status` shows how far the dense side got, and the next sync embeds only what is missing.
A real subprocess, a real SIGKILL at a handshaken point, the real model, FTS5 and Chroma."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from zocrates_nb.health.status import collect_status, format_status
from zocrates_nb.index.lexical import fts
from zocrates_nb.index.vectors.fill import read_progress
from zocrates_nb.paths import DataPaths


@pytest.fixture(scope="module")
def embedder():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    return MiniLMEmbedder()


CHILD = """
import sys, time
from pathlib import Path
import zocrates_nb.index.consistency as consistency
consistency._EMBED_BATCH = 16
from zocrates_nb.index.embed.model import MiniLMEmbedder
from zocrates_nb.workbench.core import Workbench

real, calls = MiniLMEmbedder(), [0]

class Stalling:
    model_id, dim = real.model_id, real.dim

    def embed(self, texts):
        calls[0] += 1
        if calls[0] == 4:                      # three batches are embedded (and being stored): stop for the kill
            Path(sys.argv[2]).write_text("ready")
            time.sleep(600)
        return real.embed(texts)

wb = Workbench(sys.argv[1], auto_sync=False)
wb.index._embedder = Stalling()
wb.sync(progress=False)
"""


def test_a_killed_first_sync_is_resumed_without_embedding_anything_twice(tmp_path, embedder):
    data = tmp_path / "data"
    flag = tmp_path / "stalled"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(data), str(flag)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 300
        while not flag.exists():
            assert child.poll() is None, child.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the child never reached the embedding phase"
            time.sleep(0.1)
        while (running := read_progress(data))["done"] < 48:  # the third part's write may still be running
            assert time.monotonic() < deadline, f"the first three parts were never stored: {running}"
            time.sleep(0.1)
        assert running["running"] and running["total"] > running["done"]
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    progress = read_progress(data)  # the dead process's last figures
    assert not progress["running"] and progress["done"] >= 48

    paths = DataPaths(data)
    # lexical search already covers every document the killed sync staged
    from zocrates_nb.workbench.core import Workbench

    wb = Workbench(data, auto_sync=False)
    wb.index._embedder = Recording(embedder)
    chunk_ids = wb.index._read(fts.chunk_ids)
    # the sync feeds each batch to the dense side once it commits: what it fed is committed (a batch
    # committed in the instant before the kill may not have been fed yet)
    assert progress["total"] <= len(chunk_ids)
    assert wb.search("cell-type deconvolution", k=3, mode="lexical").hits
    status = collect_status(paths)
    assert status["index"]["dense_progress"]["running"] is False
    assert "interrupted" in format_status(status) and f"/ {progress['total']:,})" in format_status(status)

    already = set(wb.index.vector_store().all_ids())  # what the killed sync had upserted
    assert len(already) >= 48
    report = wb.sync(progress=False)
    assert not report.warnings, report.warnings
    assert set(wb.index.vector_store().all_ids()) == chunk_ids
    embedded = wb.index._embedder.texts
    expected = {embedding_text_of(wb, cid) for cid in chunk_ids - already}
    assert set(embedded) == expected and len(embedded) == len(expected)  # nothing embedded twice
    assert read_progress(data) is None and "dense" not in format_status(collect_status(paths))
    assert wb.sync(progress=False).counts["new"] == 0 and wb.index._embedder.texts == embedded
    wb.close()


class Recording:
    def __init__(self, real) -> None:
        self.real, self.texts = real, []
        self.model_id, self.dim = real.model_id, real.dim

    def embed(self, texts):
        self.texts.extend(texts)
        return self.real.embed(texts)


def embedding_text_of(wb, chunk_id: str) -> str:
    from zocrates_nb.index.records import embedding_text

    row = wb.index._read(lambda conn: fts.chunk_rows(conn, [chunk_id]))[chunk_id]
    return embedding_text(row.title, row.text, row.context)
