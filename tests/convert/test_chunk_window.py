"""Chunks cut to the model's window from exact, additive word-piece counts (convert/window.py):
the counts of whitespace-ending pieces add up to the whole, no chunk is over the budget, a document
gets the fewest balanced chunks, and the tokenizer is called once per level, not per candidate."""

from __future__ import annotations

import math
import random

import pytest

from zocrates_nb.convert.window import _WS_CHARS, _atoms, chunk_to_window, split_to_window

ABSTRACT = (
    "Interleukin-6 (IL-6) signalling through the IL-6/STAT3 axis drives tumour-associated inflammation. "
    "We profiled 1,204 patients (median age 63.5 y; 54% female) with RNA-seq and scRNA-seq, and found "
    "that STAT3 phosphorylation (p-STAT3^Y705) correlated with CD8+ T-cell exhaustion (r = 0.61, P < 0.001). "
    "Blocking IL-6R with tocilizumab at 8 mg/kg reduced p-STAT3 by ~40% (95% CI 31–48%). "
    "Data: https://example.org/data?id=GSE12345&format=csv#top; code at git@github.com:lab/il6.git. "
)
MESSY = [
    ABSTRACT * 3,
    "| gene | log2FC | padj |\n| --- | --- | --- |\n| CXCL13 | 3.2 | 1e-9 |\n| IL21 | -1.7 | 0.003 |\n" * 4,
    "```python\ndef velocity(u, s, beta=0.3, gamma=0.1):\n    return beta * u - gamma * s  # ds/dt\n```\n" * 3,
    "Café naïve Ångström façade coöperate résumé — “quoted” ‘text’ … Straße ǅemal Ωmega µm ±2σ ≥ 3·10⁻⁵. " * 4,
    "单细胞测序揭示了生发中心的动态变化。我们使用空间转录组学分析了淋巴结。日本語のテキストも含まれています。" * 6,
    "x" * 150 + " " + "supercalifragilisticexpialidocious" * 3 + " a\u00a0b\u2009c\u3000d\u2028e\u200bf [MASK] [CLS] ",
    r"$$\frac{du}{dt} = \alpha(t) - \beta u, \qquad \frac{ds}{dt} = \beta u - \gamma s$$ and $u=(\gamma/\beta)s$. " * 3,
    "control\x0bchars\x0cand\x1cseparators\x85joined\u200dhere 🧬🔬 emoji-laden text\ttabbed\r\nlines " * 5,
]


