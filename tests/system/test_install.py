"""What `make install` promises about the environment the suite runs in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    not (Path(sys.prefix) / ".zocrates-installed").exists(),
    reason="not running inside the venv that `make install` built",
)
def test_the_venvs_jupyter_server_enables_the_zocrates_extension():
    """`jupyter lab` from the venv serves /zocrates/*: the extension is enabled for sys.prefix."""
    proc = subprocess.run(
        [str(Path(sys.prefix) / "bin" / "jupyter-server"), "extension", "list"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
        cwd="/",
    )
    listing = proc.stdout + proc.stderr
    assert "zocrates_nb.server" in listing and "enabled" in listing.split("zocrates_nb.server", 1)[1][:40]
