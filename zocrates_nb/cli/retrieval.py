"""CLI commands about retrieval quality on the user's own library: explain (eval --my-notes lives in cli/library.py)."""

from __future__ import annotations

import argparse

from zocrates_nb.cli.common import EXIT_OK, print_json
from zocrates_nb.cli.common import open_workbench as _workbench

__all__ = ["RETRIEVAL_COMMANDS"]


def cmd_explain(args: argparse.Namespace) -> int:
    wb = _workbench(args)
    try:
        report = wb.explain(args.query, args.key)
        if args.json:
            print_json(report.to_dict())
        else:
            print(report.summary())
        return EXIT_OK
    finally:
        wb.close()


def _add_explain_parser(sub, common) -> None:
    p = sub.add_parser(
        "explain",
        parents=[common],
        help="why a note ranks where it does for a query: ranks per retriever, chunks, cuts, context",
    )
    p.add_argument("query")
    p.add_argument("key", help="the note's (or paper's) key, e.g. RN5636UL")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_explain)


RETRIEVAL_COMMANDS = [_add_explain_parser]
