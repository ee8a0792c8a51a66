"""Several kernels, one data directory: real OS processes sharing one persistent Chroma folder.

Each worker is a separate Python process holding its own ``VectorStore`` (and so its own Chroma
client) on the same data directory, driven over stdin/stdout with JSON lines. Every read from
a worker has a timeout, so a hang fails the test instead of freezing it.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from tests.fakes.embeddings import vec as unit_vector
from zocrates_nb.storage.locks import file_lock

REPO = Path(__file__).resolve().parents[3]
DIM = 16

WORKER = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from pathlib import Path
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.index.vectors.store import VectorStore, chunk_metadata
    from zocrates_nb.errors import ZocratesError

    DIM = 16
    from tests.fakes.embeddings import vec as unit_vector
    def vec(chunk_id):
        return unit_vector(chunk_id, DIM)
    def meta(chunk_id):
        key = chunk_id.split("#")[0]
        return chunk_metadata(key=key, kind="note", item_type="note", title=key, chunk_index=0)

    store = VectorStore(DataPaths(Path(sys.argv[1])), model_id="test-model", dim=DIM,
                        lock_timeout=float(sys.argv[2]))
    print(json.dumps({"ok": True, "result": "ready"}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            op = cmd["op"]
            if op == "upsert":
                ids = cmd["ids"]
                store.upsert(ids, np.stack([vec(i) for i in ids]), [meta(i) for i in ids], ids)
                result = len(ids)
            elif op == "write_loop":      # many small locked writes, with a query after each
                written = []
                for b in range(cmd["batches"]):
                    ids = [f"{cmd['prefix']}{b}-{j}#0" for j in range(cmd["batch"])]
                    store.upsert(ids, np.stack([vec(i) for i in ids]), [meta(i) for i in ids], ids)
                    written += ids
                    top = store.query(vec(ids[0]), 1)
                    assert top and top[0][0] == ids[0], (ids[0], top)
                    if cmd.get("pause"):
                        time.sleep(cmd["pause"])
                result = len(written)
            elif op == "top1":            # nearest chunk of each id's own vector
                result = {i: (store.query(vec(i), 1) or [[None]])[0][0] for i in cmd["ids"]}
            elif op == "count":
                result = store.count()
            elif op == "all_ids":
                result = store.all_ids()
            elif op == "delete_keys":
                store.delete_keys(cmd["keys"])
                result = True
            elif op == "quit":
                break
            else:
                raise ValueError(op)
            print(json.dumps({"ok": True, "result": result}), flush=True)
        except ZocratesError as exc:
            print(json.dumps({"ok": False, "error": type(exc).__name__, "message": str(exc)}), flush=True)
        except Exception as exc:
            print(json.dumps({"ok": False, "error": type(exc).__name__, "message": repr(exc)}), flush=True)
""")


def vec(chunk_id: str) -> np.ndarray:
    return unit_vector(chunk_id, DIM)


