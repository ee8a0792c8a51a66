"""Library source timings: Zotero desktop snapshot and DemoLibrary lookups.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_library.py [--zotero-sqlite PATH]``
(default PATH: ../shared/data/zotero/zotero9-profile.sqlite, a real Zotero 9 database).
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary
from zocrates_nb.library.local import DemoLibrary

DEFAULT_DB = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "zotero" / "zotero9-profile.sqlite"


def _us(samples: list[float]) -> str:
    samples = sorted(samples)
    p95 = samples[int(len(samples) * 0.95) - 1]
    return f"p50 {statistics.median(samples) * 1e6:.1f} µs, p95 {p95 * 1e6:.1f} µs"


def bench_desktop(path: Path, repeats: int = 5) -> None:
    cold = []
    for _ in range(repeats):
        lib = ZoteroDesktopLibrary(sqlite_path=path)
        t = time.perf_counter()
        snap = lib.snapshot()
        cold.append(time.perf_counter() - t)
    t = time.perf_counter()
    lib.snapshot()
    warm = time.perf_counter() - t
    keys = [n.key for n in snap.notes] or ["NONE"]
    lookups = []
    for i in range(2000):
        t = time.perf_counter()
        lib.get_note(keys[i % len(keys)])
        lookups.append(time.perf_counter() - t)
    size = path.stat().st_size / 2**20
    print(
        f"zotero.sqlite snapshot ({path.name}, {size:.1f} MiB): copy+read median "
        f"{statistics.median(cold) * 1e3:.1f} ms (min {min(cold) * 1e3:.1f} ms); unchanged re-check "
        f"{warm * 1e6:.0f} µs"
    )
    print(
        f"  notes {len(snap.notes)}, papers {len(snap.papers)}, collections {len(snap.collections)}, "
        f"failures {len(snap.failures)}; get_note {_us(lookups)}"
    )


def bench_demo() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        lib = DemoLibrary(Path(tmp) / "demo.sqlite")
        seed = time.perf_counter() - t
        t = time.perf_counter()
        again = DemoLibrary(Path(tmp) / "demo.sqlite")
        reopen = time.perf_counter() - t
        again.close()
        snap = lib.snapshot()
        keys = [n.key for n in snap.notes]
        for k in keys:  # warm
            lib.get_note(k)
        lookups, papers = [], []
        for i in range(5000):
            t = time.perf_counter()
            lib.get_note(keys[i % len(keys)])
            lookups.append(time.perf_counter() - t)
        pkeys = [p.key for p in snap.papers]
        for i in range(2000):
            t = time.perf_counter()
            lib.get_paper(pkeys[i % len(pkeys)])
            papers.append(time.perf_counter() - t)
        t = time.perf_counter()
        for _ in range(20):
            lib.snapshot()
        snap_ms = (time.perf_counter() - t) / 20 * 1e3
        t = time.perf_counter()
        for i in range(50):
            lib.update_note(keys[0], f"<p>edit {i}</p>")
        update_ms = (time.perf_counter() - t) / 50 * 1e3
        lib.close()
    print(
        f"DemoLibrary ({len(snap.papers)} papers, {len(snap.notes)} notes): first open+seed {seed * 1e3:.1f} ms, "
        f"re-open {reopen * 1e3:.1f} ms, snapshot {snap_ms:.2f} ms, update_note {update_ms:.2f} ms"
    )
    print(f"  get_note {_us(lookups)}; get_paper {_us(papers)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zotero-sqlite", type=Path, default=DEFAULT_DB)
    args = parser.parse_args()
    if args.zotero_sqlite.exists():
        bench_desktop(args.zotero_sqlite)
    else:
        print(f"(no {args.zotero_sqlite}; desktop snapshot skipped)")
    bench_demo()


if __name__ == "__main__":
    main()
