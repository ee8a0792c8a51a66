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

from typing import Any

from zocrates_nb.health.checks import (
    check_config,
    check_file_modes,
    check_leftovers,
    check_locks,
    check_meta_db,
    check_model,
    check_space,
    finding,
    repair_store_findings,
)
from zocrates_nb.paths import DataPaths
from zocrates_nb.storage.space import why_unwritable
from zocrates_nb.workbench.core import Workbench


def _vectorsfinding(found: Any) -> dict[str, Any]:
    if found.vector_problem:
        return finding(
            "vectors",
            False,
            f"vector store damaged: {found.vector_problem}",
            "re-create it and re-embed every chunk from the index rows (as `zocrates-nb index rebuild` does)",
        )
    return finding(
        "vectors",
        not found.vectors_differ,
        f"{found.vectors} vectors for {found.chunks} chunks",
        "embed missing, delete extra",
    )


def _repair_vectors(wb: Any) -> str:
    """A damaged vector store is derived data: reset it (the mechanism ``index rebuild`` uses on a
    damaged store) and re-embed every chunk of the committed FTS rows, before any sync needs it."""
    wb.index.vector_store().reset()
    result = wb.index.reconcile()
    return f"vector store re-created: {result['embedded']} chunk(s) embedded"


def _corpus_findings(wb: Any, repair: bool) -> list[dict]:
    """Bundle hashes and index consistency (FTS, vectors, keys), repaired by a verifying sync.

    Reading only (a read-only or full directory): bundles and index are checked read-only, the
    vector store (which writes when it opens) is not, and nothing is repaired."""
    from zocrates_nb.corpus.repair import check_consistency

    reading_only = wb.paths.unwritable
    found = check_consistency(wb.corpus, wb.index, verify=True, vectors=not reading_only)
    findings = [
        finding(
            "bundles",
            not found.damaged_bundles,
            f"{len(found.damaged_bundles)} damaged: "
            + ", ".join(f"{k} ({why})" for k, why in sorted(found.damaged_bundles.items())[:5])
            if found.damaged_bundles
            else f"{wb.corpus.meta.count()} bundles verify (content_sha256)",
            "re-make them from the library" if found.damaged_bundles else None,
        ),
        finding(
            "index",
            not (found.missing_in_index or found.extra_in_index or found.extra_bundles),
            f"{len(found.missing_in_index)} document(s) missing from the index, "
            f"{len(found.extra_in_index)} extra, {len(found.extra_bundles)} stray bundle(s)",
            "re-stage missing rows, drop extras",
        ),
        _vectorsfinding(found)
        if not reading_only
        else finding("vectors", True, f"not checked: {why_unwritable(wb.paths.root, reading_only)}"),
    ]
    if reading_only:
        return findings  # repairs write: the space finding says what to free or allow first
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
        check_space(paths),
    ]
    repair_store_findings(paths, findings, repair)
    meta_damaged = not findings[0]["ok"]
    if meta_damaged and not repair:
        findings.append(
            finding(
                "corpus",
                False,
                "bundles, index and vectors not checked: the meta db is damaged",
                "repair the meta db first",
            )
        )
    elif findings[1]["ok"] and paths.meta_db.exists():
        wb = Workbench(paths.root, auto_sync=False)  # opening heals a damaged meta db (corpus/repair.py)
        try:
            if meta_damaged and not wb.paths.unwritable:  # reading only: the workbench healed nothing
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
        elif not f["ok"] and f.get("fix"):
            lines.append(f"{'':18}→ {f['fix']}")
        elif not f["ok"] and f.get("repair"):
            lines.append(f"{'':18}→ --repair would: {f['repair']}")
    repairable = [f for f in result["findings"] if not f["ok"] and not f.get("done") and not f.get("fix")]
    if repairable and not result["repaired"]:
        lines.append("Run `zocrates-nb doctor --repair` to fix these.")
    return "\n".join(lines)
