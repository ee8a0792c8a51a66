"""Searching the index: lexical and dense candidates (side by side in hybrid mode), then fusion.

Why RRF: on SciFact (offline-models-and-eval.md §D) porter bm25 scores 0.687 nDCG@10
and MiniLM 0.645, and RRF(k=60) of the two 0.716 — the two retrievers fail on
different queries, and RRF needs no score calibration between them. The fusion and
the assembly of SearchHits are pure functions (index/rank/fusion.py, index/rank/assembly.py);
this module gathers their inputs from the connection and the vector store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from zocrates_nb.errors import IndexCorruptError, QueryError, ZocratesError
from zocrates_nb.index.core import REBUILD_HINT, IndexCore
from zocrates_nb.index.lexical import fts, note_links
from zocrates_nb.index.lexical.libraries import resolve_library
from zocrates_nb.index.lexical.split import lexical_search
from zocrates_nb.index.rank.assembly import build_hits, chunk_units, collapse_to_documents, rank_units
from zocrates_nb.index.rank.blend import blend_scores
from zocrates_nb.index.rank.bridge import weighted
from zocrates_nb.index.rank.fusion import fuse, lane_weight_for
from zocrates_nb.index.rank.note_lane import note_intent
from zocrates_nb.index.rank.ranking import (
    MODES,
    SearchHit,
    check_filters,
    prepare_query,
    unknown_collection_error,
    unknown_parent_error,
)
from zocrates_nb.index.vectors.windows import WINDOW_DEPTH, best_per_chunk
from zocrates_nb.storage.space import reading_only_notice


class IndexSearch(IndexCore):
    """The searching half of HybridIndex."""

    def search(
        self,
        query: str,
        k: int = 10,
        filters: Mapping[str, Any] | None = None,
        mode: str = "hybrid",
        *,
        collapse: bool = True,
        query_embedding: Any = None,
    ) -> list[SearchHit]:
        """Top ``k`` results. ``collapse`` keeps the best chunk per document (agents want documents)."""
        hits, _ = self.search_with_notices(
            query, k, filters, mode, collapse=collapse, query_embedding=query_embedding, fallback=False
        )
        return hits

    def search_with_notices(
        self,
        query: str,
        k: int = 10,
        filters: Mapping[str, Any] | None = None,
        mode: str = "hybrid",
        *,
        collapse: bool = True,
        query_embedding: Any = None,
        fallback: bool = True,
    ) -> tuple[list[SearchHit], list[str]]:
        """Like :meth:`search`, plus notices; with ``fallback`` a failing dense side degrades
        hybrid search to lexical (said in a notice) instead of failing the agent's turn."""
        if mode not in MODES:
            raise QueryError(f"Unknown search mode {mode!r}.", hint=f"Use one of: {', '.join(MODES)}.")
        text, notice = prepare_query(query)
        notices = [notice] if notice else []
        mode = self._mode_for_directory(mode, fallback, notices)
        filters = self._with_library_id(check_filters(filters))
        k = max(1, min(int(k), 1000))
        depth = max(self.depth, k)
        lists: dict[str, list[str]] = {}
        raw_scores: dict[str, dict[str, float]] = {}
        # hybrid: FTS runs on the worker thread while this one embeds the query and asks the vector
        # store (sqlite3, onnxruntime and Chroma all release the GIL while they work)
        job = (
            self._lexical_pool().submit(self._lexical, text, depth, filters)
            if mode == "hybrid" and self.parallel
            else None
        )
        found: list[tuple[str, str, float]] | None = None
        if mode == "lexical" or (mode == "hybrid" and job is None):
            found = self._lexical(text, depth, filters)
        loading = self._warmup.notice() if self._warmup is not None and mode == "hybrid" and fallback else None
        if loading and query_embedding is None:
            notices.append(loading)
            lists["dense"], raw_scores["dense"] = [], {}
        elif mode in ("hybrid", "dense"):
            if self._warmup is not None:
                self._warmup.wait()  # dense asked for explicitly: wait for the load
            try:
                found_dense = self._dense(text, depth, filters, query_embedding)
            except ZocratesError as exc:
                if not (fallback and mode == "hybrid"):
                    _settle(job)
                    raise
                notices.append(
                    f"Dense retrieval is unavailable, so these are lexical results only: "
                    f"{exc.message} {exc.hint or ''}".strip()
                )
                found_dense = []
            except BaseException:
                _settle(job)
                raise
            lists["dense"] = [cid for cid, _ in found_dense]
            raw_scores["dense"] = {cid: 1.0 - dist for cid, dist in found_dense}
        if job is not None:
            found = job.result()
        if found is not None:
            lists = {"lexical": [cid for cid, _, _ in found], **lists}
            raw_scores["lexical"] = {cid: -score for cid, _, score in found}
        if not any(lists.values()):
            self._check_not_lost()
            self._check_filter_targets(filters)
        return self._assemble(lists, raw_scores, k, collapse, mode, text), notices

    def _with_library_id(self, filters: dict[str, str]) -> dict[str, str]:
        """A ``library`` filter's name or id as the library_id the index stores (refused when it names none)."""
        if filters.get("library"):
            value = filters["library"]
            filters["library"] = str(self._read(lambda conn: resolve_library(conn, value)).library_id)
        return filters

    def _mode_for_directory(self, mode: str, fallback: bool, notices: list[str]) -> str:
        """Reading only (a read-only or full data directory, so no vector store): hybrid answers
        lexically, said in a notice; dense is left to say itself why it cannot open."""
        if not self.paths.unwritable:
            return mode
        notices.append(reading_only_notice(self.paths.root, self.paths.unwritable))
        return "lexical" if mode == "hybrid" and fallback else mode

    def _lexical(self, text: str, depth: int, filters: Mapping[str, str]) -> list[tuple[str, str, float]]:
        if filters and not self._allowed.get(filters):
            return []  # nothing passes: no need to rank every match first
        return self._read(
            lambda conn: lexical_search(conn, text, depth, filters, self._frequencies, self._impacts, self._side)
        )

    def _lexical_pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="zocrates-fts")
            return self._pool

    def _dense(
        self, text: str, depth: int, filters: Mapping[str, str], query_embedding: Any
    ) -> list[tuple[str, float]]:
        from zocrates_nb.index.vectors.store import where_for

        if query_embedding is None:
            query_embedding = self.embedder.embed([text])[0]
        if not filters:
            if self.dense_windows:  # each chunk at its best window (index/vectors/windows.py)
                return best_per_chunk(self.vectors.query(query_embedding, depth * WINDOW_DEPTH), depth)
            return self.vectors.query(query_embedding, depth)
        from zocrates_nb.index.filtered import dense_with_filter

        allowed = self._allowed.get(filters)
        # a filtered search reads a chunk's first window only (the allowed sets hold chunk ids)
        return dense_with_filter(
            self.vectors,
            query_embedding,
            depth,
            allowed,
            self._allowed.total,
            where_for(filters),
            self._allowed.small_sets,
        )

    def _assemble(
        self,
        lists: dict[str, list[str]],
        raw_scores: dict[str, dict[str, float]],
        k: int,
        collapse: bool,
        mode: str,
        query: str = "",
    ) -> list[SearchHit]:
        """Fuse (or pass through) the per-retriever lists, collapse to documents, attach provenance.

        Fusion has a note lane (index/rank/fusion.py): notes also score by their rank among notes.
        The ranking itself is pure (index/rank/assembly.py); this reads the rows it needs.
        """
        lists, note_chunks, weight, chunk_fused, marks = self._fuse_chunks(lists, mode, query)
        keys: Mapping[str, str] | None = None
        if collapse:
            keys = self._read(lambda conn: fts.chunk_keys(conn, {c for ranking in lists.values() for c in ranking}))
            units, unit_lists = collapse_to_documents(lists, chunk_fused, keys)
        else:
            units, unit_lists = chunk_units(lists)
        hybrid = mode == "hybrid"
        paper_blend = hybrid and self.paper_fusion == "blend"
        note_blend = hybrid and self.note_fusion == "blend" and bool(note_chunks)
        scored = self._unit_scores(lists, raw_scores, keys) if paper_blend or note_blend else {}
        blended = _blend(scored, self.lexical_weight) if paper_blend else None
        note_scores = _blend(scored, self.note_lexical_weight) if note_blend else None
        fused = rank_units(
            unit_lists,
            units,
            note_chunks,
            weight,
            collapse=collapse,
            k=k,
            rrf_k=self.rrf_k,
            lane_depth=self.lane_depth,
            parent_share=self.parent_share,
            paper_window=self.paper_window,
            note_share=self.note_share,
            annotation_chunks=marks,
            links=self._links_of(units, note_chunks) if collapse and self.link_share and weight else None,
            link_share=self.link_share,
            paper_scores=blended,
            note_scores=note_scores,
        )
        chosen = [units[u] for u, _ in fused if u in units]
        rows = self._read(lambda conn: fts.chunk_rows(conn, chosen))
        docs = self._read(lambda conn: fts.documents(conn, {rows[c].key for c in chosen if c in rows}))
        return build_hits(fused, units, unit_lists, raw_scores, mode, rows, docs)

    def _links_of(self, units: Mapping[str, str], note_chunks: Mapping[str, Any]) -> dict[str, list[tuple[str, float]]]:
        """The candidate notes' weighted links to papers (note key → [(paper key, weight)]: rank/bridge.py)."""
        notes = [unit for unit, cid in units.items() if cid in note_chunks]
        if not notes:
            return {}
        found = self._read(lambda conn: note_links.links_of(conn, notes))
        return {note: weighted([(paper, reason) for paper, reason, _ in rows]) for note, rows in found.items()}

    def note_links(self, key: str) -> list[tuple[str, str, str]]:
        """The papers note ``key`` links to: ``[(paper key, reason, title), …]`` (for ``explain``)."""
        return self._read(lambda conn: note_links.links_of(conn, [key])).get(key, [])

    def _unit_scores(
        self, lists: Mapping[str, list[str]], raw_scores: Mapping[str, Mapping[str, float]], keys: Any
    ) -> dict[str, list[tuple[str, float]]]:
        """Each retriever's ``(unit, raw score)`` list, by which hybrid search blends papers and notes
        (index/rank/blend.py) among their places: a document scores its best chunk's score in each list."""
        unit_scores = {
            name: [(keys.get(c) if keys is not None else c, scores[c]) for c in lists.get(name, ()) if c in scores]
            for name, scores in raw_scores.items()
        }
        return {name: [(u, v) for u, v in got if u is not None] for name, got in unit_scores.items()}

    def _fuse_chunks(
        self, lists: dict[str, list[str]], mode: str, query: str
    ) -> tuple[dict[str, list[str]], dict[str, Any], float, dict[str, float], set[str]]:
        """Chunk-level fusion with the note lane, plus the optional PRF pass over notes.

        Returns the (possibly extended) lists, the note chunks among the candidates, the lane
        weight for this query, the fused chunk scores, and the annotation chunks (ranked beside).
        """
        candidates = {c for ranking in lists.values() for c in ranking}
        note_chunks = (
            self._read(lambda conn: fts.chunk_notes(conn, candidates)) if self.note_lane or self.intent_weight else {}
        )
        marks = self._read(lambda conn: fts.chunk_annotations(conn, candidates))
        weight = lane_weight_for(note_intent(query), self.note_lane, self.intent_weight) if note_chunks else 0.0
        chunk_fused = dict(fuse(lists, self.rrf_k, note_chunks, weight, self.lane_depth, beside=marks))
        if self.prf_notes and note_chunks and mode == "hybrid":
            feedback = self._feedback_list(query, list(chunk_fused), note_chunks)
            if feedback:
                lists = {**lists, "lexical_prf": feedback}
                note_chunks = {**note_chunks, **self._read(lambda conn: fts.chunk_notes(conn, feedback))}
                chunk_fused = dict(fuse(lists, self.rrf_k, note_chunks, weight, self.lane_depth, beside=marks))
        return lists, note_chunks, weight, chunk_fused, marks

    def _feedback_list(self, query: str, ranked: list[str], note_chunks: Mapping[str, Any]) -> list[str]:
        """RM3-style second lexical pass over notes, expanded from the top notes of the first pass."""
        from zocrates_nb.index.lexical.prf import feedback_ranking

        top = [c for c in ranked if c in note_chunks][: self.prf_notes]
        return (
            self._read(lambda conn: feedback_ranking(conn, query, top, self.depth, self._frequencies, self.prf_terms))
            if top
            else []
        )

    def _check_not_lost(self) -> None:
        """No results at all with documents in the corpus but no chunk rows → the index was deleted.

        The wiring tells whether the corpus has documents (``has_documents``); an index built
        without it looks at the corpus folder of its data directory.
        """
        count = self._read(lambda conn: conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        if count == 0 and (self._has_documents or self._bundles_on_disk)():
            raise IndexCorruptError(
                "The search index is empty although the corpus folder has documents.", hint=REBUILD_HINT
            )

    def _bundles_on_disk(self) -> bool:
        from zocrates_nb.corpus.bundle import bundle_dirs

        return next(bundle_dirs(self.paths.corpus), None) is not None

    def _check_filter_targets(self, filters: Mapping[str, str]) -> None:
        """No results under a collection or parent filter: refuse one that names nothing indexed.

        Checked only when a search found nothing, so a filter that matches costs no query.
        """
        if filters.get("collection"):
            known = self._read(
                lambda conn: [
                    v
                    for (v,) in conn.execute(
                        "SELECT DISTINCT value FROM index_documents, json_each(index_documents.collections)"
                    )
                ]
            )
            error = unknown_collection_error(filters["collection"], known)
            if error is not None:
                raise error
        if filters.get("parent_key"):
            key = filters["parent_key"]
            known = self._read(
                lambda conn: bool(
                    conn.execute(
                        "SELECT EXISTS(SELECT 1 FROM index_documents WHERE key = ?) "
                        "OR EXISTS(SELECT 1 FROM chunks WHERE parent_key = ?)",
                        (key, key),
                    ).fetchone()[0]
                )
            )
            error = unknown_parent_error(key, known)
            if error is not None:
                raise error


def _settle(job: Future | None) -> None:
    """Let a running FTS job finish before an error leaves search (its own error is secondary)."""
    if job is not None:
        wait([job])


def _blend(unit_scores: Mapping[str, Sequence[tuple[str, float]]], lexical_weight: float) -> dict[str, float]:
    """The retrievers' scores blended with ``lexical_weight`` for the lexical list (``max`` scaling)."""
    return blend_scores(unit_scores, {"lexical": lexical_weight, "dense": 1.0 - lexical_weight}, norm="max")
