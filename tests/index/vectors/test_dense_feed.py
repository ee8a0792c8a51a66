"""The sync's dense feed (index/vectors/feed.py): the vectors of a committed batch are embedded while the
next batches are converted, a failed feed is retried by the sync's final pass, and a sync that fails
half-way stops the feed and leaves the fill for the next sync. Real FTS5, real Chroma, the real model."""

from __future__ import annotations

import threading

import pytest

from zocrates_nb.corpus import sync_run
from zocrates_nb.index.lexical import fts
from zocrates_nb.index.vectors.fill import read_progress
from zocrates_nb.workbench.core import Workbench


@pytest.fixture(scope="module")
def model():
    from zocrates_nb.index.embed.model import MiniLMEmbedder

    return MiniLMEmbedder()


class Embedder:
    """The real model, with a hook: ``fail`` raises on the first ``fail`` calls; ``called`` is set on the first."""

    def __init__(self, real, fail: int = 0) -> None:
        self.real, self.model_id, self.dim = real, real.model_id, real.dim
        self.fail, self.calls, self.texts = fail, 0, []
        self.called = threading.Event()

    def embed(self, texts):
        self.calls += 1
        self.called.set()
        if self.calls <= self.fail:
            raise RuntimeError("the model ran out of memory")
        self.texts.extend(texts)
        return self.real.embed(texts)


def _workbench(data_dir, embedder) -> Workbench:
    wb = Workbench(data_dir, auto_sync=False)
    wb.index._embedder = embedder
    return wb


def test_vectors_are_embedded_while_the_next_batch_is_converted(data_dir, model, monkeypatch):
    monkeypatch.setattr(sync_run, "BATCH", 16)  # the demo library's 108 documents (89 + 19 annotations): 7 batches
    embedder = Embedder(model)
    wb = _workbench(data_dir, embedder)
    batches, apply = [], sync_run.SyncRun._apply

    def apply_after_the_first_is_embedding(self, batch):
        if batches:  # a sync that embeds only after its lexical phase never sets the event: it times out
            assert embedder.called.wait(60), "the second batch was converted before any vector was embedded"
        batches.append(len(batch))
        apply(self, batch)

    monkeypatch.setattr(sync_run.SyncRun, "_apply", apply_after_the_first_is_embedding)
    report = wb.sync(progress=False)
    assert len(batches) == 7 and report.counts["new"] == sum(batches) == 108
    assert not report.warnings, report.warnings
    chunk_ids = wb.index._read(fts.chunk_ids)
    assert set(wb.index.vector_store().all_ids()) == chunk_ids  # every chunk has its vector
    assert len(embedder.texts) == len(set(embedder.texts))  # none embedded twice
    assert read_progress(data_dir) is None  # the feed removed its progress file
    assert wb.search("cell-type deconvolution of Visium spots", k=3).notice is None  # hybrid, no notice
    wb.close()


def test_a_failed_feed_is_retried_at_the_end_of_the_sync(data_dir, model):
    wb = _workbench(data_dir, Embedder(model, fail=1))
    report = wb.sync(progress=False)
    assert [w for w in report.warnings if w[0] == "(vectors)"] and "ran out of memory" in str(report.warnings)
    assert set(wb.index.vector_store().all_ids()) == wb.index._read(fts.chunk_ids)  # the retry embedded them
    assert read_progress(data_dir) is None
    wb.close()


def test_a_sync_that_fails_half_way_stops_the_feed_and_the_next_sync_resumes(data_dir, model, monkeypatch):
    monkeypatch.setattr(sync_run, "BATCH", 16)
    embedder = Embedder(model)
    wb = _workbench(data_dir, embedder)
    apply, seen = sync_run.SyncRun._apply, []

    def apply_then_fail(self, batch):
        if len(seen) == 3:
            raise KeyboardInterrupt  # the user pressed Ctrl-C during the lexical phase
        seen.append(batch)
        apply(self, batch)

    monkeypatch.setattr(sync_run.SyncRun, "_apply", apply_then_fail)
    with pytest.raises(KeyboardInterrupt):
        wb.sync(progress=False)
    feeds = [t for t in threading.enumerate() if t.name == "zocrates-dense-feed"]
    assert not feeds, "the feed's thread outlived the failed sync"
    committed = wb.index._read(fts.chunk_ids)
    assert committed and set(wb.index.vector_store().all_ids()) <= committed

    monkeypatch.setattr(sync_run.SyncRun, "_apply", apply)
    report = wb.sync(progress=False)
    # the same process goes on: its consistency check embeds what the stopped feed put back
    assert not [w for w in report.warnings if w[0] == "(vectors)"], report.warnings
    assert set(wb.index.vector_store().all_ids()) == wb.index._read(fts.chunk_ids)
    assert len(embedder.texts) == len(set(embedder.texts))  # what the stopped feed stored is not embedded again
    wb.close()
