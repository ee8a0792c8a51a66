"""How well the citation checker tells honest citations from fabricated ones (issue 23, item 1).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_citecheck.py [--data-dir DIR] [--split dev|test] [--limit N]

For every question of the note question set (its dev or test split), the demo library is searched as an
answer would search it (the evidence-only path, no model), and answers are written from that evidence
in the ways models cite: honest ones in ten styles (*Title* (Author, Year), Author et al. (Year), no comma,
square brackets, "and colleagues", a shortened title, a note by its title, a quote of a passage, a quote
with an ellipsis, a page the passage spans) and fabricated ones of seven kinds (a made-up key, a paper of
the library that was not retrieved, a retrieved paper with words it does not contain, a page outside
the passage, an invented author-year, a DOI that does not resolve, a note that does not exist). Each
answer is one sentence with one citation, checked alone.

Prints, per style and kind, how many honest citations verified (``passed``) and how many fabrications
were marked (``caught``); a citation the checker did not see at all counts as not passed / not caught.
Without ``--data-dir`` the demo library is synced into a temporary directory first (not timed).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path

from zocrates_nb.agents.citecheck import verify
from zocrates_nb.agents.coordinator import Coordinator
from zocrates_nb.workbench.core import Workbench

QUESTIONS = Path(__file__).resolve().parents[1] / "zocrates_nb" / "library" / "demo" / "note_questions.jsonl"
_WORD = re.compile(r"\S+")


def surname(citation: str) -> str:
    return citation.split(",")[0].replace(" et al.", "").split(" & ")[0].split(" and ")[0].strip()


def year(citation: str) -> str:
    found = re.search(r"\b(1[5-9]|20)\d\d\b", citation)
    return found.group(0) if found else ""


def passage_run(text: str, rng: random.Random, words: int = 8) -> str | None:
    """A run of words from one line of a passage (what a model quotes), None when the passage is short."""
    lines = [line for line in (text or "").splitlines() if len(line.split()) >= words + 2 and not line.startswith("#")]
    if not lines:
        return None
    tokens = _WORD.findall(rng.choice(lines))
    start = rng.randrange(0, len(tokens) - words)
    return " ".join(tokens[start : start + words]).strip('*_`>"“”')


def honest(item: dict, parents: dict, rng: random.Random) -> dict[str, str]:
    """Style → one sentence citing ``item`` honestly."""
    out: dict[str, str] = {}
    title, citation = item.get("title") or "", item.get("citation") or ""
    if item["kind"] == "paper" and citation and year(citation):
        name, when = surname(citation), year(citation)
        out["title_author_year"] = f"This is shown in *{title}* ({citation})."
        out["narrative"] = f"{citation.split(',')[0]} ({when}) show this."
        out["no_comma"] = f"This is shown ({citation.replace(',', '')})."
        out["square_brackets"] = f"This is shown [{citation}]."
        out["and_colleagues"] = f"{name} and colleagues ({when}) show this."
        if ":" in title and len(title.split(":")[0].split()) >= 3:
            out["short_title"] = f"See *{title.split(':')[0]}* ({citation})."
        if (run := passage_run(item.get("text", ""), rng)) is not None:
            out["quote"] = f"They write that “{run}” ({citation})."
            words = run.split()
            out["quote_ellipsis"] = f"They write “{' '.join(words[:3])} … {' '.join(words[-3:])}” ({citation})."
        if item.get("page_label_start"):
            out["page"] = f"This is shown ({citation}, p. {item['page_label_start']})."
    elif item["kind"] == "annotation" and (paper := parents.get(item.get("parent_key"))) and paper.get("citation"):
        facts, cited = item.get("annotation") or {}, paper["citation"]
        page = facts.get("page_label")
        if page:
            out["annotation_page"] = f"Your highlight on *{paper['title']}* ({cited}), p. {page}, says so."
        if (run := passage_run(facts.get("text", ""), rng, words=5)) is not None:
            out["highlight_quote"] = f"You highlighted “{run}” ({cited}{f', p. {page}' if page else ''})."
    elif item["kind"] == "note":
        out["note_title"] = f"Your note “{title}” says so."
        if (run := passage_run(item.get("text", ""), rng)) is not None:
            out["note_quote"] = f"Your note “{title}” says “{run}”."
    return out


def fabricated(item: dict, others: list[dict], parents: dict, rng: random.Random) -> dict[str, tuple[str, set[str]]]:
    """Kind → (one sentence with a fabricated citation, the reasons that count as caught)."""
    out: dict[str, tuple[str, set[str]]] = {}
    alphabet = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
    out["fake_key"] = (f"See [Note Key: {''.join(rng.choice(alphabet) for _ in range(8))}].", {"not_in_evidence"})
    outsider = rng.choice(others) if others else None
    if outsider is not None:
        out["paper_not_retrieved"] = (
            f"This is shown in *{outsider['title']}* ({outsider['citation']}).",
            {"not_in_evidence", "citation_mismatch"},
        )
        out["invented_author_year"] = (
            f"This is shown ({surname(outsider['citation'])} et al., {int(year(outsider['citation']) or 2000) + 3}).",
            {"not_in_evidence"},
        )
    citation = item.get("citation") or ""
    if item["kind"] == "paper" and citation and (run := passage_run(item.get("text", ""), rng)) is not None:
        words = run.split()
        words[len(words) // 2] = rng.choice(["never", "always", "zebrafish", "purple"])
        out["altered_quote"] = (f"They write that “{' '.join(words)}” ({citation}).", {"quote_not_found"})
        page = item.get("page_label_start")
        wrong = str(int(page) + 40) if page and str(page).isdigit() else "412"
        out["wrong_page"] = (f"This is shown ({citation}, p. {wrong}).", {"page_out_of_span", "page_not_in_evidence"})
    paper = parents.get(item.get("parent_key")) if item["kind"] == "annotation" else None
    page = (item.get("annotation") or {}).get("page_label")
    if paper is not None and page and str(page).isdigit():
        out["annotation_wrong_page"] = (
            f"You highlighted this ({paper['citation']}, p. {int(page) + 40}).",
            {"page_out_of_span"},
        )
    out["unresolvable_doi"] = (f"The data are at 10.9999/zocrates.{rng.randrange(10**6)}.", {"doi_unresolved"})
    out["invented_note"] = ("Your note “Meeting minutes on the grant renewal” says so.", {"not_in_evidence"})
    return out


def run(wb: Workbench, split: str, limit: int | None, seed: int = 7) -> dict:
    rng = random.Random(seed)
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    questions = [q for q in questions if q["split"] == split][:limit]
    papers = [wb.corpus.manifest(k) for k in wb.corpus.keys(kind="paper")]
    papers = [m for m in papers if m.get("citation") and year(str(m["citation"]))]
    by_key = {m["key"]: m for m in papers}
    coordinator = Coordinator(wb.tools, wb.config, None, wb.events)
    passed, seen_honest, caught, seen_fake = Counter(), Counter(), Counter(), Counter()
    misses: list[dict] = []
    for question in questions:
        answer = coordinator.ask(question["query"])
        retrieved = {e.get("key") for e in answer.evidence} | {e.get("parent_key") for e in answer.evidence}
        others = [m for m in papers if m["key"] not in retrieved]
        # as the coordinator does: what is known of the parent papers the evidence names
        parents = {k: by_key[k] for k in retrieved if k in by_key}
        for item in answer.evidence:
            for style, sentence in honest(item, by_key, rng).items():
                checks = verify(sentence, answer.evidence, parents, question=question["query"]).checks
                seen_honest[style] += 1
                if checks and all(c.reason is None for c in checks):
                    passed[style] += 1
                elif len(misses) < 40:
                    misses.append({"style": style, "sentence": sentence, "checks": [c.to_json() for c in checks]})
            for kind, (sentence, reasons) in fabricated(item, others, by_key, rng).items():
                resolves = lambda doi: not doi.startswith("10.9999/")  # noqa: E731 - OpenAlex knows every other DOI
                checks = verify(sentence, answer.evidence, parents, doi_resolves=resolves).checks
                seen_fake[kind] += 1
                if any(c.reason in reasons for c in checks):
                    caught[kind] += 1
                elif len(misses) < 40:
                    misses.append({"kind": kind, "sentence": sentence, "checks": [c.to_json() for c in checks]})
    return {
        "split": split,
        "questions": len(questions),
        "honest": {s: {"passed": passed[s], "of": n, "rate": round(passed[s] / n, 4)} for s, n in seen_honest.items()},
        "fabricated": {
            k: {"caught": caught[k], "of": n, "rate": round(caught[k] / n, 4)} for k, n in seen_fake.items()
        },
        "honest_rate": round(sum(passed.values()) / max(1, sum(seen_honest.values())), 4),
        "caught_rate": round(sum(caught.values()) / max(1, sum(seen_fake.values())), 4),
        "misses": misses,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--misses", action="store_true", help="print the misses too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zocrates-bench-citecheck-") as tmp:
        wb = Workbench(args.data_dir or Path(tmp), progress=False)
        try:
            if args.data_dir is None:
                wb.sync(progress=False)
            figures = run(wb, args.split, args.limit)
        finally:
            wb.close()
    if not args.misses:
        figures.pop("misses")
    json.dump(figures, sys.stdout, indent=1, ensure_ascii=False)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
