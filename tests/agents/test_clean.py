"""_clean_user_facing_synthesis on generated answers: no corpus key survives, nothing else changes."""

from __future__ import annotations

import random

import pytest

from zocrates_nb.agents.clean import StreamCleaner, _clean_user_facing_synthesis, contains_corpus_key
from zocrates_nb.library.base import KEY_ALPHABET

WORDS = (
    "cells",
    "atlas",
    "spatial",
    "transcriptomics",
    "we",
    "found",
    "that",
    "the",
    "signal",
    "is",
    "robust",
    "across",
    "samples",
    "a",
    "key",
    "finding",
    "monkey",
    "keys",
    "is",
    "clear",
)
# Upper-case tokens that are NOT corpus keys and must survive byte for byte.
DECOYS = (
    "SCRNASEQ2",
    "DEADBEEF",
    "GAPDH",
    "HTTP",
    "CRISPR",
    "ABCDEFGHJ",
    "key DEADBEEF",
    "`np.mean`",
    "[1]",
    "(n = 12)",
    "[docs](https://example.org/ABCD2345)",
    "$\\alpha_i$",
    "**bold**",
    "(see above)",
    "[Note Key: DEADBEEF]",
)


def make_corpus(rng: random.Random, n: int = 30) -> dict[str, str]:
    key_map: dict[str, str] = {}
    while len(key_map) < n:
        key = "".join(rng.choice(KEY_ALPHABET) for _ in range(8))
        if key in ("DEADBEEF",) or key in key_map:
            continue
        title = " ".join(rng.choice(WORDS[:12]) for _ in range(rng.randint(2, 6))).capitalize()
        if rng.random() < 0.5:
            key_map[key] = f"*{title}* ({rng.choice(['Smith', 'Ståhl', 'Moffitt'])} et al., {rng.randint(1990, 2024)})"
        else:
            key_map[key] = f"“{title}”"
    return key_map


def make_answer(rng: random.Random, key_map: dict[str, str]) -> tuple[str, str]:
    """(raw answer as a model might write it, the text a reader must see)."""
    keys = list(key_map)
    d = key_map.__getitem__

    def prose() -> tuple[str, str]:
        words = [rng.choice(WORDS + DECOYS) for _ in range(rng.randint(3, 12))]
        text = " ".join(words)
        return text, text

    def with_key() -> tuple[str, str]:
        k, p = rng.choice(keys), rng.choice(keys)
        forms = [
            (f"## Findings from {k}\n", f"## Findings from {d(k)}\n"),
            (f"### {k}: summary\n", f"### {d(k)}: summary\n"),
            (f"[Note Key: {k}, Parent Paper Key: {p}]", f"[{d(k)}, on {d(p)}]"),
            (f"[Note Key: {k}, Parent Paper Key: None]", f"[{d(k)}]"),
            (f"[Note Key: {k}]", f"[{d(k)}]"),
            (f"**[Paper Key: {k}]**", f"**[{d(k)}]**"),
            (f"({k})", f"({d(k)})"),
            (f"(key {k})", f"({d(k)})"),
            (f"(key: {k})", f"({d(k)})"),
            (f"[{k}]", f"[{d(k)}]"),
            (f"[{k}, {p}]", f"[{d(k)}, {d(p)}]"),
            (f"[see this note]({k})", "see this note"),
            (f"[{k}]({k})", d(k)),
            (f"[`{k}`]({k})", d(k)),
            (f"`{k}`", d(k)),
            (f'`read_document("{k}")`', d(k)),
            (f"read_document('{k}', section=\"methods\")", d(k)),
            (f"get_document_toc({k})", d(k)),
            (f"as {k} shows", f"as {d(k)} shows"),
            (f"{k}.", f"{d(k)}."),
            (f"[link](zotero://select/library/items/{k})", "link"),
        ]
        return rng.choice(forms)

    raw, expected = [], []
    for _ in range(rng.randint(4, 14)):
        r, e = (with_key if rng.random() < 0.45 else prose)()
        sep = rng.choice([" ", " ", "\n", "\n\n", ", "])
        raw.append(r + sep)
        expected.append(e + sep)
    return "".join(raw), "".join(expected)


def test_two_hundred_generated_answers_lose_every_key_and_nothing_else():
    rng = random.Random(20240605)
    key_map = make_corpus(rng)
    keys_seen = 0
    for _ in range(250):
        raw, expected = make_answer(rng, key_map)
        keys_seen += contains_corpus_key(raw, key_map)
        cleaned = _clean_user_facing_synthesis(raw, key_map)
        assert cleaned == expected, raw
        assert not any(key in cleaned for key in key_map)
        assert "SCRNASEQ2" not in raw or "SCRNASEQ2" in cleaned
    assert keys_seen > 150  # the generator really put keys in


def test_streaming_in_random_pieces_matches_whole_text_cleaning():
    rng = random.Random(7)
    key_map = make_corpus(rng)
    for _ in range(60):
        raw, expected = make_answer(rng, key_map)
        out: list[str] = []
        cleaner = StreamCleaner(key_map, out.append)
        pos = 0
        while pos < len(raw):
            step = rng.randint(1, 9)
            cleaner.feed(raw[pos : pos + step])
            pos += step
            assert not any(key in "".join(out) for key in key_map)
        cleaner.flush()
        assert "".join(out) == expected


@pytest.mark.parametrize("text", ["", "No keys here at all.", "DEADBEEF is a hex word, SCRNASEQ2 a dataset."])
def test_text_without_corpus_keys_is_untouched(text):
    assert _clean_user_facing_synthesis(text, {"ABCD2345": "“A note”"}) == text


def test_unknown_parent_key_stays_but_known_key_goes():
    out = _clean_user_facing_synthesis("[Note Key: ABCD2345, Parent Paper Key: DEADBEEF]", {"ABCD2345": "“N”"})
    assert out == "[Note Key: “N”, Parent Paper Key: DEADBEEF]"
