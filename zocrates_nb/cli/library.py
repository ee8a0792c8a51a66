"""CLI commands that work on the library: sync, search, ask (and --save), convert, eval, demo (index: cli/index.py).

Kept apart from ``cli/config.py`` (config, profile, LLM, status) so each file reads in one
sitting; ``cli.build_parser`` registers both. Every command opens the workbench of the
data directory chosen by the global options and prints either text for people
or, with ``--json``, one JSON object for scripts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from zocrates_nb.cli.common import EXIT_ERROR, EXIT_OK, config_store, paths_from_args, print_json
from zocrates_nb.cli.common import open_workbench as _workbench
from zocrates_nb.errors import ZocratesError
from zocrates_nb.storage.space import reading_only_notice

# ----------------------------------------------------------------------------- sync


def _remember_source(args: argparse.Namespace) -> None:
    """``sync --zotero-sqlite/--zotero-dir`` makes that database this data directory's library."""
    if args.zotero_sqlite:
        library = {"source": "zotero-sqlite", "sqlite_path": str(Path(args.zotero_sqlite).resolve())}
    elif args.zotero_dir:
        library = {"source": "zotero-dir", "zotero_dir": str(Path(args.zotero_dir).resolve())}
    else:
        return
    config_store(args).update(lambda cfg: {**cfg, "library": {**cfg.get("library", {}), **library}})


def cmd_sync(args: argparse.Namespace) -> int:
    for given in (args.zotero_sqlite, args.zotero_dir):
        if given and not Path(given).exists():
            raise ZocratesError(
                f"{given} does not exist.", "Give the path of zotero.sqlite or of the Zotero data directory."
            )
    _remember_source(args)
    wb = _workbench(args, auto_sync=False)
    try:
        report = wb.sync(progress=False if args.json else None, verify=args.verify)
        if args.json:
            payload = report.to_dict()
            if args.list:
                payload["notes"] = wb.corpus.listing("note")
            print_json(payload)
        else:
            print(f"{wb.source.describe()}: {report.summary()}")
            if args.list:
                for note in wb.corpus.listing("note"):
                    parent = f" (child of {note['parent_key']})" if note.get("parent_key") else ""
                    print(f"  {note['key']}  {note['title']}{parent}")
        return EXIT_ERROR if report.counts.get("failed") and args.strict else EXIT_OK
    finally:
        wb.close()


