"""An online turn's "already in the library?" lookup: sync's table against every manifest (issue 13, target 6).

    PYTHONPATH=. .venv/bin/python benchmarks/bench_held_papers.py [--data-dir DIR] [--rounds 5]

An online turn drops the candidates the library already holds (same DOI or normalised title).
``LibraryIdentity.from_tools`` (agents/online.py) reads them from ``held_papers`` in
``conversion_meta.db``, which sync keeps (corpus/held_papers.py). Before that table, and still for a
data directory not synced since, it read every paper's manifest. Both paths are timed here through
that one function, interleaved round after round, on the same data directory: ``table`` with the
workbench's own tools, ``manifests`` with a view of the same corpus that has no table to read.
The reference is the manifest path; the ratio is table / manifests.

``--data-dir`` takes a synced data directory (e.g. the 5,183-paper one that
``bench_first_sync.py --keep DIR`` leaves in ``DIR/data``); without it the demo library is synced
into a temporary directory first (not timed). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", help="a synced data directory (default: the demo library, synced now)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from bench_cold import prepare  # the demo library synced into a temporary folder, as there

    data_dir = prepare(args.data_dir)
    sys.path.insert(0, str(REPO))
    from zocrates_nb import open_workbench
    from zocrates_nb.agents.online import LibraryIdentity

    load_before = os.getloadavg()
    wb = open_workbench(data_dir)
    # the same corpus as a data directory without the table shows it: keys and manifests, no paths
    manifests_only = SimpleNamespace(corpus=SimpleNamespace(keys=wb.corpus.keys, manifest=wb.corpus.manifest))
    tools, papers = wb.tools, len(wb.corpus.keys(kind="paper"))
    times: dict[str, list[float]] = {"table": [], "manifests": []}
    held: dict[str, tuple[int, int]] = {}
    for _ in range(args.rounds):
        for name, source in (("table", tools), ("manifests", manifests_only)):
            started = time.perf_counter()
            identity = LibraryIdentity.from_tools(source)
            times[name].append(time.perf_counter() - started)
            held[name] = (len(identity.dois), len(identity.titles))
    table, manifests = statistics.median(times["table"]), statistics.median(times["manifests"])
    print(
        json.dumps(
            {
                "data_dir": data_dir,
                "papers": papers,
                "rounds": args.rounds,
                "load_average_before": [round(x, 2) for x in load_before],
                "median_ms": {"table": round(table * 1000, 2), "manifests": round(manifests * 1000, 2)},
                "ratio_table_to_manifests": round(table / manifests, 3),
                "same_identity": held["table"] == held["manifests"],
                "dois_titles": held["table"],
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
            },
            indent=1,
        ),
        flush=True,
    )
    os._exit(0)  # do not wait for the workbench's background model load


if __name__ == "__main__":
    main()
