"""``zocrates-nb doctor [--repair] [--json]``: check (and repair) every store of the data directory.

The checks and repairs live in ``zocrates_nb/workbench/doctor.py``; this module only declares the command.
"""

from __future__ import annotations

import argparse
import json

from zocrates_nb.cli.common import EXIT_ERROR, EXIT_OK, paths_from_args


def cmd_doctor(args: argparse.Namespace) -> int:
    from zocrates_nb.workbench.doctor import format_report, run_doctor

    result = run_doctor(paths_from_args(args), repair=args.repair)
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    else:
        print(format_report(result))
    return EXIT_OK if result["ok"] else EXIT_ERROR


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "doctor",
        parents=[common],
        help="check the meta db, bundles, index, vectors, leftovers, locks, file modes and model",
    )
    p.add_argument("--repair", action="store_true", help="fix what was found (damaged stores are re-made, never lost)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=cmd_doctor)
