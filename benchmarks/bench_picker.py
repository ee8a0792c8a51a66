"""The ChatPanel's destination picker on a big library: opening the panel and each keystroke.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_picker.py [--papers 10000] [--collections 300]

A generated library (10,000 papers with authors and years, 300 collections nested up to
three deep) behind a minimal workbench; the real ChatPanel and its ipywidgets are built in
the kernel (no browser). Prints median and p95 milliseconds for: opening the panel (the
paper index and the collection tree included), and filtering on each keystroke while
typing a title. Target: under 100 ms each (issue 9 §5).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from zocrates_nb.library.base import Collection, Paper

WORDS = (
    "spatial transcriptomics single cell deconvolution atlas tissue mouse brain human tumour immune "
    "graph neural network clustering integration batch correction imaging protein chromatin"
).split()


def generate(n_papers: int, n_collections: int, seed: int = 7) -> tuple[list[Paper], list[Collection]]:
    rng = random.Random(seed)
    collections: list[Collection] = []
    for i in range(n_collections):
        parent = rng.choice(collections).key if collections and rng.random() < 0.6 else None
        collections.append(Collection(f"C{i:07d}", f"{rng.choice(WORDS).title()} {i}", parent))
    papers = [
        Paper(
            f"P{i:07d}",
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 12))).capitalize(),
            creators=(f"{rng.choice(WORDS).title()}son, A",),
            year=rng.randint(1980, 2025),
            collections=(rng.choice(collections).key,),
        )
        for i in range(n_papers)
    ]
    return papers, collections


class _Workbench:
    """Just what ChatPanel asks of a workbench."""

    def __init__(self, papers, collections) -> None:
        self._papers, self._collections = papers, collections
        self.source = type("Src", (), {"describe": lambda self: "generated library"})()
        self.config = type("Cfg", (), {"llm": lambda self: type("L", (), {"configured": False})()})()

    def new_session(self):
        return object()

    def collections(self):
        return sorted(self._collections, key=lambda c: c.name.lower())

    def papers(self):
        return sorted(self._papers, key=lambda p: (p.first_author, p.year or 0))

    def zotero_offer(self):
        return None


def _stats(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    return f"median {statistics.median(samples):.1f} ms, p95 {p95:.1f} ms, max {samples[-1]:.1f} ms (n={len(samples)})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--papers", type=int, default=10_000)
    parser.add_argument("--collections", type=int, default=300)
    parser.add_argument("--opens", type=int, default=5)
    args = parser.parse_args()
    from zocrates_nb.widgets.chat import ChatPanel

    papers, collections = generate(args.papers, args.collections)
    wb = _Workbench(papers, collections)
    opens, panel = [], None
    for _ in range(args.opens):
        started = time.perf_counter()
        panel = ChatPanel(wb)
        opens.append((time.perf_counter() - started) * 1000)
    keystrokes = []
    rng = random.Random(3)
    for title in rng.sample([p.title for p in papers], 10):
        for end in range(1, min(len(title), 24) + 1):
            started = time.perf_counter()
            panel.paper_search.value = title[:end]
            keystrokes.append((time.perf_counter() - started) * 1000)
    print(f"library: {args.papers} papers, {args.collections} collections")
    print(f"open panel      : {_stats(opens)}")
    print(f"keystroke filter: {_stats(keystrokes)}")
    print(f"dropdown options after typing: {len(panel.parent_picker.options)}")


if __name__ == "__main__":
    main()
