"""Config store costs: cached read, reload after another process's save, atomic locked write.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_config.py [--dir DIR] [--writes N]

Prints median microseconds/milliseconds. The write includes the file lock, the
temp file, two fsyncs and os.replace, so it measures the disk as much as the code.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from zocrates_nb.settings.config import ConfigStore
from zocrates_nb.settings.profile import SAMPLE_RESEARCH_PROFILE, profile_token_report


def _median_us(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t) / 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="directory for the config (default: a temp dir)")
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    directory = args.dir or Path(tempfile.mkdtemp(prefix="bench-config-"))
    store = ConfigStore(directory / "zocrates_config.json")
    store.update(
        {
            "user_research_profile": SAMPLE_RESEARCH_PROFILE[:900],
            "llm": {"base_url": "https://api.example.org/v1", "model": "m", "models": {"coordinator": "big"}},
        }
    )
    old = time.time() - 60
    os.utime(store.path, (old, old))  # outside the racy window: the cache may be trusted

    store.read()
    cached = _median_us(store.read, 20_000)

    def reload() -> None:
        store._cached = None  # what a changed (inode, size, mtime_ns) key does
        store.read()

    reloaded = _median_us(reload, 5_000)
    write_ms = (
        _median_us(lambda: store.update({"user_research_profile": SAMPLE_RESEARCH_PROFILE[:900]}), args.writes) / 1000
    )
    profile_report_us = _median_us(lambda: profile_token_report(SAMPLE_RESEARCH_PROFILE), 2_000)
    print(f"config dir            : {directory}")
    print(f"cached read (median)  : {cached:8.1f} µs   (stat + key check + deep copy)")
    print(f"reload (median)       : {reloaded:8.1f} µs   (open + parse + validate + copy)")
    print(f"atomic write (median) : {write_ms:8.2f} ms   (lock + temp + fsync + replace + dir fsync), n={args.writes}")
    print(f"profile token report  : {profile_report_us:8.1f} µs   (format + o200k count of the sample)")


if __name__ == "__main__":
    main()
