"""Pseudo-relevance feedback for the note lane (RM3-style, lexical): term selection is pure,
:func:`feedback_ranking` runs the second query on the caller's connection.

A paraphrase ("how do we handle droplets that captured two cells") shares few words with
the note that answers it ("doublet removal … Scrublet"). The first pass usually has the
right note somewhere in its top few notes; the words those notes share and the rest of the
library rarely uses are the vocabulary the user did not type. :func:`expansion_terms` picks
them (term frequency in the feedback notes × inverse document frequency), and the index runs
one more lexical query over notes only with the query plus those words; that ranking joins
the fusion as one more list (``lexical_prf``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["expansion_terms", "candidate_terms", "feedback_ranking", "FEEDBACK_NOTES", "EXPANSION_TERMS"]

FEEDBACK_NOTES = 3
EXPANSION_TERMS = 8
_WORD = re.compile(r"[^\W\d_][\w-]{2,}", re.UNICODE)


def candidate_terms(texts: Iterable[str], stopwords: frozenset[str] | set[str]) -> list[Counter]:
    """Per feedback text, the counts of its content words (lower-cased, no stopwords, no numbers)."""
    return [Counter(w for w in (m.lower() for m in _WORD.findall(text)) if w not in stopwords) for text in texts]


def expansion_terms(
    counts: Sequence[Counter],
    query_terms: Iterable[str],
    doc_freq: Mapping[str, int],
    total_rows: int,
    n_terms: int = EXPANSION_TERMS,
) -> list[str]:
    """The ``n_terms`` best expansion words: Σ_d tf(t, d)/|d| × idf(t), query words excluded.

    Words in a single feedback note only count if they are rare (idf), so one note's oddities
    do not steer the second pass; ties break alphabetically (deterministic).
    """
    skip = {t.lower() for t in query_terms}
    weights: dict[str, float] = {}
    for counter in counts:
        length = sum(counter.values()) or 1
        for term, tf in counter.items():
            if term in skip or term not in doc_freq:
                continue
            idf = math.log((total_rows + 1) / (doc_freq[term] + 0.5))
            if idf > 0:
                weights[term] = weights.get(term, 0.0) + (tf / length) * idf
    ranked = sorted(weights.items(), key=lambda item: (-item[1], item[0]))
    return [term for term, _ in ranked[:n_terms]]


def feedback_ranking(
    conn, query: str, top_chunks: Sequence[str], depth: int, frequencies, n_terms: int = EXPANSION_TERMS
) -> list[str]:
    """Note chunk ids ranked by a lexical query of ``query`` plus the top notes' expansion words."""
    from zocrates_nb.index.lexical import fts
    from zocrates_nb.index.lexical.query import STOPWORDS
    from zocrates_nb.index.lexical.split import lexical_search

    rows = fts.chunk_rows(conn, top_chunks)
    counts = candidate_terms([rows[c].text for c in top_chunks if c in rows], STOPWORDS)
    words = sorted({w for c in counts for w in c})
    total, freq = frequencies.lookup(conn, words)
    terms = expansion_terms(counts, fts.query_terms(query), freq, total, n_terms)
    if not terms:
        return []
    found = lexical_search(conn, f"{query} {' '.join(terms)}", depth, {"item_type": "note"}, frequencies)
    return [cid for cid, _, _ in found]
