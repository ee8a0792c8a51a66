"""``zocrates-nb doctor [--repair] [--json]``: check (and repair) every store of the data directory.

The checks and repairs live in ``doctor.py``; this module only declares the command.
"""

from __future__ import annotations

import argparse
import json


def cmd_doctor(args: argparse.Namespace) -> int:
    from zocrates_nb.cli import paths_from_args
    from zocrates_nb.doctor import format_report, run_doctor

    result = run_doctor(paths_from_args(args), repair=args.repair)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        print(format_report(result))
    return 0 if result["ok"] else 1


def add_parser(sub, common) -> None:
    p = sub.add_parser("doctor", parents=[common],
                       help="check the meta db, bundles, index, vectors, leftovers, locks, file modes and model")
    p.add_argument("--repair", action="store_true", help="fix what was found (damaged stores are re-made, never lost)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_doctor)
