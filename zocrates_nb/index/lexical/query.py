"""Building FTS5 MATCH expressions from user text — pure functions, no SQLite.

Any string becomes a valid FTS5 query here (operators and unbalanced quotes lose their
meaning), and natural-language questions become an OR of their content words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "STOPWORDS",
    "ORDINAL_NUMBERS",
    "quote_fts",
    "query_terms",
    "natural_query",
    "or_query",
    "with_ordinal_numbers",
]

# Function words that carry no topic: dropping them from OR-queries halves query
# time on SciFact with no loss in nDCG (offline-models-and-eval.md §D).
STOPWORDS = frozenset(
    """
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most
my myself no nor not of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your
yours yourself yourselves
""".split()
)

_WORD = re.compile(r"\w+", re.UNICODE)

#: "the third run", "our 2nd attempt", "batch 3": a place in a sequence is written both ways, so a
#: question's ordinal also asks for its number (and the other spelling), both rare enough to matter
#: only beside the words around them (docs/retrieval.md, "Places in a sequence").
_ORDINALS = ("first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth").split()


def _suffixed(number: int) -> str:
    """3 → "3rd", 11 → "11th"."""
    ending = {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th") if number not in (11, 12, 13) else "th"
    return f"{number}{ending}"


ORDINAL_NUMBERS = {
    **{word: n for n, word in enumerate(_ORDINALS, start=1)},
    **{_suffixed(n): n for n in range(1, len(_ORDINALS) + 1)},
}


def _quote_token(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def quote_fts(query: str, operator: str = "AND") -> str | None:
    """Make any string a valid FTS5 query: each whitespace token becomes a quoted string.

    ``multi-agent`` → ``"multi-agent"`` (a phrase of the two tokens); ``who's`` →
    ``"who's"``; ``title:x``, ``NOT``, ``a AND``, unbalanced quotes lose their operator
    meaning. Tokens with no word character (emoji, lone punctuation) would match
    nothing and are dropped. Returns ``None`` when nothing searchable is left, so the
    caller skips FTS instead of sending an empty ``MATCH``.
    """
    if operator not in ("AND", "OR"):
        raise ValueError("operator must be 'AND' or 'OR'")
    tokens = [t for t in (query or "").split() if _WORD.search(t)]
    if not tokens:
        return None
    return (" " if operator == "AND" else " OR ").join(_quote_token(t) for t in tokens)


def query_terms(query: str, *, drop_stopwords: bool = True, max_terms: int = 64) -> list[str]:
    """The distinct lower-cased word tokens of a question, stopwords dropped (unless that leaves none)."""
    words = [w.lower() for w in _WORD.findall(query or "")]
    unique = list(dict.fromkeys(with_ordinal_numbers(words)))
    if drop_stopwords:
        content = [w for w in unique if w not in STOPWORDS]
        unique = content or unique
    return unique[:max_terms]


def with_ordinal_numbers(words: list[str]) -> list[str]:
    """``words`` with each ordinal ("third", "3rd") followed by its number and its other spelling."""
    out: list[str] = []
    for word in words:
        out.append(word)
        number = ORDINAL_NUMBERS.get(word)
        if number is not None:
            out += [str(number), _ORDINALS[number - 1]]
    return out


def or_query(terms: Iterable[str]) -> str:
    return " OR ".join(_quote_token(t) for t in terms)


def natural_query(query: str, *, drop_stopwords: bool = True, max_terms: int = 64) -> str | None:
    """The query we send for natural-language questions: OR of the distinct word tokens.

    All-AND (FTS5's implicit operator) returns nothing for most questions; OR plus
    bm25 ranks documents that share more (and rarer) terms first — the shape that
    scored 0.6868 nDCG@10 on SciFact with the porter tokenizer. Stopwords are dropped
    unless the query is nothing but stopwords.
    """
    return or_query(query_terms(query, drop_stopwords=drop_stopwords, max_terms=max_terms)) or None
