"""The User Research Profile: a short, user-curated memory sent with every agent prompt.

The profile is free text (at most ``max_research_profile_chars``, 1,000 by default)
in which the researcher says who they are, what background to assume and how
answers should look. ``format_user_research_profile_context`` turns it into the
section the agents prepend to their system prompts; an empty profile adds nothing
at all, so a user who never writes one pays no tokens for it.
"""

from __future__ import annotations

from typing import Any

from zocrates_nb.tokens import count_tokens

PROFILE_HEADER = "# User Research Profile & Directives"
PROFILE_INSTRUCTION = (
    "Adhere to the following user profile, background assumptions, and formatting preferences across your responses:"
)
CONTEXT_WINDOW_TOKENS = 128_000

#: The editor's placeholder, shown greyed-out in an empty field. Never saved as the profile.
SAMPLE_RESEARCH_PROFILE = (
    "I am a PhD researcher in Computational Biology working on spatial transcriptomics and single-cell "
    "RNA-seq (scRNA-seq), mainly 10x Visium and MERFISH data from mouse and human tissue. "
    "Assume an advanced background in statistics, molecular biology and machine learning: skip introductory "
    "explanations and define only niche terms. "
    "Write all mathematics in LaTeX ($...$ inline, $$...$$ for display equations). "
    "When you show code, use Python with PyTorch, Scanpy and AnnData, and follow their current APIs. "
    "Favour empirical rigor: cite the specific papers or notes behind each claim, give effect sizes, sample "
    "sizes and datasets where known, separate established results from speculation, and say plainly when the "
    "evidence in my library is thin or contradictory. "
    "Prefer concise, structured answers with short headings and bullet points, and end with open questions "
    "worth checking when relevant."
)


def format_user_research_profile_context(profile_text: str | None) -> str:
    """The profile section for a system prompt, or "" when there is no profile.

    Exactly: the header line, the instruction line, the stripped profile, then a
    blank line. ``None``, empty and whitespace-only text give "" so that an unset
    profile changes nothing in the prompt.
    """
    if profile_text is None:
        return ""
    stripped = profile_text.strip()
    if not stripped:
        return ""
    return f"{PROFILE_HEADER}\n{PROFILE_INSTRUCTION}\n{stripped}\n\n"


def profile_token_report(text: str | None, limit: int = 1000, encoding: str = "o200k_base") -> dict[str, Any]:
    """Characters, limit, tokens of the formatted section and its share of a 128k context."""
    text = text or ""
    tokens = count_tokens(format_user_research_profile_context(text), encoding)
    return {"chars": len(text), "limit": limit, "tokens": tokens, "share_of_128k": tokens / CONTEXT_WINDOW_TOKENS}
