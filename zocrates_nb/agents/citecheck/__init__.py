"""citecheck: every citation of an answer checked against what the agents retrieved in that turn.

``sources`` turns the turn's evidence into one source per item (passages and pages merged),
``mentions`` finds where the answer cites or quotes something, ``verifier`` checks each mention
and marks the failures in the text. Pure, usable without a model; it imports nothing but itself and ``textnorm``.
"""

from zocrates_nb.agents.citecheck.verifier import REASONS, CitationCheck, Verification, mark, summary_line, verify

__all__ = ["REASONS", "CitationCheck", "Verification", "mark", "summary_line", "verify"]
