"""The optional server mode against a real ``chroma run`` on 127.0.0.1 (the lab-scale path)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tests.fakes.embeddings import vec
from tests.fakes.loopback import free_port
from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.index.vectors.store import VectorStore, chunk_metadata, where_for
from zocrates_nb.paths import DataPaths

DIM = 8
CHROMA = Path(sys.executable).parent / "chroma"


@pytest.fixture
def chroma_server(tmp_path):
    chroma = CHROMA if CHROMA.exists() else shutil.which("chroma")
    if not chroma:
        pytest.skip("the `chroma` command (chromadb's CLI) is not installed")
    port = free_port()
    log = open(tmp_path / "chroma.log", "w")
    proc = subprocess.Popen(
        [str(chroma), "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=dict(os.environ, ANONYMIZED_TELEMETRY="False"),
    )
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2) as reply:
                if reply.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.close()
            pytest.fail(f"chroma run did not become healthy: {(tmp_path / 'chroma.log').read_text()[-2000:]}")
        time.sleep(0.3)
    yield port
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
    log.close()


def test_http_mode_round_trip_against_a_real_chroma_server(chroma_server, data_dir):
    config = {"vectors": {"mode": "http", "host": "127.0.0.1", "port": chroma_server}}
    paths = DataPaths(data_dir).ensure()
    store = VectorStore(paths, config, model_id="test-model", dim=DIM)
    ids = ["N1#0", "N1#1", "P1#0", "P2#0"]
    metas = [
        chunk_metadata(
            key=i.split("#")[0],
            kind="note" if i.startswith("N") else "paper",
            item_type="note" if i.startswith("N") else "journalArticle",
            title=i,
            chunk_index=int(i[-1]),
            parent_key="P1" if i.startswith("N") else "",
            collection_keys=["C1"] if i.startswith("P1") else [],
        )
        for i in ids
    ]
    store.upsert(ids, np.stack([vec(i) for i in ids]), metas, [f"text {i}" for i in ids])

    assert store.count() == 4
    assert store.query(vec("P1#0"), 2)[0][0] == "P1#0"
    assert [i for i, _ in store.query(vec("N1#0"), 10, where_for({"collection": "C1"}))] == ["P1#0"]
    assert sorted(i for i, _ in store.query(vec("P2#0"), 10, where_for({"parent_key": "P1"}))) == ["N1#0", "N1#1"]
    assert store.ids_for_key("N1") == ["N1#0", "N1#1"]

    store.delete_keys(["N1"])
    assert store.all_ids() == ["P1#0", "P2#0"]
    assert not paths.chroma.exists()  # server mode keeps nothing in the data directory

    other = VectorStore(paths, config, model_id="another-model", dim=DIM)
    with pytest.raises(IndexCorruptError, match="test-model"):
        other.query(vec("P1#0"), 1)
    other.reset()
    assert other.count() == 0
    other.upsert(
        ["X#0"],
        vec("X#0")[None, :],
        [chunk_metadata(key="X", kind="note", item_type="note", title="", chunk_index=0)],
        ["x"],
    )
    assert other.query(vec("X#0"), 1)[0][0] == "X#0"
    other.close()
    store.close()
