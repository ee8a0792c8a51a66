"""Deterministic unit vectors that stand in for embeddings in vector-store tests.

The same chunk id always gives the same vector (seeded by its CRC-32), in every process, so a test can
query with ``vec(chunk_id)`` and expect that chunk as the nearest neighbour without loading the model.
"""

from __future__ import annotations

import zlib

import numpy as np


def vec(chunk_id: str, dim: int = 8) -> np.ndarray:
    """The L2-normalised float32 vector of length ``dim`` that stands for ``chunk_id``."""
    v = np.random.default_rng(zlib.crc32(chunk_id.encode())).normal(size=dim).astype(np.float32)
    return v / np.linalg.norm(v)