def _add_sync_parser(sub, common) -> None:
    p = sub.add_parser("sync", parents=[common], help="convert and index the library's notes and papers")
    p.add_argument(
        "--zotero-sqlite", metavar="PATH", help="read this zotero.sqlite (through a snapshot) and remember it"
    )
    p.add_argument(
        "--zotero-dir", metavar="DIR", help="read DIR/zotero.sqlite and DIR/storage full text, and remember it"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--list", action="store_true", help="also list every note the corpus now holds")
    p.add_argument("--strict", action="store_true", help="exit 1 when any item failed to convert")
    p.add_argument(
        "--verify", action="store_true", help="also check every bundle's content hash and re-make damaged ones"
    )
    p.set_defaults(func=cmd_sync)


# ----------------------------------------------------------------------------- search


def cmd_search(args: argparse.Namespace) -> int:
    filters = {
        k: v
        for k, v in (
            ("item_type", args.type),
            ("collection", args.collection),
            ("parent_key", args.parent),
            ("library", args.library),
        )
        if v
    }
    if not args.no_engine and _search_via_engine(args, filters):
        return EXIT_OK
    wb = _workbench(args, one_shot=True)  # reads the vectors without `import chromadb` (index/vectors/fast.py)
    try:
        results = wb.search(args.query, k=args.k, filters=filters or None, mode=args.mode)
        if args.json:
            print_json(results.to_dict())
        else:
            if results.notice and results.notice not in results.evidence_text:  # said once, not twice
                print(f"note: {results.notice}", file=sys.stderr)
            print(results.evidence_text)
        return EXIT_OK
    finally:
        wb.close()


def _add_search_parser(sub, common) -> None:
    p = sub.add_parser("search", parents=[common], help="hybrid search over notes and papers, with provenance")
    p.add_argument("query")
    p.add_argument("--k", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--type", metavar="ITEM_TYPE", help="only this item type: note, paper, journalArticle, …")
    p.add_argument("--collection", metavar="KEY_OR_NAME", help="only items filed in this collection")
    p.add_argument("--parent", metavar="KEY", help="only child notes of this paper")
    p.add_argument("--library", metavar="NAME_OR_ID", help="only this library (`zocrates-nb library list`)")
    p.add_argument("--json", action="store_true", help="keys, kind, ranks and the evidence text as JSON")
    p.add_argument(
        "--mode",
        choices=("hybrid", "lexical", "dense"),
        default=None,
        help="retrievers to use (default hybrid; lexical needs no model and answers fastest)",
    )
    p.add_argument(
        "--no-engine",
        action="store_true",
        help="search in this process even when `zocrates-nb engine` runs for the data directory",
    )
    p.set_defaults(func=cmd_search)


def _search_via_engine(args: argparse.Namespace, filters: dict) -> bool:
    """Answer through the warm engine when one runs (see engine.py); False when none does."""
    from zocrates_nb.workbench.engine import search_via_engine

    payload = search_via_engine(paths_from_args(args), args.query, args.k, filters or None, args.mode)
    if payload is None:
        return False
    if args.json:
        print_json(payload)
    else:
        if payload.get("notice") and payload["notice"] not in payload["evidence_text"]:
            print(f"note: {payload['notice']}", file=sys.stderr)
        print(payload["evidence_text"])
    return True


# ----------------------------------------------------------------------------- ask --save


def add_save_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--save", action="store_true", help="save the answer as a note (Zotero, or the outbox)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--parent", metavar="KEY", help="with --save: a child note of this paper")
    where.add_argument("--collection", metavar="KEY", help="with --save: a standalone note in this collection")


def save_answer_from_cli(wb, answer, args: argparse.Namespace) -> dict | None:
    """``ask --save``: the "saved" record, or None without --save."""
    if not getattr(args, "save", False):
        if getattr(args, "parent", None) or getattr(args, "collection", None):
            raise ZocratesError("--parent and --collection only apply with --save.", "Add --save.")
        return None
    return wb.save_answer(answer, parent_key=args.parent, collection_key=args.collection).to_dict()


# ----------------------------------------------------------------------------- ask --export


def export_answer_from_cli(wb, answer, args: argparse.Namespace) -> None:
    """``ask --export FMT [--export-to PATH]``: write the answer for writing; say where on stderr."""
    from zocrates_nb.workbench.exporting import EXPORT_FORMATS

    result = wb.export(answer, args.export)
    written = result.write(Path(args.export_to or f"answer{EXPORT_FORMATS[args.export]}"))
    print(f"exported {len(result.references)} reference(s): {', '.join(map(str, written))}", file=sys.stderr)


# ----------------------------------------------------------------------------- ask


def cmd_ask(args: argparse.Namespace) -> int:
    wb = _workbench(args)
    try:
        stream = None
        if args.stream and not args.json:
            stream = lambda token: print(token, end="", flush=True)  # noqa: E731
        if wb.paths.unwritable:  # said once, before the answer (its evidence is lexical only)
            print(f"note: {reading_only_notice(wb.paths.root, wb.paths.unwritable)}", file=sys.stderr)
        answer = wb.ask(args.question, on_token=stream, library=args.library)
        saved = save_answer_from_cli(wb, answer, args)
        if args.export:
            export_answer_from_cli(wb, answer, args)
        elif args.export_to:
            raise ZocratesError("--export-to only applies with --export.", "Add --export markdown|bibtex|csl-json.")
        if args.json:
            print_json({**answer.to_json(), **({"saved": saved} if saved else {})})
        else:
            if stream is None:
                print(answer._repr_markdown_())
            else:
                print()
            if saved:
                print(
                    f"saved as note {saved['key']} → {saved['where']}"
                    + (f" (not yet in Zotero: {saved['reason']})" if saved["where"] == "outbox" else "")
                )
        return EXIT_OK
    finally:
        wb.close()


def _add_ask_parser(sub, common) -> None:
    p = sub.add_parser(
        "ask", parents=[common], help="answer a question from your library (evidence-only without an LLM)"
    )
    p.add_argument("question")
    p.add_argument("--json", action="store_true", help='{"answer", "citations", "evidence", "usage", "mode"}')
    p.add_argument("--stream", action="store_true", help="print the answer as it is generated")
    p.add_argument("--library", metavar="NAME_OR_ID", help="search only this library (`zocrates-nb library list`)")
    add_save_arguments(p)
    p.add_argument(
        "--export",
        choices=("markdown", "bibtex", "csl-json"),
        help="also write the answer for writing: Pandoc/Quarto Markdown with [@citekey] (and a .bib beside it), "
        "BibTeX or CSL-JSON",
    )
    p.add_argument("--export-to", metavar="PATH", help="with --export: the file (default ./answer.md, .bib or .json)")
    p.set_defaults(func=cmd_ask)


# ----------------------------------------------------------------------------- convert


def cmd_convert(args: argparse.Namespace) -> int:
    from zocrates_nb.convert.convert import convert_note

    path = Path(args.file)
    if not path.is_file():
        raise ZocratesError(f"No file at {path}.", "Give the path of a note's HTML file.")
    converted = convert_note(path.read_bytes())
    manifest = {"key": path.stem, **converted.manifest_fields("text/note")}
    if args.json:
        print_json({"markdown": converted.markdown, "manifest": manifest})
    else:
        print(converted.markdown)
        print("\n---")
        print_json(manifest)
    return EXIT_OK


def _add_convert_parser(sub, common) -> None:
    p = sub.add_parser("convert", parents=[common], help="show the Markdown and OKF manifest of one note's HTML")
    p.add_argument("file", metavar="NOTE.html")
    p.add_argument("--json", action="store_true", help='{"markdown", "manifest"}')
    p.set_defaults(func=cmd_convert)


# ----------------------------------------------------------------------------- eval


def cmd_eval(args: argparse.Namespace) -> int:
    from zocrates_nb.diagnostics.events import EventLog
    from zocrates_nb.quality.evaluate import run_beir_eval, run_notes_eval

    paths = paths_from_args(args).ensure()
    events = EventLog(paths.diagnostics)
    if args.my_notes:
        result = _run_my_notes(args)
    elif args.notes:
        wb = _workbench(args)
        try:
            result = run_notes_eval(
                wb.index, k=5, mode=args.mode, events=events, notes_only=args.notes_only, split=args.split
            )
        finally:
            wb.close()
    elif args.dataset:
        result = run_beir_eval(args.dataset, split=args.split or "test", mode=args.mode, paths=paths, events=events)
    else:
        raise ZocratesError("Nothing to evaluate.", "Give --dataset DIR --split NAME, --notes or --my-notes.")
    if args.json:
        print_json(result)
    else:
        shown = {k: v for k, v in result.items() if k not in ("misses", "per_kind", "least_findable")}
        print("  ".join(f"{k}={v}" for k, v in shown.items()))
        for kind, row in result.get("per_kind", {}).items():
            print(f"  {kind:<11} " + "  ".join(f"{k}={v}" for k, v in row.items()))
        for miss in result.get("misses", []):
            print(f"  miss {miss['id']}: {miss['query']}")
        for row in result.get("least_findable", []):
            print(f"  rank {row['rank'] or '>10'}  {row['key']}  {row['title'][:60]}  <- {row['query'][:80]}")
    return EXIT_OK


def _run_my_notes(args: argparse.Namespace) -> dict:
    """``eval --my-notes``: the known-item findability check on this data directory's library."""
    from zocrates_nb.quality.findability import run_findability

    wb = _workbench(args)
    try:
        return run_findability(wb.index, llm=None)
    finally:
        wb.close()


def _add_eval_parser(sub, common) -> None:
    p = sub.add_parser("eval", parents=[common], help="retrieval quality: BEIR datasets or the demo notes")
    p.add_argument("--dataset", metavar="DIR", help="BEIR folder: corpus.jsonl[.gz], queries.jsonl, qrels/SPLIT.tsv")
    p.add_argument("--split", default=None, help="qrels split (default test); with --notes: dev | test (default: all)")
    p.add_argument("--mode", choices=("lexical", "dense", "hybrid"), default="hybrid")
    p.add_argument(
        "--notes",
        action="store_true",
        help="note Recall@5/@10 and MRR@10 per question kind on the demo library's questions",
    )
    p.add_argument(
        "--my-notes",
        action="store_true",
        help="findability of every note in this library (known-item test, no labels needed)",
    )
    p.add_argument(
        "--notes-only",
        action="store_true",
        help="with --notes: search notes only (diagnostic; default: papers compete)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_eval)


# ----------------------------------------------------------------------------- demo


def cmd_demo(args: argparse.Namespace) -> int:
    """The main job, headless: status, profile, sync, a search and an answer."""
    from zocrates_nb.health.status import format_status
    from zocrates_nb.settings.profile import format_user_research_profile_context

    wb = _workbench(args, auto_sync=False)
    try:
        print("== Sync")
        print(f"{wb.source.describe()}: {wb.sync(progress=False).summary()}")
        print("\n== Status")
        print(format_status(wb.status()))
        print("\n== User Research Profile section (what the agents receive)")
        section = format_user_research_profile_context(wb.profile)
        print(section or "(empty: no profile is injected, zero tokens)")
        question = args.question
        print(f"\n== Search: {question}")
        print(wb.search(question, k=5).evidence_text)
        print(f"\n== Ask: {question}")
        print(wb.ask(question)._repr_markdown_())
        return EXIT_OK
    finally:
        wb.close()


def _add_demo_parser(sub, common) -> None:
    p = sub.add_parser("demo", parents=[common], help="run the main job headless on the demo library")
    p.add_argument(
        "--question", default="Which methods deconvolve cell types in Visium spots, and what did I note about them?"
    )
    p.set_defaults(func=cmd_demo)


#: Builders in help order; ``library`` and ``outbox`` (cli/zotero.py) come between these and ``demo``.
LIBRARY_COMMANDS = [
    _add_sync_parser,
    _add_search_parser,
    _add_ask_parser,
    _add_convert_parser,
    _add_eval_parser,
]
DEMO_COMMANDS = [_add_demo_parser]
