"""The space finding: under 100 MB free, or less than the index takes, is flagged with what to free."""

from __future__ import annotations

import os
import shutil

from zocrates_nb.health.checks import check_space
from zocrates_nb.paths import DataPaths


def test_space_is_flagged_when_a_rebuild_would_not_fit(tmp_path):
    paths = DataPaths(tmp_path / "data").ensure()
    assert check_space(paths)["ok"] or shutil.disk_usage(tmp_path).free < 100 * 1024 * 1024
    # a (sparse) index larger than the free space: a rebuild writes about as much again
    with open(paths.meta_db, "wb") as index:
        index.truncate(shutil.disk_usage(tmp_path).free + (1 << 30))
    found = check_space(paths)
    assert not found["ok"] and ("less than the index's" in found["detail"] or "under 100 MB" in found["detail"])
    assert "free some space" in found["fix"] and "delete" not in found["fix"]
    os.unlink(paths.meta_db)
