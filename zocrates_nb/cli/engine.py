"""``zocrates-nb engine start|stop|status``: the warm engine that keeps cold searches fast (engine.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from zocrates_nb.cli.common import EXIT_OK, paths_from_args


def cmd_engine(args: argparse.Namespace) -> int:
    from zocrates_nb.workbench.engine import DEFAULT_IDLE_S, ask_engine, start_engine

    paths = paths_from_args(args)
    answer: dict[str, Any] | None
    if args.engine_action == "start":
        answer = start_engine(paths, idle_s=args.idle or DEFAULT_IDLE_S, wait_s=300.0 if args.wait else 0.0)
        state = "ready" if answer.get("ready") else "loading the model and the vector index"
        print(
            f"engine running for {paths.root} (pid {answer['pid']}, {state}); "
            f"it stops after {int(args.idle or DEFAULT_IDLE_S)} s without a request."
        )
    elif args.engine_action == "stop":
        answer = ask_engine(paths, {"op": "stop"}, timeout=10.0)
        print("engine stopped." if answer else f"no engine runs for {paths.root}.")
    else:
        answer = ask_engine(paths, {"op": "ping"}, timeout=5.0)
        if args.json:
            print(json.dumps({"running": answer is not None, **(answer or {})}))
        else:
            print(
                f"engine running (pid {answer['pid']}, {'ready' if answer['ready'] else 'loading'})."
                if answer
                else f"no engine runs for {paths.root}; `zocrates-nb engine start` starts one."
            )
    return EXIT_OK


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "engine", parents=[common], help="a warm background process that makes cold `search` commands fast"
    )
    actions = p.add_subparsers(dest="engine_action", metavar="{start,stop,status}", required=True)
    start = actions.add_parser("start", parents=[common], help="start one for this data directory")
    start.add_argument("--idle", type=float, metavar="SECONDS", help="stop after this long without a request (1800)")
    start.add_argument("--wait", action="store_true", help="return once the model and vector index are loaded")
    actions.add_parser("stop", parents=[common], help="stop it")
    status = actions.add_parser("status", parents=[common], help="is one running, and is it ready?")
    status.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_engine)
