"""Helpers for the fault-injection and stateful suites (tests/system/test_faults.py, tests/system/test_stateful.py).

``cli`` runs a real ``zocrates-nb`` command in this process and reports a traceback
as a failure; ``follow_recovery`` does what the product tells a user (status health,
errors and their hints) until every command succeeds; ``state`` is what must equal a
clean run: the notes the corpus serves and the results of a few searches.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
import sqlite3
import sys
import traceback
from pathlib import Path

from zocrates_nb.cli import main


def assert_same_ranking(again: list[str], before: list[str], label: str = "") -> None:
    """A dense or hybrid list after every chunk was embedded again into a new store: the same first
    result and all but at most two of the same members (near-equal cosines may swap places at float
    precision; a lexical list is compared exactly instead)."""
    assert again[0] == before[0] and len(set(again) & set(before)) >= len(before) - 2, (label, again, before)


QUERIES = ("cell type deconvolution of Visium spots", "batch integration of single-cell data", "platypus burrow ledger")
#: A query nothing in the library is about: its lexical result must be empty, but its dense order is
#: noise (every cosine near-equal, so a store that took the notes in another order may swap two of
#: them at float precision), so only its lexical side is compared.
UNRELATED = QUERIES[2]
HINT_COMMAND = re.compile(r"`zocrates-nb ([^`]*)`")
TEST_KEY = "sk-fault-test-0123456789"


def seed_from_env(name: str = "ZOCRATES_FAULT_SEED") -> int:
    """The seed to use (printed by the caller so a failure can be replayed with the env var)."""
    value = os.environ.get(name)
    return int(value) if value else random.SystemRandom().randrange(1, 2**31)


def count_from_env(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


class Traceback(AssertionError):
    """A command let an exception escape: the user would have seen a traceback."""


def cli(home: Path, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--data-dir", str(home), *argv])
    except SystemExit as exc:  # argparse usage errors
        code = int(exc.code or 0)
    except BaseException as exc:  # noqa: BLE001 - exactly what the suite hunts for
        raise Traceback(
            f"`zocrates-nb {' '.join(argv)}` raised:\n" + "".join(traceback.format_exception(exc))
        ) from None
    finally:
        sys.stdin = old_stdin
    if "Traceback (most recent call last)" in err.getvalue():
        raise Traceback(f"`zocrates-nb {' '.join(argv)}` printed a traceback:\n{err.getvalue()}")
    return code, out.getvalue(), err.getvalue()


def _problems(home: Path) -> list[tuple[str, str]]:
    """(message, hint) for everything the product itself reports as wrong right now."""
    found = []
    _, out, _ = cli(home, "status", "--json")
    status = json.loads(out)
    for name in ("config_error", "secrets_error"):
        if name in status:
            found.append((status[name]["message"], status[name]["hint"] or ""))
    if not status["health"]["ok"]:
        found.append((status["health"]["summary"], status["health"]["summary"]))
    for argv in (("sync",), ("search", QUERIES[0])):
        code, _, err = cli(home, *argv)
        if code != 0:
            found.append((err, err))
    return found


def _act(home: Path, message: str, hint: str, log: list[str]) -> None:
    """Do what the hint says: delete the named file when told to, run the named command."""
    acted = False
    if "Delete" in hint:
        for raw in re.findall(r"(/\S+?)[:.,]?(?=\s|$)", message):
            path = Path(raw)
            if path.exists() and home in path.parents:
                path.unlink()
                log.append(f"deleted {path.name}")
                acted = True
    for command in HINT_COMMAND.findall(hint):
        argv = command.split("|")[0].replace("[", "").replace("]", "").split()
        stdin = TEST_KEY + "\n" if "--api-key-stdin" in argv else None
        code, _, _ = cli(home, *argv, stdin=stdin)
        log.append(f"ran `zocrates-nb {command}` → {code}")
        acted = True
        break
    if not acted:
        raise AssertionError(f"no way out: the product said {message!r} with hint {hint!r}")


def follow_recovery(home: Path, max_steps: int = 6) -> list[str]:
    """Follow the product's own advice until status is healthy and sync and search succeed."""
    log: list[str] = []
    for _ in range(max_steps):
        problems = _problems(home)
        if not problems:
            return log
        _act(home, *problems[0], log)
    raise AssertionError(f"still failing after {max_steps} recovery steps: {log} {_problems(home)}")