def _whitespace_cuts(text: str, rng: random.Random, n: int) -> list[str]:
    """``text`` cut after ``n`` random BERT-whitespace characters."""
    spots = [i + 1 for i, char in enumerate(text) if char in _WS_CHARS]
    cuts = sorted(rng.sample(spots, min(n, len(spots))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


@pytest.mark.parametrize("text", MESSY)
def test_counts_add_up_over_cuts_after_whitespace(count_tokens, text):
    rng = random.Random(7)
    whole = count_tokens(text)
    for n in (1, 3, 10, 40):
        pieces = _whitespace_cuts(text, rng, n)
        assert "".join(pieces) == text
        assert sum(count_tokens.many(pieces)) == whole, pieces
    # a word cut after punctuation or a CJK ideograph adds up too (BERT cuts there itself), except a
    # special token written out, "[MASK]": cut, it counts more, which can only make a chunk smaller
    for word in text.split():
        atoms = sum(count_tokens.many(_atoms(word)))
        if word in ("[MASK]", "[CLS]"):
            assert atoms > count_tokens(word)
        else:
            assert atoms == count_tokens(word), word


def test_whitespace_python_sees_but_bert_deletes_is_no_place_to_cut(count_tokens):
    """Why the chunker has its own whitespace class: BERT deletes \\x0b, \\x1c, \\x85 …, gluing the words."""
    for char in "\x0b\x0c\x1c\x1f\x85":
        assert char.isspace() and char not in _WS_CHARS
        assert count_tokens(f"kinase{char}inhibitor") == count_tokens("kinaseinhibitor")


def test_many_counts_like_one_at_a_time(count_tokens):
    assert count_tokens.many(MESSY) == [count_tokens(text) for text in MESSY]
    assert count_tokens.many([]) == []


@pytest.mark.parametrize("budget", [64, 100, 150, 222, 254])
@pytest.mark.parametrize("overlap", [0, 32])
def test_no_chunk_is_over_the_budget_and_each_knows_its_exact_count(count_tokens, budget, overlap):
    markdown = "# Messy note\n\n" + "\n\n".join(MESSY) + "\n\n## Second part\n\n" + ABSTRACT * 4
    chunks = chunk_to_window(markdown, budget, count_tokens, overlap_tokens=overlap)
    assert len(chunks) > 1
    for chunk in chunks:
        assert count_tokens(chunk.text) == chunk.token_estimate <= budget, chunk.text
    # nothing is lost: every word of the document is in some chunk (a run without whitespace is cut)
    words = set(" ".join(c.text for c in chunks).split())
    assert {word for word in markdown.split() if len(word) < 40} <= words


def _paper(abstract: str) -> str:
    return f"# A title\n\n**Authors:** Smith, J.  \n**Year:** 2020\n\n## Abstract\n\n{abstract}\n"


def test_a_document_gets_the_fewest_balanced_chunks(count_tokens):
    budget, overlap = 220, 32
    for repeats in (2, 3, 5, 9):
        markdown = _paper(ABSTRACT * repeats)
        total = count_tokens(markdown)
        chunks = chunk_to_window(markdown, budget, count_tokens, overlap_tokens=overlap)
        fewest = math.ceil((total - overlap) / (budget - overlap))
        assert len(chunks) == fewest, (total, [c.token_estimate for c in chunks])
        sizes = [c.token_estimate for c in chunks]
        assert max(sizes) <= budget and min(sizes) > 0.6 * max(sizes)
        # the title and byline stay with the first chunk instead of making one of their own
        assert chunks[0].text.startswith("# A title") and "## Abstract" in chunks[0].text
        assert [c.section for c in chunks] == ["A title"] + ["Abstract"] * (len(chunks) - 1)


def test_consecutive_chunks_overlap_by_whole_sentences(count_tokens):
    sentences = [f"Sentence {i} reports that marker M{i} rises in the light zone." for i in range(40)]
    chunks = chunk_to_window(" ".join(sentences), 200, count_tokens, overlap_tokens=32)
    assert len(chunks) >= 3
    for before, after in zip(chunks, chunks[1:], strict=False):
        carried = [s for s in sentences if s in after.text and s in before.text]
        assert carried and after.text.startswith(carried[0])  # whole sentences, at the start
        assert count_tokens(" ".join(carried)) <= 32


def test_a_heading_with_substance_before_it_starts_a_chunk_without_overlap(count_tokens):
    intro = " ".join(f"Intro sentence {i} about germinal centres." for i in range(30))
    methods = " ".join(f"Methods sentence {i} about Xenium panels." for i in range(30))
    chunks = chunk_to_window(f"# Intro\n\n{intro}\n\n## Methods\n\n{methods}", 150, count_tokens)
    opening = [c for c in chunks if c.text.startswith("## Methods")]
    assert len(opening) == 1 and opening[0].section == "Methods"
    assert "Intro sentence" not in opening[0].text
    assert {c.section for c in chunks} == {"Intro", "Methods"}


def test_text_without_whitespace_is_cut_too(count_tokens):
    chinese = "单细胞测序揭示了生发中心的动态变化，我们使用空间转录组学分析了淋巴结" * 30
    url = "https://example.org/" + "/".join(f"segment{i}" for i in range(200))
    for text in (chinese, url):
        pieces = split_to_window(text, 100, count_tokens, overlap_tokens=16)
        assert len(pieces) > 2 and all(count_tokens(p) <= 100 for p in pieces)


class _CallCounter:
    """The real counter, counting how often the chunker calls it."""

    def __init__(self, count_tokens):
        self.count_tokens, self.single, self.batched = count_tokens, 0, 0

    def __call__(self, text):
        self.single += 1
        return self.count_tokens(text)

    def many(self, texts):
        self.batched += 1
        return self.count_tokens.many(texts)


def test_the_tokenizer_is_called_once_per_level_and_a_plain_function_gives_the_same_chunks(count_tokens):
    markdown = _paper(ABSTRACT * 6)
    counter = _CallCounter(count_tokens)
    chunks = chunk_to_window(markdown, 200, counter, overlap_tokens=32)
    assert len(chunks) >= 3
    # one call for the sentences, one for the overlaps, one per sentence a cut had to fall inside
    assert counter.single == 0 and counter.batched <= 2 + len(chunks)
    plain = chunk_to_window(markdown, 200, lambda text: count_tokens(text), overlap_tokens=32)
    assert plain == chunks


def test_a_document_that_fits_is_one_chunk_as_written(count_tokens):
    markdown = "# Leiden\n\nUse Leiden,   never Louvain.\n\n\n- resolution 0.8\n"
    [chunk] = chunk_to_window(markdown, 254, count_tokens)
    assert chunk.text == markdown.strip() and chunk.section == "Leiden"
    assert chunk.token_estimate == count_tokens(markdown)
    assert chunk_to_window(" \n ", 254, count_tokens) == []
