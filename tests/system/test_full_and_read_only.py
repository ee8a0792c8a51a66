"""A data directory on a read-only mount or a full disk (issue 26): no traceback, true hints, nothing lost.

Real conditions, not mocks: a tmpfs mounted for the test, remounted read-only or filled to the byte.
Needs root and permission to mount (CI has both); elsewhere the tests skip and say why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.system.faults import cli

QUERY = "Harmony batch integration"


def _mount_tmpfs(where: Path, size: str) -> None:
    where.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({result.stderr.decode().strip() or 'not root'}): CI runs these")


@pytest.fixture
def mounted(tmp_path, demo_template):
    """A synced demo data directory on its own tmpfs; unmounted afterwards whatever happened."""
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    mount = tmp_path / "mnt"
    _mount_tmpfs(mount, "150m")
    try:
        shutil.copytree(demo_template, mount / "data")
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _results(home: Path) -> dict:
    code, out, err = cli(home, "search", QUERY, "--mode", "lexical", "--json")
    assert code == 0, err
    found = json.loads(out)
    found.pop("latency_ms")
    return found


def _no_destructive_advice(text: str) -> None:
    lowered = text.lower()
    assert "delete" not in lowered and "notes are lost" not in lowered, text
    assert "doctor --repair" not in text, text  # nothing is damaged: repairing cannot help


def test_a_read_only_data_directory_is_reported_as_read_only_never_as_damage(mounted, demo_template, tmp_path):
    home = mounted / "data"
    before = _results(Path(shutil.copytree(demo_template, tmp_path / "clean")))  # a clean run's results
    subprocess.run(["mount", "-o", "remount,ro", str(mounted)], check=True)
    code, out, err = cli(home, "search", QUERY, "--mode", "lexical")
    assert code == 1 and "read-only" in err and "Nothing was changed or lost" in err, err
    _no_destructive_advice(out + err)
    code, out, err = cli(home, "status")
    assert code == 0 and "33 notes" in out and "is read-only" in out, out  # the counts are still read
    _no_destructive_advice(out)
    code, out, err = cli(home, "doctor")
    assert code == 1 and "read-only" in out and "not checked: the directory is read-only" in out, out
    _no_destructive_advice(out + err)
    subprocess.run(["mount", "-o", "remount,rw", str(mounted)], check=True)
    assert _results(home) == before  # nothing lost, same results


def test_a_full_disk_is_reported_with_the_free_space_and_reads_come_back_unchanged(mounted):
    home = mounted / "data"
    before = _results(home)
    filler = mounted / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M"], capture_output=True)  # until ENOSPC
    assert shutil.disk_usage(mounted).free < 1 << 20
    code, out, err = cli(home, "search", QUERY, "--mode", "lexical")
    assert code == 1 and "the disk is full" in err and "free" in err and "Free some space" in err, err
    _no_destructive_advice(out + err)
    code, out, _ = cli(home, "status")
    assert code == 0 and "33 notes" in out and "free" in out, out
    _no_destructive_advice(out)
    code, out, err = cli(home, "doctor")
    assert code == 1 and "PROBLEM space" in out and "not checked: the disk is full" in out, out
    _no_destructive_advice(out + err)
    filler.unlink()
    assert _results(home) == before
    code, out, _ = cli(home, "doctor")
    assert code == 0 and "ok      space" in out, out  # ~147 MB free again
