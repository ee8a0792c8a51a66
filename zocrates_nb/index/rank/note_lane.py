"""Query understanding without an LLM: does a question ask for the user's own notes?

"What did I decide about Harmony's theta?", "my notes on the RCTD paper", "we agreed on
the QC thresholds" — first-person and note words say the answer is in the user's notes,
not in a paper. :func:`note_intent` turns those cues into a number the fusion
(:mod:`zocrates_nb.index.rank.fusion`) uses to widen the note lane. Pure and cheap (one regex).
"""

from __future__ import annotations

import re

__all__ = ["note_intent", "NOTE_CUES"]

#: Words that point at the user's own writing. Pronouns count once; explicit note words
#: ("my notes", "I decided", "my summary") count more.
NOTE_CUES = re.compile(
    r"\b(?P<strong>notes?|noted|jott?(?:ed)?|wrote|write-?up|summary|summarised|summarized|decided?|decision|"
    r"agreed|plan(?:ned)?|remind(?:er)?|todo|idea)\b|\b(?P<weak>i|i'd|i've|i'm|me|my|mine|we|we've|we'd|our|us)\b",
    re.IGNORECASE,
)


def note_intent(query: str) -> float:
    """0.0 (no cue) … 1.0 (a first-person question about notes or decisions)."""
    strong = weak = 0
    for match in NOTE_CUES.finditer(query or ""):
        if match.group("strong"):
            strong += 1
        else:
            weak += 1
    return min(1.0, 0.5 * min(strong, 1) + 0.5 * min(weak, 1))
