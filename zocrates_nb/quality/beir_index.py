"""The BEIR evaluation index: a ``HybridIndex`` over one BEIR corpus, cached per corpus hash.

Why a module of its own: ``evaluate.py`` is an entry point, and entry points do not build indexes
(import-linter's "workbench.py is the only wiring" contract); like ``saving.py`` and ``zotero_setup.py``
this module sits beside the wiring and hands the harness a ready index. One chunk per BEIR document,
as the published baselines do, so bm25 reads each document whole; the dense side embeds each of the
chunk's windows (``vectors.windows``, index/vectors/windows.py) and scores a document by its best,
so no part of a long abstract is invisible to it (it saw only the first 256 word pieces before).
The index lives under ``<data-dir>/eval/`` keyed by the corpus hash.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zocrates_nb.index.lexical.fts import ChunkRow, FtsDocument
from zocrates_nb.paths import DataPaths

if TYPE_CHECKING:
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.quality.beir import BeirDataset

__all__ = ["beir_records", "open_eval_index"]

#: How the dense side of the evaluation index is cut (a change re-embeds a cached index once).
WINDOWS_VERSION = 1


def beir_records(corpus: Mapping[str, tuple[str, str]]) -> list[tuple[FtsDocument, list[ChunkRow]]]:
    """One index document (and one chunk) per BEIR document, as the published baselines do."""
    records = []
    for doc_id, (title, text) in corpus.items():
        doc = FtsDocument(key=doc_id, kind="paper", title=title, item_type="beir", word_count=len(text.split()))
        records.append(
            (
                doc,
                [ChunkRow(chunk_id=f"{doc_id}:0", key=doc_id, kind="paper", text=text, title=title, item_type="beir")],
            )
        )
    return records


def _marker_path(folder: Path) -> Path:
    return folder / "eval_index.json"


def open_eval_index(
    paths: DataPaths,
    dataset: BeirDataset,
    *,
    vectors: bool,
    search: Mapping[str, Any] | None = None,
    embedder: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[HybridIndex, bool]:
    """The cached evaluation index for this corpus (built or completed if needed) → (index, built)."""
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.storage.locks import file_lock

    folder = Path(paths.eval_cache) / f"{dataset.name}-{dataset.corpus_sha256[:16]}"
    folder.mkdir(parents=True, exist_ok=True)
    config = {"vectors": {"mode": "persistent", "windows": True}, "search": dict(search or {})}
    built = False
    with file_lock(folder / "build.lock", timeout=3600):
        marker_file = _marker_path(folder)
        marker = json.loads(marker_file.read_text(encoding="utf-8")) if marker_file.is_file() else {}
        if marker.get("corpus_sha256") != dataset.corpus_sha256:
            marker = {"corpus_sha256": dataset.corpus_sha256, "dataset": dataset.name}
        index = HybridIndex(DataPaths(folder), config, embedder=embedder, auto_repair_limit=10**9)
        if not marker.get("fts"):
            index.index_records(beir_records(dataset.corpus()), vectors=False)
            marker.update(fts=True, documents=index.stats()["documents"], vectors=None)
            built = True
            _write_marker(marker_file, marker)
        model_id = getattr(index.embedder, "model_id", None) if vectors else None
        if vectors and (marker.get("vectors") != model_id or marker.get("windows") != WINDOWS_VERSION):
            if marker.get("vectors") and marker.get("windows") != WINDOWS_VERSION:
                index.vector_store().reset()  # vectors of the first 256 pieces only: embedded again
            marker.update(vectors=None, windows=WINDOWS_VERSION)
            _write_marker(marker_file, marker)  # a killed fill resumes without resetting again
            index.reconcile(progress=progress)  # embeds only what is missing: resumable
            marker["vectors"] = model_id
            built = True
            _write_marker(marker_file, marker)
    return index, built


def _write_marker(path: Path, marker: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(marker, indent=2), encoding="utf-8")
    tmp.replace(path)
