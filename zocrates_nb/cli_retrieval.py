"""CLI commands about retrieval quality on the user's own library: explain (eval --my-notes lives in eval)."""

from __future__ import annotations

import argparse

from zocrates_nb.cli_library import EXIT_OK, _print_json, _workbench

__all__ = ["RETRIEVAL_COMMANDS", "run_my_notes"]


def cmd_explain(args: argparse.Namespace) -> int:
    from zocrates_nb.explain import explain
    from zocrates_nb.index.embed import token_counter

    wb = _workbench(args)
    try:
        report = explain(wb.index, args.query, args.key, count_tokens=token_counter())
        if args.json:
            _print_json(report.to_dict())
        else:
            print(report.summary())
        return EXIT_OK
    finally:
        wb.close()


def _add_explain_parser(sub, common) -> None:
    p = sub.add_parser("explain", parents=[common],
                       help="why a note ranks where it does for a query: ranks per retriever, chunks, cuts, context")
    p.add_argument("query")
    p.add_argument("key", help="the note's (or paper's) key, e.g. RN5636UL")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_explain)


def run_my_notes(args: argparse.Namespace) -> dict:
    """``eval --my-notes``: the known-item findability check on this data directory's library."""
    from zocrates_nb.findability import run_findability

    wb = _workbench(args)
    try:
        return run_findability(wb.index, llm=None)
    finally:
        wb.close()


RETRIEVAL_COMMANDS = [_add_explain_parser]
