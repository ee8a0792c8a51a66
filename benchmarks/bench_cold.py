"""Cold paths as ratios against ``import chromadb`` timed in the same run (issue 13, target 1).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_cold.py [--data-dir DIR] [--rounds 5]

Absolute times move with the machine's load, so every figure is also printed as a ratio to
``import chromadb`` measured in the same rounds (interleaved: chromadb, then each path, round after
round). Target: each ratio ≤ 0.5. What is timed, each in a fresh interpreter:

- ``import_chromadb``: wall of ``python -c "import chromadb"`` (the reference);
- ``cli_search``: wall of ``zocrates-nb search QUERY`` (no engine running: the in-process hybrid path);
- ``cli_search_engine``: the same command while ``zocrates-nb engine`` runs for the data directory
  (only with ``--engine``; the engine is started before and stopped after the rounds);
- ``cli_search_lexical``: ``zocrates-nb search QUERY --mode lexical`` (no model, no Chroma);
- ``notebook_first_result``: in a fresh interpreter, the time from ``import zocrates_nb`` to the first
  search result after ``open_workbench()`` (the dense side loads in the background; that first result
  is lexical with a notice), and ``notebook_open``: ``open_workbench()`` alone; both are compared with
  ``import_chromadb_inprocess`` (``import chromadb`` timed the same way, inside the interpreter).

Without ``--data-dir`` the demo library is synced into a temporary directory first (not timed).
Prints one JSON object with medians, ratios and the load average before and after.
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
QUERY = "cell-type deconvolution of Visium spots"

NOTEBOOK = """
import json, sys, time
t0 = time.perf_counter()
from zocrates_nb import open_workbench
wb = open_workbench(sys.argv[1])
t1 = time.perf_counter()
r = wb.search(sys.argv[2], k=10)
t2 = time.perf_counter()
print(json.dumps({"open": t1 - t0, "first": t2 - t0, "lexical_first": bool(r.notice), "hits": len(r.hits)}))
import os; os._exit(0)      # do not wait for the background load at exit: the user does not either
"""
CHROMA_INPROCESS = "import time; t=time.perf_counter(); import chromadb; print(time.perf_counter()-t)"


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("ANONYMIZED_TELEMETRY", "False")
    return env


def wall(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=_env(), timeout=600, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed: {done.stderr[-2000:]}")
    return elapsed, done.stdout


def cli(data_dir: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "zocrates_nb", "--data-dir", data_dir, "search", QUERY, "--k", "10", *extra]


def prepare(data_dir: str | None) -> str:
    if data_dir:
        return data_dir
    target = Path(tempfile.mkdtemp(prefix="zc-bench-cold-")) / "data"
    wall([sys.executable, "-m", "zocrates_nb", "--data-dir", str(target), "sync"])
    return str(target)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", help="a synced data directory (default: the demo library, synced now)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engine", action="store_true", help="also time the CLI with a warm engine running")
    args = parser.parse_args()
    data_dir = prepare(args.data_dir)
    out: dict = {
        "data_dir": data_dir,
        "rounds": args.rounds,
        "query": QUERY,
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
    }
    times: dict[str, list[float]] = {
        name: []
        for name in (
            "import_chromadb",
            "cli_search",
            "cli_search_lexical",
            "import_chromadb_inprocess",
            "notebook_open",
            "notebook_first_result",
        )
    }
    lexical_first = 0
    wall(cli(data_dir))  # page cache warm for every path alike
    for _ in range(args.rounds):
        times["import_chromadb"].append(wall([sys.executable, "-c", "import chromadb"])[0])
        times["cli_search"].append(wall(cli(data_dir))[0])
        times["cli_search_lexical"].append(wall(cli(data_dir, "--mode", "lexical"))[0])
        times["import_chromadb_inprocess"].append(float(wall([sys.executable, "-c", CHROMA_INPROCESS])[1]))
        nb = json.loads(wall([sys.executable, "-c", NOTEBOOK, data_dir, QUERY])[1])
        times["notebook_open"].append(nb["open"])
        times["notebook_first_result"].append(nb["first"])
        lexical_first += nb["lexical_first"]
    if args.engine:
        times["cli_search_engine"] = []
        times["import_chromadb_engine_rounds"] = []
        wall([sys.executable, "-m", "zocrates_nb", "--data-dir", data_dir, "engine", "start", "--wait"])
        try:
            for _ in range(args.rounds):
                times["import_chromadb_engine_rounds"].append(wall([sys.executable, "-c", "import chromadb"])[0])
                elapsed, stdout = wall(cli(data_dir, "--json"))
                assert json.loads(stdout).get("engine"), "the search did not go through the engine"
                times["cli_search_engine"].append(elapsed)
        finally:
            wall([sys.executable, "-m", "zocrates_nb", "--data-dir", data_dir, "engine", "stop"])
    med = {name: round(statistics.median(values), 3) for name, values in times.items() if values}
    out["median_s"] = med
    out["ratio_to_import_chromadb"] = {
        "cli_search": round(med["cli_search"] / med["import_chromadb"], 2),
        "cli_search_lexical": round(med["cli_search_lexical"] / med["import_chromadb"], 2),
        "notebook_open": round(med["notebook_open"] / med["import_chromadb_inprocess"], 2),
        "notebook_first_result": round(med["notebook_first_result"] / med["import_chromadb_inprocess"], 2),
    }
    if args.engine:
        out["ratio_to_import_chromadb"]["cli_search_engine"] = round(
            med["cli_search_engine"] / med["import_chromadb_engine_rounds"], 2
        )
    out["notebook_first_result_was_lexical"] = f"{lexical_first}/{args.rounds}"
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
