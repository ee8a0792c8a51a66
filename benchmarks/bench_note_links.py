"""What finding a note's links to papers costs at sync (corpus/links.py), at the demo's size and larger.

A sync builds one ``PaperCatalogue`` of the library's papers and asks it for each note's links;
this times both. The large case takes SciFact's abstracts as papers (title, first words of the
abstract as its name source) and repeats the demo notes' text as the notes.

    PYTHONPATH=. python benchmarks/bench_note_links.py
    PYTHONPATH=. python benchmarks/bench_note_links.py --scifact PATH/TO/scifact --notes 2000
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from pathlib import Path

from zocrates_nb.corpus.links import PaperCatalogue, plain_text
from zocrates_nb.library.demo_content import DEMO_CONTENT_DIR, load_demo_content


def _scifact_papers(folder: Path, limit: int) -> list[dict]:
    papers = []
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            papers.append(
                {"key": f"S{int(doc['_id']):07d}"[-8:], "title": doc.get("title") or "", "abstract": doc["text"]}
            )
            if len(papers) >= limit:
                break
    return papers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scifact", type=Path, help="a SciFact folder (corpus.jsonl.gz): its abstracts become papers")
    parser.add_argument("--papers", type=int, default=5183)
    parser.add_argument("--notes", type=int, default=33)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    _, demo_papers, demo_notes = load_demo_content(DEMO_CONTENT_DIR)
    papers = demo_papers + (_scifact_papers(args.scifact, args.papers) if args.scifact else [])
    notes = [demo_notes[i % len(demo_notes)]["html"] for i in range(args.notes)]
    builds, finds, found = [], [], 0
    for _ in range(args.repeat):
        started = time.perf_counter()
        catalogue = PaperCatalogue(papers)
        builds.append(time.perf_counter() - started)
        started = time.perf_counter()
        found = sum(len(catalogue.links(html, plain_text(html))) for html in notes)
        finds.append(time.perf_counter() - started)
    find = statistics.median(finds)
    print(
        f"{len(papers)} papers, {len(notes)} notes: catalogue {statistics.median(builds) * 1000:.1f} ms, "
        f"links {find * 1000:.1f} ms ({find / len(notes) * 1e6:.0f} µs a note), "
        f"{found} links"
    )


if __name__ == "__main__":
    main()
