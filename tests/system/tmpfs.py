"""A tmpfs of its own for the full-disk and read-only suites (issue 26): mount, fill, remount, unmount.

Real conditions, not mocks: the kernel says ENOSPC or EROFS exactly as it would on a user's full
disk or read-only share. Mounting needs root (CI has it); elsewhere the suites skip and say why.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.system.faults import HINT_COMMAND, cli


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """``where`` as a fresh tmpfs of ``size`` (``"40m"``), unmounted afterwards whatever happened."""
    if shutil.which("mount") is None or shutil.which("fallocate") is None:
        pytest.skip("no mount or fallocate command")
    where.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.decode().strip() or 'not root'}): CI runs these")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(mount: Path, leave_kib: int) -> Path:
    """Fill ``mount`` so that about ``leave_kib`` KiB stay free; returns the filler (unlink it to free)."""
    filler = mount / "filler"
    filler.unlink(missing_ok=True)
    free_kib = shutil.disk_usage(mount).free // 1024
    if free_kib > leave_kib:
        subprocess.run(["fallocate", "-l", f"{free_kib - leave_kib}K", str(filler)], check=True)
    return filler


def remount(mount: Path, mode: str) -> None:
    """``"ro"`` or ``"rw"``."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(mount)], check=True)


def no_destructive_advice(text: str) -> None:
    """Nothing here is damage: no hint may say to delete anything or to repair."""
    lowered = text.lower()
    assert "delete" not in lowered and "notes are lost" not in lowered, text
    assert "doctor --repair" not in text, text
    assert "Traceback" not in text, text


#: what a user types for a hint's placeholders
_PLACEHOLDERS = {"URL": "http://127.0.0.1:9/v1", "NAME": "local-model", "'...'": "Single-cell immunology."}


def walk_hints(home: Path, texts: list[str], *, allowed: tuple[int, ...] = (0,)) -> list[str]:
    """Run every ``zocrates-nb …`` command the product hinted in ``texts``, in the state that produced
    them: each must run (exit code in ``allowed``, no traceback) and must not answer with advice that
    sends the user in a circle. Returns what was run, for the figures in docs/reliability.md."""
    ran = []
    for command in sorted({c for text in texts for c in HINT_COMMAND.findall(text)}):
        argv = [
            _PLACEHOLDERS.get(word, word) for word in command.split("|")[0].replace("[", "").replace("]", "").split()
        ]
        code, out, err = cli(home, *argv)
        assert code in allowed, f"the hinted `zocrates-nb {command}` failed in this state: {err or out}"
        no_destructive_advice(out + err)
        ran.append(command)
    return ran
