"""The embedder in a child process, for big jobs: the sync's own Python work no longer stalls the model.

Why: in one process, the embedding threads need the GIL for a moment before and after every text,
and a big sync keeps it busy: the conversion and FTS writes on the main thread, and chromadb's
upserts, whose Rust bindings hold it for the whole call (a thread sleeping 1 ms beside upserts of
128 vectors woke up to 200 ms late). Measured on 5,183 papers, 2 cores, runs interleaved: 284–289 s
and 556–567 s of CPU with this child process, 320–333 s and 612–634 s in one process
(``benchmarks/bench_first_sync.py --in-process-too``). A child process has its own GIL, so the sync's
work only shares the cores with it.

The child runs ``MiniLMEmbedder`` (index/embed/model.py) exactly as the parent would, each text alone on
one single-threaded session per core, so its vectors are bit for bit the ones the parent would
compute. The wire is the child's stdin and stdout: length-prefixed frames (``T`` texts as JSON, ``V``
vectors as raw float32, ``R`` ready, ``E`` an error with its hint). Parts are answered in the order
they were sent; up to ``ahead`` parts are in flight (index/embed/stream.py), so the child is never
idle while the parent stores. The child ignores Ctrl-C (the parent decides) and ends when its stdin
closes, which also happens when the parent is killed.

The child is ``index/embed/child.py`` (what the parent starts, by way of ``-P -c``); the frames are in
``index/embed/wire.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from zocrates_nb.errors import IndexCorruptError, ZocratesError
from zocrates_nb.index.embed.build import MODEL_DIM, MODEL_ID
from zocrates_nb.index.embed.stream import stream
from zocrates_nb.index.embed.wire import ROWS, read_frame, write_frame

__all__ = ["EmbedWorker", "WorkerFailed"]

_PACKAGE_ROOT = Path(__file__).resolve().parents[3]  # the folder that holds zocrates_nb/
#: What the child runs: ``-P`` keeps the working directory off its path (a folder named like one of
#: our imports there must not shadow it), and this package's folder is appended in case the parent
#: imported it from a path the child would not search; an installed one is found first either way.
_CHILD = (
    "import sys; sys.path.append(sys.argv.pop(1)); "
    "from zocrates_nb.index.embed.child import main; raise SystemExit(main())"
)
_RETRY_HINT = (
    "The sync's final pass embeds what is left in this process; if this keeps happening, "
    "run `zocrates-nb doctor` and check the machine's free memory."
)


class WorkerFailed(ZocratesError):
    """The embedding process failed or ended; what it said is in the message."""


# --------------------------------------------------------------------------- the parent's side


class _Reply:
    """Part ``seq`` of what the parent sent: ``result`` reads replies until its own has arrived."""

    def __init__(self, worker: EmbedWorker, seq: int) -> None:
        self.worker, self.seq = worker, seq

    def result(self) -> np.ndarray:
        return self.worker._reply(self.seq)

    def cancel(self) -> None:
        self.worker._drop(self.seq)


class EmbedWorker:
    """``MiniLMEmbedder``'s int8 embedding in a child process: ``embed``, ``embed_stream``, ``submit``.

    Starting it returns at once; the child loads the model meanwhile (about a second), and the
    first reply waits for that. ``close`` ends the child (so does the parent's exit).
    """

    model_id = MODEL_ID
    dim = MODEL_DIM
    pads = False  # each text alone: nothing to sort for (index/vectors/fill.py)

    def __init__(self, model_dir: Path | None = None, *, threads: int | None = None) -> None:
        argv = [sys.executable, "-P", "-c", _CHILD, str(_PACKAGE_ROOT)]
        argv += ["--model-dir", str(model_dir)] if model_dir is not None else []
        argv += ["--threads", str(threads)] if threads else []
        try:
            self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as exc:
            raise WorkerFailed(f"The embedding process could not be started: {exc}.", hint=_RETRY_HINT) from exc
        assert self._proc.stdin is not None and self._proc.stdout is not None and self._proc.stderr is not None
        self._stdin, self._stdout = self._proc.stdin, self._proc.stdout
        self._stderr_tail: deque[str] = deque(maxlen=20)
        self._drainer = threading.Thread(
            target=self._drain, args=(self._proc.stderr,), name="zocrates-embed-worker-stderr", daemon=True
        )
        self._drainer.start()
        self._send_lock, self._read_lock = threading.Lock(), threading.Lock()
        self._sent = self._received = 0
        self._kept: dict[int, np.ndarray] = {}
        self._dropped: set[int] = set()
        self._failure: WorkerFailed | IndexCorruptError | None = None
        self.pid = self._proc.pid

    def __repr__(self) -> str:
        state = "running" if self._proc.poll() is None else f"ended ({self._proc.returncode})"
        return f"EmbedWorker(pid={self.pid}, {state}, sent={self._sent}, received={self._received})"

    def __enter__(self) -> EmbedWorker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (order kept), as ``MiniLMEmbedder.embed`` does."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; wrap a single text in a list")
        return self.submit(texts).result()

    def embed_stream(self, parts: Iterable[Sequence[str]], *, ahead: int = 3) -> Iterator[np.ndarray]:
        """Each part's vectors in order, with ``ahead`` parts in flight (the child queues them)."""
        return stream(parts, self.submit, ahead=ahead)

    def submit(self, texts: Sequence[str]) -> _Reply:
        """Send one part; the returned handle's ``result`` waits for its vectors."""
        payload = json.dumps([t if isinstance(t, str) else str(t) for t in texts]).encode("ascii")
        with self._send_lock:
            if self._failure is not None:
                raise self._failure
            try:
                write_frame(self._stdin, b"T", payload)
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise self._failed(f"the pipe to it closed ({type(exc).__name__})") from exc
            seq, self._sent = self._sent, self._sent + 1
        return _Reply(self, seq)

    def close(self, timeout: float = 10.0) -> None:
        """End the child. Once every answer is read it exits at the end of its stdin; with answers still
        owed (a stopped sync) it is killed at once: it holds nothing worth finishing."""
        with self._send_lock:
            try:
                self._stdin.close()
            except OSError:
                pass  # the child is gone already: nothing to end
        if self._sent != self._received and self._proc.poll() is None:
            self._proc.kill()
        try:
            self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._stdout.close()
        self._drainer.join(1.0)

    # ------------------------------------------------------------------ replies, in the order sent
    def _reply(self, seq: int) -> np.ndarray:
        with self._read_lock:
            while seq not in self._kept:
                if self._failure is not None:
                    raise self._failure
                self._receive_one()
            return self._kept.pop(seq)

    def _drop(self, seq: int) -> None:
        with self._read_lock:
            if self._kept.pop(seq, None) is None:
                self._dropped.add(seq)  # its reply is read and thrown away when it comes

    def _receive_one(self) -> None:
        frame = read_frame(self._stdout)
        if frame is None:
            raise self._failed("it ended before it answered")
        kind, payload = frame
        if kind == b"R":
            pass  # the model is loaded: the answers follow
        elif kind == b"V":
            (rows,) = ROWS.unpack_from(payload)
            vectors = np.frombuffer(payload, dtype=np.float32, offset=ROWS.size).reshape(rows, self.dim).copy()
            seq, self._received = self._received, self._received + 1
            if seq in self._dropped:
                self._dropped.discard(seq)
            else:
                self._kept[seq] = vectors
        elif kind == b"E":
            said = json.loads(payload)
            error_type = IndexCorruptError if said.get("type") == "IndexCorruptError" else WorkerFailed
            self._failure = error_type(f"The embedding process failed: {said['error']}", hint=said.get("hint"))
            raise self._failure
        else:
            raise self._failed(f"it sent a frame of unknown kind {kind!r}")

    def _failed(self, what: str) -> WorkerFailed:
        try:
            code = self._proc.wait(2.0)
        except subprocess.TimeoutExpired:
            code = None
        self._drainer.join(0.5)
        tail = " | ".join(self._stderr_tail)
        ended = f"exit code {code}" if code is not None else "still running"
        self._failure = WorkerFailed(
            f"The embedding process (pid {self.pid}, {ended}) failed: {what}." + (f" It said: {tail}" if tail else ""),
            hint=_RETRY_HINT,
        )
        return self._failure

    def _drain(self, stderr: IO[bytes]) -> None:
        for line in stderr:
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                self._stderr_tail.append(text[:500])
