"""The embedding worker's wire: length-prefixed frames on the child's stdin and stdout.

A frame is a kind byte and a payload length (``HEADER``), then the payload: ``T`` texts as JSON,
``V`` vectors as raw float32 after their row count (``ROWS``), ``R`` ready, ``E`` an error with its
hint. Both sides (``worker``, the parent's client, and ``child``, the process that embeds) speak it
through these functions, so neither imports the other.
"""

from __future__ import annotations

import struct
from typing import IO

HEADER = struct.Struct("<cI")  # kind, payload length
ROWS = struct.Struct("<I")


def write_frame(out: IO[bytes], kind: bytes, payload: bytes) -> None:
    out.write(HEADER.pack(kind, len(payload)) + payload)
    out.flush()


def read_exact(inp: IO[bytes], size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = inp.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(inp: IO[bytes]) -> tuple[bytes, bytes] | None:
    """The next frame, or None at the end of the stream (a frame cut short is an end too)."""
    header = read_exact(inp, HEADER.size)
    if header is None:
        return None
    kind, size = HEADER.unpack(header)
    payload = read_exact(inp, size) if size else b""
    return None if payload is None else (kind, payload)
