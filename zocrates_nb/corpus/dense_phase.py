"""The dense phase of a sync: embed every chunk the sync staged, with a progress bar.

Why a separate phase: sync commits the FTS rows batch by batch first, so lexical search sees the
whole library early; embedding (the slow part, about 90 % of a first sync) follows in one pass that
``zocrates-nb status`` reports as "dense: 38 % (1,970 / 5,183)" and a killed sync resumes
(index/dense_fill.py).
"""

from __future__ import annotations

import inspect
from typing import Any

from ..progress import ProgressReporter


def fill_vectors(indexer: Any, report: Any, progress: bool | None) -> None:
    """``indexer.commit_vectors`` with a chunk progress bar; a failure is a sync warning, not an error."""
    if indexer is None:
        return
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
    finally:
        if bar is not None:
            bar.close()
