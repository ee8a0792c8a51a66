"""Replace a small file atomically: a reader sees the old bytes or the new ones, never half.

Used for the config and the secrets file. The temp file comes from ``mkstemp``, so it is
owner-only (0600) from its first byte whatever the umask, which is what a file holding an
API key needs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes) -> os.stat_result:
    """Write ``data`` to ``.<name>.*.tmp`` beside ``path``, fsync, ``os.replace``, fsync the directory.

    The temp file is removed when anything fails; one left by a killed process keeps the
    ``.<name>.*.tmp`` name so its owner can sweep it under its lock. Returns the new file's stat.
    """
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return os.stat(path)
