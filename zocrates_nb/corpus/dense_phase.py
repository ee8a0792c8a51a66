"""The dense phase of a sync: embed every chunk the sync staged, with a progress bar.

Why apart from the lexical phase: sync commits the FTS rows batch by batch, so lexical search sees
each batch at once; embedding (the slow part, about 90 % of a first sync) follows behind, in a feed
that takes each committed batch while the next is converted (index/vectors/feed.py), then a final
``commit_vectors`` for whatever the feed did not take (a killed fill to resume, removals, a retry).
``zocrates-nb status`` reports it as "dense: 38 % (1,970 / 5,183)", and a killed sync resumes it
(index/vectors/fill.py).
"""

from __future__ import annotations

import inspect
from typing import Any

from zocrates_nb.progress import ProgressReporter


def start_feed(indexer: Any, documents: int) -> Any:
    """The index's background feed for this sync's ``documents`` (new or changed), or None (an index
    without one, or a killed fill to resume first: ``fill_vectors`` then does all of it after the
    lexical phase). A big sync's feed embeds in a child process (index/embed/worker.py)."""
    feed = getattr(indexer, "feed", None)
    return feed(documents) if callable(feed) else None


def finish_feed(feed: Any, report: Any, progress: bool | None) -> BaseException | None:
    """Wait for the feed, with a chunk progress bar; its failure is a sync warning (its chunks were put
    back in the index's queue, so ``fill_vectors`` tries them once more). Returns that failure, so
    the sync can stop at once when it was a full disk (a retry would fail the same way)."""
    feed.end()
    done, total = feed.progress()
    with ProgressReporter(total, "Embedding (dense)", enabled=progress, unit="chunk") as bar:
        bar.update(done)
        while not feed.wait(0.25):
            done, _ = feed.progress()
            bar.update(done - bar.count)
            bar.note(feed.progress_line() or "")
        error = feed.close()
        bar.update(feed.progress()[0] - bar.count)
    if error is not None:
        report.warnings.append(
            (
                "(vectors)",
                f"the background fill stopped ({type(error).__name__}: {error}); "
                "the sync's final pass retried what it had not stored",
            )
        )
    return error


def fill_vectors(indexer: Any, report: Any, progress: bool | None) -> BaseException | None:
    """``indexer.commit_vectors`` with a chunk progress bar; a failure is a sync warning, not an error
    (returned, so the sync can tell a full disk from a model failure)."""
    if indexer is None:
        return None
    bar: ProgressReporter | None = None

    def advance(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = ProgressReporter(total, "Embedding (dense)", enabled=progress, unit="chunk")
        bar.update(done - bar.count)
        bar.note(f"dense: {int(100 * done / max(total, 1))} % ({done:,} / {total:,})")

    takes_progress = "progress" in inspect.signature(indexer.commit_vectors).parameters
    try:
        indexer.commit_vectors(progress=advance) if takes_progress else indexer.commit_vectors()
    except Exception as err:  # noqa: BLE001 - lexical search still works; the next sync resumes the vectors
        report.warnings.append(("(vectors)", f"dense vectors not updated: {type(err).__name__}: {err}"))
        return err
    finally:
        if bar is not None:
            bar.close()
    return None
