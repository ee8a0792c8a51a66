"""Per-page PDF text: PDFium (pypdfium2) against pypdf and pdfminer.six on the same PDFs — speed and agreement.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_pdf_extract.py [--papers N] [--pages P] [--rounds R]
        [--pdf FILE ...]

Why: the sync reads every PDF at hand once (library/pdf_text.py), so the library it uses decides what a
first sync with PDFs costs; and its words are what the index holds. Two kinds of PDF are read:

- generated ones (``tests/fakes/pdf_files.py``: Helvetica, one line per ``Tj``) whose pages hold
  SciFact abstracts (../shared/data/scifact, evaluation data only; synthetic prose without it), so the
  true words of every page are known: **recall** and **precision** of each library's words against them;
- real PDFs given with ``--pdf`` (default: the LaTeX and DocBook manuals Debian ships under
  /usr/share/doc, when present): their words are compared with PDFium's (**agreement**, word F1).

Each library reads each file ``--rounds`` times in turn (best round kept: the machine is shared);
pages/s counts every page, text or not. Page labels: whether the library exposes ``/PageLabels``.
Prints one JSON object. Needs the ``bench`` extra (``pip install -e '.[bench]'``) for the alternatives.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "data" / "scifact" / "corpus.jsonl.gz"
REAL_PDFS = (
    Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
)
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD.findall(text))


def f1(found: Counter[str], truth: Counter[str]) -> dict[str, float]:
    common = sum((found & truth).values())
    recall = common / max(1, sum(truth.values()))
    precision = common / max(1, sum(found.values()))
    return {
        "recall": round(recall, 4),
        "precision": round(precision, 4),
        "f1": round(2 * recall * precision / max(1e-9, recall + precision), 4),
    }


def pdfium_pages(path: Path) -> list[str]:
    import pypdfium2

    doc = pypdfium2.PdfDocument(str(path))
    try:
        out = []
        for i in range(len(doc)):
            page = doc[i]
            textpage = page.get_textpage()
            out.append(textpage.get_text_range())
            textpage.close()
            page.close()
        return out
    finally:
        doc.close()


def pypdf_pages(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


def pdfminer_pages(path: Path) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return [
        "".join(element.get_text() for element in layout if isinstance(element, LTTextContainer))
        for layout in extract_pages(str(path))
    ]


READERS: dict[str, Callable[[Path], list[str]]] = {
    "pypdfium2": pdfium_pages,
    "pypdf": pypdf_pages,
    "pdfminer.six": pdfminer_pages,
}
LICENCES = {"pypdfium2": "Apache-2.0 / BSD-3-Clause", "pypdf": "BSD-3-Clause", "pdfminer.six": "MIT"}
LABELS = {
    "pypdfium2": "yes (PdfDocument.get_page_label)",
    "pypdf": "yes (PdfReader.page_labels)",
    "pdfminer.six": "yes (PDFDocument.get_page_labels)",
}


def abstracts(limit: int) -> tuple[list[str], str]:
    if SCIFACT.exists():
        out = []
        with gzip.open(SCIFACT, "rt", encoding="utf-8") as fh:
            for line in fh:
                text = json.loads(line)["text"]
                if len(text.split()) > 120:
                    out.append(text)
                if len(out) == limit:
                    break
        return out, "SciFact abstracts"
    sys.path.insert(0, str(REPO))
    from tests.fakes.pdf_files import page_texts

    return [" ".join(p) for p in (sum(page_texts(limit, 200), []))][:limit], "synthetic prose (SciFact not found)"


def generated(folder: Path, papers: int, pages: int) -> tuple[list[tuple[Path, list[str]]], str]:
    """``papers`` PDFs of ``pages`` pages, two abstracts a page; with the true text of every page."""
    sys.path.insert(0, str(REPO))
    from tests.fakes.pdf_files import write_pdf

    texts, source = abstracts(papers * pages * 2)
    out = []
    for n in range(papers):
        page_paragraphs = [texts[(n * pages + p) * 2 : (n * pages + p) * 2 + 2] for p in range(pages)]
        path = write_pdf(folder / f"paper{n}.pdf", page_paragraphs, labels=[(0, "r", "", 1), (1, "D", "", 1)])
        out.append((path, [" ".join(p) for p in page_paragraphs]))
    return out, source


def timed_read(reader: Callable[[Path], list[str]], files: list[Path], rounds: int) -> tuple[float, list[list[str]]]:
    best, texts = float("inf"), []
    for _ in range(rounds):
        started = time.perf_counter()
        texts = [reader(path) for path in files]
        best = min(best, time.perf_counter() - started)
    return best, texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=20, help="generated PDFs (default 20)")
    parser.add_argument("--pages", type=int, default=10, help="pages each (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="reads per library and file set (best kept)")
    parser.add_argument("--pdf", action="append", type=Path, help="a real PDF to compare on (repeatable)")
    args = parser.parse_args()
    real = [p for p in (args.pdf or REAL_PDFS) if p.exists()]
    with tempfile.TemporaryDirectory(prefix="zc-bench-pdf-") as tmp:
        made, source = generated(Path(tmp), args.papers, args.pages)
        files = [path for path, _ in made]
        truth = [[words(t) for t in pages] for _, pages in made]
        result: dict = {
            "generated": f"{len(files)} PDFs × {args.pages} pages of {source}",
            "real": [str(p) for p in real],
            "libraries": {},
        }
        pdfium_real: list[list[str]] = []
        for name, reader in READERS.items():
            try:
                seconds, texts = timed_read(reader, files, args.rounds)
            except ImportError as exc:
                result["libraries"][name] = {"error": f"not installed ({exc.name}); pip install -e '.[bench]'"}
                continue
            pages = sum(len(t) for t in texts)
            per_page = [
                f1(words(page), true)
                for doc, true_doc in zip(texts, truth, strict=True)
                for page, true in zip(doc, true_doc, strict=True)
            ]
            entry = {
                "licence": LICENCES[name],
                "page_labels": LABELS[name],
                "generated_pages_per_s": round(pages / seconds, 1),
                "generated_word_recall": round(sum(p["recall"] for p in per_page) / len(per_page), 4),
                "generated_word_precision": round(sum(p["precision"] for p in per_page) / len(per_page), 4),
            }
            if real:
                real_seconds, real_texts = timed_read(reader, real, args.rounds)
                entry["real_pages_per_s"] = round(sum(len(t) for t in real_texts) / real_seconds, 1)
                if name == "pypdfium2":
                    pdfium_real = real_texts
                entry["real_agreement_with_pdfium"] = f1(
                    words("\n".join("\n".join(t) for t in real_texts)),
                    words("\n".join("\n".join(t) for t in pdfium_real)),
                )
                entry["same_page_counts_as_pdfium"] = sum(
                    len(a) == len(b) for a, b in zip(real_texts, pdfium_real, strict=True)
                ) == len(real)
            result["libraries"][name] = entry
            print(json.dumps({name: entry}), file=sys.stderr, flush=True)
    base = result["libraries"].get("pypdfium2", {}).get("generated_pages_per_s")
    if base:
        result["pdfium_speedup"] = {
            name: round(base / e["generated_pages_per_s"], 1)
            for name, e in result["libraries"].items()
            if e.get("generated_pages_per_s") and name != "pypdfium2"
        }
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
