"""Embedding as a stream of parts (index/embed/stream.py): parts come back in order and whole, the
sessions go on with the next part while one is handed over, an error reaches the part's caller, a
stopped stream skips what it had submitted. The threading helper is driven by small Python "sessions";
the last tests run the real int8 model."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from zocrates_nb.index.embed.stream import Part, PartPool, stream


def _vector(ids: list[int]) -> np.ndarray:
    return np.full(3, float(sum(ids)), dtype=np.float32)


def _pool(run=None, sessions=2) -> PartPool:
    return PartPool([f"session-{n}" for n in range(sessions)], run or (lambda _s, ids: _vector(ids)), dim=3)


def test_each_row_gets_its_own_text_s_vector_in_the_order_submitted():
    pool = _pool()
    parts = [pool.submit([[i, j] for j in range(n)]) for i, n in enumerate((5, 0, 1, 7))]
    for i, (part, n) in enumerate(zip(parts, (5, 0, 1, 7), strict=True)):
        assert part.result().tolist() == [[float(i + j)] * 3 for j in range(n)]
    pool.close()


def test_every_session_works_and_a_part_waits_for_its_slowest_text():
    seen: set[str] = set()

    def run(session, ids):
        seen.add(session)
        time.sleep(0.01)
        return _vector(ids)

    pool = _pool(run, sessions=3)
    assert not pool.threads, "the threads start on the first submit"
    assert len(pool.submit([[i] for i in range(30)]).result()) == 30
    assert seen == {"session-0", "session-1", "session-2"}
    threads = pool.threads
    assert len(threads) == 3
    pool.close()
    assert not pool.threads and not [t for t in threads if t.is_alive()]


def test_the_next_part_is_embedded_while_the_caller_holds_the_last_one():
    started = threading.Event()
    pool = _pool(lambda _s, ids: (started.set() if ids == [99] else None) or _vector(ids))
    parts = [[[1]], [[99]]]
    vectors = stream(parts, pool.submit, ahead=2)
    first = next(vectors)  # the caller now stores part 0 ...
    assert started.wait(5), "part 1 was not being embedded while part 0 was handed over"
    assert first.tolist() == [[1.0] * 3] and next(vectors).tolist() == [[99.0] * 3]
    pool.close()


def test_a_failing_text_fails_its_part_and_later_parts_go_on():
    def run(_session, ids):
        if ids == [13]:
            raise RuntimeError("the model ran out of memory")
        return _vector(ids)

    pool = _pool(run)
    bad, good = pool.submit([[1], [13], [2]]), pool.submit([[3]])
    with pytest.raises(RuntimeError, match="out of memory"):
        bad.result()
    assert good.result().tolist() == [[3.0] * 3]
    pool.close()


def test_a_stream_closed_early_skips_what_it_had_submitted():
    done: list[list[int]] = []
    closed = threading.Event()

    def run(_session, ids):
        if ids[0] != 0:  # parts 1.. wait until the caller has stopped
            closed.wait(5)
        done.append(ids)
        return _vector(ids)

    pool = _pool(run, sessions=1)
    vectors = stream([[[n, m] for m in range(20)] for n in range(4)], pool.submit, ahead=3)
    next(vectors)
    vectors.close()  # part 0 handed over; parts 1-3 were submitted, then dropped
    closed.set()
    pool.close()
    later = [ids for ids in done if ids[0] != 0]
    assert len(later) <= 1, f"{len(later)} texts embedded after the stream was closed"  # at most the one running


def test_a_finished_part_needs_no_pool():
    part = Part.finished(np.ones((2, 3), dtype=np.float32))
    assert part.result().shape == (2, 3)


# ----------------------------------------------------------------- the real int8 model


@pytest.fixture(scope="module")
def embedder():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    model = MiniLMEmbedder()
    yield model
    model.close()


TEXTS = [
    "Spatial transcriptomics maps gene expression onto tissue sections.",
    "Cell-type deconvolution of Visium spots with a reference atlas.",
    "Retrieval-augmented generation cites its sources.",
    "A short note.",
    "Reciprocal rank fusion merges lexical and dense rankings " * 8,
    "Über die Zellteilung — Mitose und Meiose im Vergleich.",
    "量子计算的基础",
]


def test_streamed_vectors_are_exactly_the_embedders_own(embedder):
    alone = np.vstack([embedder.embed([t]) for t in TEXTS])
    parts = [TEXTS[:3], TEXTS[3:4], [], TEXTS[4:]]
    streamed = list(embedder.embed_stream(parts))
    assert [len(v) for v in streamed] == [3, 1, 0, 3]
    assert np.array_equal(np.vstack(streamed), alone)
    assert np.array_equal(embedder.embed(TEXTS), alone)


def test_float32_streams_its_batches():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    reference = MiniLMEmbedder(precision="float32")
    streamed = np.vstack(list(reference.embed_stream([TEXTS[:2], TEXTS[2:]])))
    assert np.max(np.abs(streamed - reference.embed(TEXTS))) < 1e-5
    assert reference.worker() is None  # batches: a process would not give the same vectors


def test_a_dropped_embedder_s_threads_end_with_it():
    """A notebook that re-runs ``open_workbench()`` drops embedders unclosed: their sessions must go too."""
    import gc

    from zocrates_nb.index.embed.model import MiniLMEmbedder

    model = MiniLMEmbedder(threads=2)
    model.embed(TEXTS)  # starts the pool
    threads = model._parts().threads
    assert len(threads) == 2 and all(t.is_alive() for t in threads)
    del model
    gc.collect()
    for thread in threads:
        thread.join(10)
    assert not [t for t in threads if t.is_alive()]
