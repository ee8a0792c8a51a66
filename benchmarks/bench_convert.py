"""Conversion speed: extractive summary of a 10,000-word note, and convert_note per real Zotero note.

Run: PYTHONPATH=. .venv/bin/python benchmarks/bench_convert.py [--samples DIR]
Prints figures; asserts nothing (targets: summary < 5 ms for 10,000 words).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from pathlib import Path

from zocrates_nb.convert.chunk import chunk_markdown
from zocrates_nb.convert.convert import convert_note
from zocrates_nb.convert.summary import extractive_summary

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "data" / "zotero" / "notes"


def ten_thousand_word_markdown() -> str:
    sentence = (
        "Spatial transcriptomics measures gene expression in intact tissue sections, "
        "so cell types can be mapped onto their neighbourhoods. "
    )  # 16 words
    sections = []
    for s in range(25):
        paragraphs = [sentence * 6 for _ in range(4)]  # 4 × 96 words
        sections.append(f"## Section {s}\n\n- a list item\n- another\n\n" + "\n\n".join(paragraphs))
    return "# A long note\n\n" + "\n\n".join(sections) + "\n"


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=Path, default=SAMPLES)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()

    markdown = ten_thousand_word_markdown()
    words = len(markdown.split())
    extractive_summary(markdown)
    ms = timed(lambda: extractive_summary(markdown), args.repeat)
    print(
        f"extractive_summary, {words:,}-word note: median {statistics.median(ms):.3f} ms, "
        f"max {max(ms):.3f} ms (target < 5 ms)"
    )
    ms = timed(lambda: chunk_markdown(markdown), 10)
    print(f"chunk_markdown, {words:,}-word note: median {statistics.median(ms):.2f} ms")

    samples = sorted(args.samples.glob("*.html")) if args.samples.is_dir() else []
    if not samples:
        print(f"no real samples in {args.samples}; skipping per-note conversion")
        return
    total_ms, total_bytes = [], 0
    for path in samples:
        html = path.read_text(encoding="utf-8")
        convert_note(html)
        ms = timed(functools.partial(convert_note, html), 20)
        total_ms.append(statistics.median(ms))
        total_bytes += len(html)
        print(f"convert_note {path.name} ({len(html):,} chars): median {statistics.median(ms):.2f} ms")
    print(
        f"convert_note over {len(samples)} real notes: mean {statistics.mean(total_ms):.2f} ms/note "
        f"({total_bytes / 1000 / sum(total_ms):.2f} MB/s)"
    )


if __name__ == "__main__":
    main()
