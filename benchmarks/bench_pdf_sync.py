"""The first sync of a Zotero desktop library with PDFs, with and without reading the PDFs per page.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_pdf_sync.py [--papers N] [--pages P] [--rounds R] [--keep DIR]

Builds a Zotero 9 data directory whose N journal articles each have a stored PDF of P pages
(``storage/<key>/<file>.pdf``, written by tests/fakes/pdf_files.py, two SciFact abstracts a page; ../shared/
data/scifact, evaluation data only; synthetic prose without it) and, as Zotero would have indexed it, the
same text in ``.zotero-ft-cache``. Then it runs the command a user runs, ``zocrates-nb sync --zotero-dir
DIR --json``, in a fresh data directory as a child process, twice per round in turn: with the PDFs read
per page (the default) and with ``library use dir DIR --no-pdf-pages`` (Zotero's full-text cache, as before
page numbers). Wall and CPU time come from the kernel (``wait4``, see bench_first_sync.py). Both syncs
embed every chunk: the figure is the whole first sync a user waits for. The extraction alone (PDFium over
every PDF, one process) is timed too: what the sync would pay if reading the PDFs hid behind nothing.
Prints one JSON object: both medians and their ratios, wall and CPU (the issue's bar: at most 1.10).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_corpus import key_for  # noqa: E402  (a valid 8-character Zotero key per number)
from bench_first_sync import timed  # noqa: E402
from bench_pdf_extract import abstracts  # noqa: E402

from tests.fakes.pdf_files import write_pdf  # noqa: E402
from tests.fakes.zotero_sqlite import ZoteroDB  # noqa: E402

CLI = str(Path(sys.executable).with_name("zocrates-nb"))


def build(zotero_dir: Path, papers: int, pages: int) -> str:
    texts, source = abstracts(papers * pages * 2)
    zotero_dir.mkdir(parents=True)
    with ZoteroDB(zotero_dir / "zotero.sqlite", "9") as db:
        db.conn.execute("BEGIN")
        for n in range(papers):
            paper, attachment = key_for(5000 + n), key_for(90000 + n)
            db.add_paper(paper, f"Paper {n}: {texts[n * pages * 2][:60]}", creators=[("A.", f"Author{n}", "author")])
            db.add_attachment(attachment, paper, path=f"storage:Author{n} 2020.pdf")
            page_paragraphs = [texts[(n * pages + p) * 2 : (n * pages + p) * 2 + 2] for p in range(pages)]
            folder = zotero_dir / "storage" / attachment
            write_pdf(folder / f"Author{n} 2020.pdf", page_paragraphs, labels=[(0, "D", "", 101)])
            (folder / ".zotero-ft-cache").write_text(
                "\n\n".join(" ".join(p) for p in page_paragraphs), encoding="utf-8"
            )
        db.conn.execute("COMMIT")
    return source


def sync(zotero_dir: Path, data_dir: Path, *, pdf_pages: bool) -> dict:
    if not pdf_pages:
        subprocess.run(
            [CLI, "--data-dir", str(data_dir), "library", "use", "dir", str(zotero_dir), "--no-pdf-pages"],
            check=True,
            capture_output=True,
        )
    figures, out = timed([CLI, "--data-dir", str(data_dir), "sync", "--zotero-dir", str(zotero_dir), "--json"])
    report = json.loads(out)
    status = subprocess.run(
        [CLI, "--data-dir", str(data_dir), "status", "--json"], check=True, capture_output=True, text=True
    )
    corpus = json.loads(status.stdout)
    return {
        **figures,
        "counts": report.get("counts"),
        "chunks": corpus["index"]["chunks"],
        "pages": corpus["corpus"].get("pages"),
    }


#: the sync's lexical phase alone (conversion, bundles, FTS rows; no vectors), in a child process: where reading
#: the PDFs adds its work. Prints {"seconds", "cpu_s"}.
LEXICAL_ONLY = (
    "import json, sys, time; from zocrates_nb.workbench.core import Workbench; "
    "wb = Workbench(sys.argv[1], zotero_dir=sys.argv[2], auto_sync=False, progress=False); "
    "cpu, t = time.process_time(), time.perf_counter(); wb.sync(progress=False, vectors=False); "
    "print(json.dumps({'seconds': round(time.perf_counter() - t, 2), 'cpu_s': round(time.process_time() - cpu, 2)})); "
    "wb.close()"
)


def lexical_only(zotero_dir: Path, data_dir: Path, *, pdf_pages: bool) -> dict:
    if not pdf_pages:
        subprocess.run(
            [CLI, "--data-dir", str(data_dir), "library", "use", "dir", str(zotero_dir), "--no-pdf-pages"],
            check=True,
            capture_output=True,
        )
    out = subprocess.run(
        [sys.executable, "-c", LEXICAL_ONLY, str(data_dir), str(zotero_dir)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def extraction_alone(zotero_dir: Path) -> dict:
    from zocrates_nb.library.pdf_text import read_pdf

    files = sorted(zotero_dir.glob("storage/*/*.pdf"))
    cpu0, started = time.process_time(), time.perf_counter()
    pages = sum(len(read_pdf(path, path.parent.name).pages) for path in files)
    seconds = time.perf_counter() - started
    return {
        "pdfs": len(files),
        "pages": pages,
        "seconds": round(seconds, 2),
        "cpu_s": round(time.process_time() - cpu0, 2),
        "pages_per_s": round(pages / seconds, 1),
    }


def lexical_rounds(zotero_dir: Path, root: Path, args: argparse.Namespace) -> dict:
    timings: dict[str, list[dict]] = {"with_pdf_pages": [], "without": []}
    for number in range(args.rounds):
        for pdf_pages in (True, False) if number % 2 == 0 else (False, True):
            name = "with_pdf_pages" if pdf_pages else "without"
            data_dir = root / f"lexical-{name}-{number + 1}"
            timings[name].append(lexical_only(zotero_dir, data_dir, pdf_pages=pdf_pages))
            print(json.dumps({"round": number + 1, name: timings[name][-1]}), file=sys.stderr, flush=True)
    medians = {name: statistics.median(t["seconds"] for t in runs) for name, runs in timings.items()}
    cpu = {name: statistics.median(t["cpu_s"] for t in runs) for name, runs in timings.items()}
    return {
        "library": f"{args.papers} papers × {args.pages}-page PDFs, lexical phase only (no vectors)",
        "median_seconds": medians,
        "median_cpu_s": cpu,
        "added_seconds": round(medians["with_pdf_pages"] - medians["without"], 2),
        "added_cpu_s": round(cpu["with_pdf_pages"] - cpu["without"], 2),
        "rounds": timings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=120)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="pairs of syncs, in turn (medians; default 3)")
    parser.add_argument("--keep", metavar="DIR", help="build in DIR (must not exist) and keep it")
    parser.add_argument(
        "--lexical-only", action="store_true", help="time only the lexical phase (no embedding), where PDFs add work"
    )
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zc-bench-pdf-sync-"))
    root.mkdir(parents=True, exist_ok=not args.keep)
    zotero_dir = root / "Zotero"
    source = build(zotero_dir, args.papers, args.pages)
    if args.lexical_only:
        print(json.dumps(lexical_rounds(zotero_dir, root, args), indent=2))
        return
    rounds = []
    for number in range(args.rounds):  # alternate, so both see the same machine (it is shared)
        order = (True, False) if number % 2 == 0 else (False, True)
        entry = {}
        for pdf_pages in order:
            name = "with_pdf_pages" if pdf_pages else "without"
            entry[name] = sync(zotero_dir, root / f"data-{name}-{number + 1}", pdf_pages=pdf_pages)
            print(json.dumps({"round": number + 1, name: entry[name]}), file=sys.stderr, flush=True)
        rounds.append(entry)
    with_wall = statistics.median(r["with_pdf_pages"]["wall_s"] for r in rounds)
    without_wall = statistics.median(r["without"]["wall_s"] for r in rounds)
    result = {
        "library": f"{args.papers} papers × {args.pages}-page PDFs ({source}), Zotero 9 schema",
        "median_sync_wall_s": {"with_pdf_pages": with_wall, "without": without_wall},
        "median_sync_cpu_s": {
            "with_pdf_pages": statistics.median(r["with_pdf_pages"]["cpu_s"] for r in rounds),
            "without": statistics.median(r["without"]["cpu_s"] for r in rounds),
        },
        "ratio_wall": round(with_wall / without_wall, 3),
        # the machine is shared: CPU time (user + system, the embedding process included) moves less than wall
        "ratio_cpu": round(
            statistics.median(r["with_pdf_pages"]["cpu_s"] for r in rounds)
            / statistics.median(r["without"]["cpu_s"] for r in rounds),
            3,
        ),
        "extraction_alone": extraction_alone(zotero_dir),
        "rounds": rounds,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