class Worker:
    """One kernel stand-in: a subprocess with its own VectorStore on the shared data directory."""

    def __init__(self, script: Path, data_dir: Path, lock_timeout: float = 30.0) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO), ANONYMIZED_TELEMETRY="False")
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(data_dir), str(lock_timeout)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        assert self.reply(timeout=60) == "ready"

    def _pump(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("{"):
                self._lines.put(line)

    def send(self, **cmd) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def reply(self, timeout: float = 60) -> object:
        try:
            answer = json.loads(self._lines.get(timeout=timeout))
        except queue.Empty:
            pytest.fail(
                f"worker {self.proc.pid} did not answer within {timeout} s (hang?); alive={self.proc.poll() is None}"
            )
        if not answer["ok"]:
            raise AssertionError(f"worker error {answer['error']}: {answer['message']}")
        return answer["result"]

    def call(self, timeout: float = 60, **cmd) -> object:
        self.send(**cmd)
        return self.reply(timeout)

    def raw_call(self, timeout: float = 60, **cmd) -> dict:
        self.send(**cmd)
        return json.loads(self._lines.get(timeout=timeout))

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.send(op="quit")
                self.proc.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def spawn(tmp_path, data_dir):
    script = tmp_path / "vector_worker.py"
    script.write_text(WORKER, encoding="utf-8")
    workers: list[Worker] = []

    def make(lock_timeout: float = 30.0) -> Worker:
        worker = Worker(script, data_dir, lock_timeout)
        workers.append(worker)
        return worker

    yield make
    for worker in workers:
        worker.stop()


def test_a_write_in_one_process_is_found_by_the_other_on_its_next_query(spawn):
    a, b = spawn(), spawn()
    first = [f"N{i}#0" for i in range(20)]
    assert a.call(op="upsert", ids=first) == 20
    # B opened its client before A's write and has already answered queries from it.
    assert b.call(op="count") == 20
    assert b.call(op="top1", ids=first[:5]) == {i: i for i in first[:5]}
    assert a.call(op="top1", ids=first[:2]) == {i: i for i in first[:2]}

    a.call(op="upsert", ids=["SAVED#0"])  # "a note saved in one kernel"
    assert b.call(op="top1", ids=["SAVED#0"]) == {"SAVED#0": "SAVED#0"}
    assert b.call(op="count") == 21

    b.call(op="delete_keys", keys=["N3", "SAVED"])  # and deletions travel the other way
    assert a.call(op="count") == 19
    assert "SAVED#0" not in a.call(op="all_ids")
    assert a.call(op="top1", ids=["N3#0"])["N3#0"] != "N3#0"


def test_concurrent_writers_lose_nothing_and_stay_queryable(spawn):
    a, b = spawn(), spawn()
    # 2 x 14 x 50 = 1,400 vectors: past Chroma's sync_threshold (1,000), so segments get persisted
    # while the other process keeps writing.
    a.send(op="write_loop", prefix="A", batches=14, batch=50)
    b.send(op="write_loop", prefix="B", batches=14, batch=50)
    assert a.reply(timeout=300) == 700
    assert b.reply(timeout=300) == 700

    expected = sorted(f"{p}{bt}-{j}#0" for p in "AB" for bt in range(14) for j in range(50))
    assert a.call(op="all_ids") == expected
    assert b.call(op="count") == 1400
    fresh = spawn()  # a new kernel opening the directory afterwards
    assert fresh.call(op="count") == 1400
    sample = expected[::37]
    assert fresh.call(op="top1", ids=sample) == {i: i for i in sample}
    assert a.call(op="top1", ids=sample) == {i: i for i in sample}


def test_a_writer_killed_mid_write_leaves_a_usable_index(spawn):
    a, b = spawn(), spawn()
    a.send(op="write_loop", prefix="K", batches=400, batch=20, pause=0.01)
    time.sleep(2.0)
    a.proc.send_signal(signal.SIGKILL)
    a.proc.wait(timeout=10)

    n = b.call(op="count")
    assert n % 20 == 0  # every locked batch is all-or-nothing
    ids = b.call(op="all_ids")
    assert len(ids) == n
    if ids:
        assert b.call(op="top1", ids=ids[-3:]) == {i: i for i in ids[-3:]}
    b.call(op="upsert", ids=["AFTER#0"])
    c = spawn()
    assert c.call(op="count") == n + 1
    assert c.call(op="top1", ids=["AFTER#0"]) == {"AFTER#0": "AFTER#0"}


def test_a_held_lock_gives_a_clear_busy_error_not_a_hang(spawn, data_dir):
    a = spawn(lock_timeout=1.0)
    a.call(op="upsert", ids=["X#0"])
    with file_lock(data_dir / "locks" / "chroma.lock", timeout=5):
        started = time.monotonic()
        answer = a.raw_call(op="count", timeout=30)
        waited = time.monotonic() - started
    assert answer["ok"] is False and answer["error"] == "IndexBusyError"
    assert "busy" in answer["message"] and "→" in answer["message"]
    assert waited < 20
    assert a.call(op="count") == 1  # and it recovers once the lock is free
