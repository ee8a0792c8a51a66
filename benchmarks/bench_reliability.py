"""Costs of the reliability checks: the consistency pass in every sync, ``sync --verify``,
``PRAGMA quick_check`` (on open and in ``status``) and re-creating a damaged meta db.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_reliability.py [--dir DATA_DIR] [--runs N]

Without ``--dir`` the demo library is synced into a temporary directory first (about 10 s).
Prints medians in milliseconds; see docs/reliability.md.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from zocrates_nb.corpus.repair import meta_db_problem
from zocrates_nb.workbench.core import Workbench


def _median_ms(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="a synced data directory (default: demo in a temp dir)")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="zocrates-bench-rel-")) / "data"
    wb = Workbench(root, auto_sync=False)
    wb.sync(progress=False)
    documents = wb.corpus.meta.count()
    plain = _median_ms(lambda: wb.sync(progress=False), args.runs)
    verify = _median_ms(lambda: wb.sync(progress=False, verify=True), max(3, args.runs // 3))
    check = _median_ms(lambda: meta_db_problem(wb.paths.meta_db), args.runs)
    size_mb = wb.paths.meta_db.stat().st_size / 1e6
    wb.close()
    print(f"documents                     : {documents}")
    print(f"no-op sync (consistency pass) : {plain:.1f} ms median of {args.runs}")
    print(f"sync --verify                 : {verify:.1f} ms median")
    print(f"PRAGMA quick_check            : {check:.2f} ms for a {size_mb:.2f} MB meta db")
    db = root / "conversion_meta.db"
    data = bytearray(db.read_bytes())
    data[:100] = b"\0" * 100
    db.write_bytes(bytes(data))
    started = time.perf_counter()
    Workbench(root, auto_sync=False).close()  # detects, moves aside, re-creates from the bundles
    print(f"re-create a damaged meta db   : {time.perf_counter() - started:.1f} s (chunks re-embedded)")


if __name__ == "__main__":
    main()
