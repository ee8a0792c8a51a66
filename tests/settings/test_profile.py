"""The User Research Profile section and offline token counting."""

from __future__ import annotations

import pytest

from zocrates_nb.errors import ZocratesError
from zocrates_nb.settings.profile import (
    SAMPLE_RESEARCH_PROFILE,
    format_user_research_profile_context,
    profile_token_report,
)
from zocrates_nb.tokens import count_tokens, count_tokens_many, decode_tokens, encode_tokens

HEADER = "# User Research Profile & Directives\n"
INSTRUCTION = (
    "Adhere to the following user profile, background assumptions, and formatting preferences across your responses:\n"
)


@pytest.mark.parametrize("empty", [None, "", " ", "\n\t  \n"])
def test_profile_gate_gives_nothing_for_no_profile(empty):
    assert format_user_research_profile_context(empty) == ""


def test_profile_section_is_exact():
    text = "  I study  single-cell biology.\nUse LaTeX.  \n\n"
    assert format_user_research_profile_context(text) == (
        HEADER + INSTRUCTION + "I study  single-cell biology.\nUse LaTeX." + "\n\n"
    )


def test_sample_profile_section():
    section = format_user_research_profile_context(SAMPLE_RESEARCH_PROFILE)
    assert section.startswith(HEADER + INSTRUCTION)
    assert section.endswith(SAMPLE_RESEARCH_PROFILE.strip() + "\n\n")
    for must in (
        "Computational Biology",
        "spatial transcriptomics",
        "scRNA-seq",
        "LaTeX",
        "PyTorch",
        "Scanpy",
        "AnnData",
        "Visium",
        "MERFISH",
        "rigor",
    ):
        assert must in SAMPLE_RESEARCH_PROFILE
    assert len(SAMPLE_RESEARCH_PROFILE) <= 1000  # it must fit the editor it is the placeholder of
    report = profile_token_report(SAMPLE_RESEARCH_PROFILE)
    assert 180 <= report["tokens"] <= 240
    assert report["tokens"] == count_tokens(section, "o200k_base")
    assert report["share_of_128k"] == report["tokens"] / 128_000 < 0.002
    assert report["chars"] == len(SAMPLE_RESEARCH_PROFILE) and report["limit"] == 1000


def test_empty_profile_costs_no_tokens():
    assert profile_token_report("   ") == {"chars": 3, "limit": 1000, "tokens": 0, "share_of_128k": 0.0}


@pytest.mark.parametrize(
    ("text", "encoding", "expected"),
    [
        ("hello world", "o200k_base", 2),
        ("hello world", "cl100k_base", 2),
        ("", "o200k_base", 0),
        ("<|endoftext|>", "cl100k_base", 7),  # special-token text counts as plain text (encode_ordinary)
    ],
)
def test_count_tokens_known_counts(text, encoding, expected):
    assert count_tokens(text, encoding) == expected


def test_token_ids_match_tiktoken_reference_ids():
    # tiktoken's encode_ordinary ids for these strings
    assert encode_tokens("hello world", "o200k_base") == [24912, 2375]
    assert encode_tokens("hello world", "cl100k_base") == [15339, 1917]
    assert decode_tokens(encode_tokens("Visium — MERFISH ∑", "o200k_base"), "o200k_base") == "Visium — MERFISH ∑"
    assert count_tokens_many(["hello world", "", "a b c"]) == [2, 0, 3]


def test_unknown_encoding_is_a_clear_error():
    with pytest.raises(ZocratesError, match="o200k_base"):
        count_tokens("x", "p50k_base")
