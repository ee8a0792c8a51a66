"""Explain a miss: where one document stands for one query, and what was indexed for it.

"Why didn't it find my note?" has a few usual answers: the words are past the cut the
model reads, the note's own words never say the topic (its paper's title does), or papers
outrank it. :func:`explain` shows each: the document's rank in the lexical list, the dense
list, the fusion (papers competing) and among notes only; each of its chunks with the word
pieces the model reads and any cut; and the context line it was indexed with. Pure
reporting over the index's public search — nothing here changes ranking.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from zocrates_nb.errors import QueryError
from zocrates_nb.index.rank.bridge import bridges
from zocrates_nb.index.rank.fusion import lane_weight_for
from zocrates_nb.index.rank.note_lane import note_intent
from zocrates_nb.index.records import WINDOW_TOKENS, embedding_text

__all__ = ["Explanation", "ChunkReport", "explain", "chunk_reports"]

#: How deep each ranking is searched for the document (beyond it: "not in the top N").
DEPTH = 200


@dataclass
class ChunkReport:
    chunk_id: str
    section: str | None
    tokens: int  # word pieces the model reads (context + title + text), before any cut
    cut_tokens: int  # pieces past the window, which the model never reads
    rank: int | None  # the chunk's rank in the fused chunk list
    lexical_rank: int | None
    dense_rank: int | None
    preview: str


@dataclass
class Explanation:
    query: str
    key: str
    title: str
    kind: str
    context: str
    note_intent: float
    lane_weight: float
    ranks: dict[str, int | None] = field(default_factory=dict)
    chunks: list[ChunkReport] = field(default_factory=list)
    depth: int = DEPTH
    #: the papers a note links to (corpus/links.py): key, reason, title, and the paper's rank for this
    #: query (None: not found). A found paper passes a share of its score on to the note (rank/bridge.py).
    links: list[dict] = field(default_factory=list)
    link_share: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """Plain-text report for the terminal."""

        def show(rank: int | None) -> str:
            return str(rank) if rank is not None else f">{self.depth}"

        lines = [
            f"{self.key} ({self.kind}): {self.title}",
            f"query: {self.query}",
            "ranks: " + "  ".join(f"{name}={show(rank)}" for name, rank in self.ranks.items()),
            f"note intent {self.note_intent:.2f} → note-lane weight {self.lane_weight:.2f}",
            f"indexed context: {self.context or '(none)'}",
        ]
        lines += self._link_lines(show)
        lines.append(f"chunks ({len(self.chunks)}; the model reads {WINDOW_TOKENS} word pieces):")
        for c in self.chunks:
            cut = f", {c.cut_tokens} cut" if c.cut_tokens else ""
            lines.append(
                f"  {c.chunk_id}  {c.tokens} pieces{cut}  fused={show(c.rank)} "
                f"lexical={show(c.lexical_rank)} dense={show(c.dense_rank)}  "
                f"[{c.section or '-'}] {c.preview}"
            )
        return "\n".join(lines)

    def _link_lines(self, show: Callable[[int | None], str]) -> list[str]:
        if not self.links:
            return []
        ranks = [link["rank"] for link in self.links if link["rank"] is not None]
        best = min(ranks) if ranks else None
        lines = [
            f"linked papers ({len(self.links)}, {len(ranks)} found for this query; the best found passes on "
            f"{self.link_share:g} × its score ÷ {len(self.links)}):"
        ]
        for link in self.links:
            mark = "found through" if link["rank"] is not None and link["rank"] == best else "linked"
            lines.append(
                f"  {link['key']}  {link['reason']:<11} {mark}, rank {show(link['rank'])}  {link['title'][:70]}"
            )
        return lines

    def _repr_html_(self) -> str:
        from zocrates_nb.sanitize import escape_text as esc

        head = "".join(f"<th>{esc(n)}</th>" for n in self.ranks)
        ranks = "".join(f"<td>{'' if r is None else r}</td>" for r in self.ranks.values())
        rows = "".join(
            f"<tr><td><code>{esc(c.chunk_id)}</code></td><td>{c.tokens}</td><td>{c.cut_tokens or ''}</td>"
            f"<td>{'' if c.rank is None else c.rank}</td><td>{'' if c.lexical_rank is None else c.lexical_rank}</td>"
            f"<td>{'' if c.dense_rank is None else c.dense_rank}</td><td>{esc(c.preview)}</td></tr>"
            for c in self.chunks
        )
        linked = "".join(
            f"<br><small>linked: <code>{esc(link['key'])}</code> {esc(link['reason'])}, rank "
            f"{'' if link['rank'] is None else link['rank']}: {esc(link['title'])}</small>"
            for link in self.links
        )
        return (
            f"<div><b>{esc(self.key)}</b> {esc(self.title)}<br><small>context: {esc(self.context or '(none)')}"
            f" · note lane {self.lane_weight:.2f}</small>{linked}"
            f"<table><tr>{head}</tr><tr>{ranks}</tr></table>"
            "<table><tr><th>chunk</th><th>pieces</th><th>cut</th><th>fused</th><th>lexical</th><th>dense</th>"
            f"<th>text</th></tr>{rows}</table></div>"
        )


def _rank_of(keys: list[str], key: str) -> int | None:
    return keys.index(key) + 1 if key in keys else None


def chunk_reports(
    rows: list[Any], chunk_hits: list[Any], count_tokens: Callable[[str], int] | None
) -> list[ChunkReport]:
    """One report per chunk row: its size as the model sees it and its ranks among all chunks."""
    fused = {h.chunk_id: i for i, h in enumerate(chunk_hits, start=1)}
    ranks = {h.chunk_id: h.ranks for h in chunk_hits}
    out = []
    for row in rows:
        text = embedding_text(row.title, row.text, getattr(row, "context", ""))
        tokens = count_tokens(text) if count_tokens else len(text.split())
        per = ranks.get(row.chunk_id, {})
        out.append(
            ChunkReport(
                chunk_id=row.chunk_id,
                section=row.section,
                tokens=tokens,
                cut_tokens=max(0, tokens - WINDOW_TOKENS),
                rank=fused.get(row.chunk_id),
                lexical_rank=per.get("lexical"),
                dense_rank=per.get("dense"),
                preview=" ".join(row.text.split())[:90],
            )
        )
    return out


def explain(
    index: Any, query: str, key: str, *, count_tokens: Callable[[str], int] | None = None, lexical_only: bool = False
) -> Explanation:
    """Where document ``key`` ranks for ``query``, and what the index holds for it.

    ``lexical_only``: the vector store cannot be opened (a data directory that cannot be written):
    every rank is the lexical one, and there is no dense rank."""
    rows = index.document_chunks(key)
    if not rows:
        raise QueryError(
            f"Nothing is indexed under the key {key!r}.",
            hint="Check the key with `zocrates-nb search` (keys are shown as [Note Key: K]); "
            "run `zocrates-nb sync` if the note is new.",
        )
    mode = "lexical" if lexical_only else "hybrid"
    embedding = None if lexical_only else index.embedder.embed([query])[0]  # once, for every dense search below
    hits = index.search(query, k=DEPTH, mode=mode, query_embedding=embedding)
    fused_keys = [h.key for h in hits]
    mine = next((h for h in hits if h.key == key), None)
    lexical = [h.key for h in index.search(query, k=DEPTH, mode="lexical")]
    dense_hits = [] if lexical_only else index.search(query, k=DEPTH, mode="dense", query_embedding=embedding)
    dense = [h.key for h in dense_hits]
    ranks = {"lexical": _rank_of(lexical, key), "dense": _rank_of(dense, key), "fused": _rank_of(fused_keys, key)}
    if lexical_only:
        del ranks["dense"]  # not read (the vector store cannot be opened), so no rank, not "beyond 200"
    first = rows[0]
    if first.kind == "note":
        only_notes = {"item_type": "note"}
        notes = [h.key for h in index.search(query, k=DEPTH, filters=only_notes, mode=mode, query_embedding=embedding)]
        ranks["among notes"] = _rank_of(notes, key)
    chunk_hits = index.search(query, k=DEPTH * 3, collapse=False, mode=mode, query_embedding=embedding)
    intent = note_intent(query)
    weight = lane_weight_for(intent, getattr(index, "note_lane", 0.0), getattr(index, "intent_weight", 0.0))
    title = mine.title if mine else first.title
    linked = getattr(index, "note_links", None)
    rows_linked = linked(key) if first.kind == "note" and linked is not None else []
    found = bridges(fused_keys, [paper for paper, _, _ in rows_linked])
    return Explanation(
        query=query,
        key=key,
        title=title,
        kind=first.kind,
        context=getattr(first, "context", ""),
        note_intent=round(intent, 2),
        lane_weight=round(weight, 3),
        ranks=ranks,
        chunks=chunk_reports(rows, chunk_hits, count_tokens),
        links=[{"key": p, "reason": r, "title": t, "rank": found.get(p)} for p, r, t in rows_linked],
        link_share=float(getattr(index, "link_share", 0.0)),
    )