def state(home: Path) -> dict:
    """What a clean run must equal: note keys → served Markdown, and each query's ranked keys."""
    from zocrates_nb.workbench.core import Workbench

    wb = Workbench(home, auto_sync=False)
    try:
        library_notes = sorted(n.key for n in wb.source.snapshot().notes)
        notes = {key: wb.read_document(key) for key in wb.corpus.keys("note")}
        searches = {
            f"{mode}:{q}": [h.key for h in wb.index.search(q, k=8, mode=mode)]
            for q in QUERIES
            for mode in ("lexical", "dense", "hybrid")
            if q != UNRELATED or mode == "lexical"
        }
        vectors = wb.index.vectors.count()
        chunks = wb.index.stats()["chunks"]
    finally:
        wb.close()
    return {
        "library_notes": library_notes,
        "notes": notes,
        "searches": searches,
        "vectors_equal_chunks": vectors == chunks,
    }


def acknowledged(stdout: str, query: str) -> dict[str, str]:
    """key → the query that must find it, for every key a worker's ``done <i> <key>...`` lines acknowledged.

    Only whole lines count: a line the kill cut short was never an acknowledgement.
    """
    from zocrates_nb.records import is_valid_key

    acked = {}
    for line in stdout.split("\n")[:-1]:  # the text after the last newline is not a whole line
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "done" and parts[1].isdigit():
            acked.update({key: query.format(i=parts[1]) for key in parts[2:] if is_valid_key(key)})
    return acked


def lost_acknowledged(home: Path, acked: dict[str, str]) -> dict[str, str]:
    """key → what is wrong, for each acknowledged key the corpus does not serve or search does not find."""
    from zocrates_nb.workbench.core import Workbench

    lost = {}
    wb = Workbench(home, auto_sync=False)
    try:
        held = set(wb.corpus.keys("note"))
        for key, query in sorted(acked.items()):
            if key not in held:
                lost[key] = "not in the corpus"
            elif query not in wb.read_document(key).lower():
                lost[key] = f"served without {query!r}"
            elif key not in [h.key for h in wb.index.search(query, k=10, mode="lexical")]:
                lost[key] = f"not found by {query!r}"
    finally:
        wb.close()
    return lost


def copy_library(src_home: Path, dst: Path) -> None:
    """A consistent copy of a data directory's demo library (WAL included) via SQLite's backup."""
    source = sqlite3.connect(str(src_home / "demo_library.sqlite"))
    target = sqlite3.connect(str(dst))
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def clean_run(template: Path, library_from: Path, where: Path) -> dict:
    """The state a clean data directory reaches from the same library: template copy + library + sync."""
    shutil.copytree(template, where)
    for suffix in ("", "-wal", "-shm"):
        (where / f"demo_library.sqlite{suffix}").unlink(missing_ok=True)
    copy_library(library_from, where / "demo_library.sqlite")
    code, _, err = cli(where, "sync")
    assert code == 0, err
    return state(where)


def damage(path: Path, how: str, rng: random.Random) -> None:
    """truncate | header | middle | delete, applied to one file."""
    if how == "delete":
        path.unlink()
        return
    data = bytearray(path.read_bytes())
    if how == "truncate":
        data = data[: rng.randrange(0, max(1, len(data) // 2))]
    elif how == "header":
        size = min(100, len(data)) or 1
        data[0:size] = rng.randbytes(size)
    elif how == "middle":
        page = 4096 if len(data) > 3 * 4096 else max(1, len(data) // 4)
        start = (len(data) // 2 // page) * page
        data[start : start + page] = rng.randbytes(page)
    path.write_bytes(bytes(data))
