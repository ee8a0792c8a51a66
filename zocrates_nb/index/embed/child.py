"""The embedding child process: read texts from stdin, embed them, write vectors to stdout, in order.

What ``EmbedWorker`` (``worker``) starts for a big sync: it runs ``MiniLMEmbedder`` exactly as the
parent would, so its vectors are bit for bit the ones the parent would compute. It ignores Ctrl-C
(the parent decides) and ends when its stdin closes, which also happens when the parent is killed.

Command line: ``python -m zocrates_nb.index.embed.child [--model-dir DIR] [--threads N]`` (started by a
sync; not meant to be run by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from zocrates_nb.errors import ZocratesError
from zocrates_nb.index.embed.model import MiniLMEmbedder
from zocrates_nb.index.embed.wire import ROWS, read_frame, write_frame

__all__ = ["serve", "main"]


def serve(model_dir: Path | None, threads: int | None, inp: IO[bytes], out: IO[bytes]) -> int:
    """Answer every part read from ``inp`` with its vectors on ``out``, in order, until ``inp`` ends."""
    try:
        embedder = MiniLMEmbedder(model_dir, threads=threads)
    except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
        write_error(out, exc)
        return 1
    write_frame(out, b"R", json.dumps({"pid": os.getpid(), "threads": embedder.threads}).encode())
    submitted: deque[Any] = deque()
    arrived = threading.Condition()
    ended: list[BaseException | None] = []

    def read() -> None:  # parts are queued as they arrive, while earlier ones are embedded and sent
        error: BaseException | None = None
        try:
            while (frame := read_frame(inp)) is not None:
                part = embedder.submit(json.loads(frame[1]))
                with arrived:
                    submitted.append(part)
                    arrived.notify()
        except BaseException as exc:  # noqa: BLE001 - sent to the parent by the loop below
            error = exc
        with arrived:
            ended.append(error)
            arrived.notify()

    threading.Thread(target=read, name="zocrates-embed-worker-reader", daemon=True).start()
    while True:
        with arrived:
            while not submitted and not ended:
                arrived.wait()
            if not submitted:
                error = ended[0]
                break
            part = submitted.popleft()
        try:
            vectors = np.ascontiguousarray(part.result(), dtype=np.float32)
        except BaseException as exc:  # noqa: BLE001 - sent to the parent, which raises it
            write_error(out, exc)
            return 1
        try:
            write_frame(out, b"V", ROWS.pack(len(vectors)) + vectors.tobytes())
        except BrokenPipeError:
            return 0  # the parent is gone: nobody is waiting for these
    if error is not None:
        write_error(out, error)
        return 1
    return 0


def write_error(out: IO[bytes], exc: BaseException) -> None:
    message = exc.message if isinstance(exc, ZocratesError) else f"{type(exc).__name__}: {exc}"
    said = {"error": message, "type": type(exc).__name__, "hint": getattr(exc, "hint", None)}
    try:
        write_frame(out, b"E", json.dumps(said).encode())
    except (BrokenPipeError, OSError):
        pass  # the parent is gone: nobody to tell


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zocrates_nb.index.embed.child",
        description="Embed texts read from stdin (started by a sync; not meant to be run by hand).",
    )
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent decides
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print goes to stderr, never into the replies
    return serve(args.model_dir, args.threads, sys.stdin.buffer, out)


if __name__ == "__main__":
    raise SystemExit(main())
