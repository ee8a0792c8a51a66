"""Pure result assembly: fused rankings → units (chunks or documents) → SearchHits.

No I/O here: the searching half of the index (index/searching.py) reads the rows these
functions need and hands them in, so what a search returns can be tested from plain data.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from zocrates_nb.index.rank.blend import reslot
from zocrates_nb.index.rank.bridge import inherit_from_links
from zocrates_nb.index.rank.fusion import fuse, inherit_from_parents, keep_best_paper, reserve_notes
from zocrates_nb.index.rank.ranking import SearchHit


def collapse_to_documents(
    lists: Mapping[str, list[str]], chunk_fused: Mapping[str, float], keys: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Per-document units: each document's best chunk (by fused score) and the per-retriever document rankings.

    ``keys`` maps chunk id → document key; chunks without a key (vanished rows) are dropped.
    """
    doc_lists = {name: list(dict.fromkeys(keys[c] for c in ranking if c in keys)) for name, ranking in lists.items()}
    best_chunk: dict[str, str] = {}
    for cid, _ in sorted(chunk_fused.items(), key=lambda item: -item[1]):
        if cid in keys:
            best_chunk.setdefault(keys[cid], cid)
    return best_chunk, doc_lists


def chunk_units(lists: Mapping[str, list[str]]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Per-chunk units (no collapsing): every candidate chunk stands for itself."""
    return {c: c for ranking in lists.values() for c in ranking}, dict(lists)


def build_hits(
    fused: Sequence[tuple[str, float]],
    units: Mapping[str, str],
    unit_lists: Mapping[str, list[str]],
    raw_scores: Mapping[str, Mapping[str, float]],
    mode: str,
    rows: Mapping[str, Any],
    docs: Mapping[str, Any],
) -> list[SearchHit]:
    """SearchHits for the fused units, with provenance (each retriever's rank of the unit).

    ``rows`` maps chunk id → ``fts.ChunkRow`` and ``docs`` key → the document row; in
    hybrid mode the score is the fused one, otherwise the retriever's own raw score.
    """
    positions = {name: {u: i for i, u in enumerate(r, start=1)} for name, r in unit_lists.items()}
    hits = []
    for unit, fused_score in fused:
        cid = units.get(unit)
        row = rows.get(cid) if cid is not None else None
        if cid is None or row is None:
            continue  # a vector whose FTS row vanished: reconcile drops it
        score = fused_score if mode == "hybrid" else raw_scores[mode].get(cid, 0.0)
        hits.append(
            _hit(
                cid,
                row,
                docs.get(row.key),
                float(score),
                {"lexical": positions.get("lexical", {}).get(unit), "dense": positions.get("dense", {}).get(unit)},
            )
        )
    return hits


def _hit(cid: str, row: Any, doc: Any, score: float, ranks: dict[str, int | None]) -> SearchHit:
    return SearchHit(
        chunk_id=cid,
        key=row.key,
        kind=row.kind,
        parent_key=row.parent_key,
        title=row.title,
        text=row.text,
        score=score,
        ranks=ranks,
        citation=doc.citation if doc else None,
        word_count=doc.word_count if doc else None,
        item_type=row.item_type,
        section=row.section,
        parent_title=doc.parent_title if doc else None,
        abstract=doc.abstract if doc else None,
        first_author=doc.first_author if doc else None,
        year=doc.year if doc else None,
        collections=row.collections,
        pages=getattr(row, "pages", None),
        annotation=(getattr(doc, "extra", None) or {}).get("annotation") if doc else None,
        library=(getattr(doc, "extra", None) or {}).get("library") if doc else None,
    )


def rank_units(
    unit_lists: Mapping[str, list[str]],
    units: Mapping[str, str],
    note_chunks: Mapping[str, Any],
    weight: float,
    *,
    collapse: bool,
    k: int,
    rrf_k: int,
    lane_depth: int,
    parent_share: float,
    paper_window: int,
    note_share: int = 0,
    annotation_chunks: Collection[str] = frozenset(),
    links: Mapping[str, Sequence[tuple[str, float]]] | None = None,
    link_share: float = 0.0,
    paper_scores: Mapping[str, float] | None = None,
    note_scores: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """The top ``k`` units by fused score, with the note lane (index/rank/fusion.py) applied.

    ``note_chunks`` maps the candidate note chunks to their parent keys; ``weight`` is the
    note lane's weight for this query (0: no lane); ``note_share`` places of the first
    ``paper_window`` are kept for the best notes (fusion.reserve_notes); ``annotation_chunks`` (PDF
    annotations) are ranked beside the rest (``fusion.fuse``'s ``beside``) and are never the paper kept.
    ``links`` (note key → ``[(paper key, weight)]``, the papers it links to) with ``link_share``: a
    note inherits part of its best linked paper's score (rank/bridge.py), as a child note does of its parent's.
    ``paper_scores`` (hybrid search: the retrievers' blended scores, index/rank/blend.py) re-orders the
    papers among the places papers hold, after the lane has placed notes and annotations; ``note_scores``
    (the same blend with the notes' own lexical weight) re-orders the notes among the places notes hold.
    """
    note_units: Collection[str] = {u for u, c in units.items() if c in note_chunks} if collapse else note_chunks.keys()
    marks = {u for u, c in units.items() if c in annotation_chunks}
    papers = {u for u in units if u not in note_units and u not in marks}
    parents = {u: note_chunks[c] for u, c in units.items() if c in note_chunks}
    fused = fuse(unit_lists, rrf_k, note_units, weight, lane_depth, beside=marks)
    if collapse and parent_share and weight:
        # a child note inherits part of its paper's score (fusion.inherit_from_parents)
        fused = inherit_from_parents(fused, parents, parent_share)
    if collapse and link_share and weight and links:
        # a note inherits part of its best linked paper's score (rank/bridge.py)
        fused = inherit_from_links(fused, links, link_share)
    if weight and paper_window and k >= paper_window:
        fused = reserve_notes(fused, note_units, paper_window, note_share)
        fused = keep_best_paper(fused, papers, paper_window)
    if paper_scores:
        fused = reslot(fused, paper_scores, papers)
    if note_scores:
        # the lane decides *where* notes go; the blend, with the notes' shares of their parent's and their
        # linked papers' blended scores (the same two inheritances as above), which note goes first. As
        # above, the shares ride only with the lane: with it off (plain RRF) a note stands on its own words
        shared = list(note_scores.items())
        if collapse and weight:
            shared = inherit_from_links(inherit_from_parents(shared, parents, parent_share), links or {}, link_share)
        fused = reslot(fused, dict(shared), note_units)
    return fused[:k]
