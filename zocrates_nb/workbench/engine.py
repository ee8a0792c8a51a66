"""A warm engine per data directory, so a cold ``zocrates-nb search`` skips the ~4 s of start-up.

Why: a one-shot command pays ``import chromadb`` (about 3 s) and the ONNX model load (about
0.7 s) before its first dense query; a notebook kernel pays that once. ``zocrates-nb engine start``
runs one long-lived process that holds an open workbench (model loaded, Chroma open) and answers
searches over a Unix socket; ``zocrates-nb search`` asks it first and, when none runs, searches
in-process exactly as before. The engine stops itself after ``idle_s`` seconds without a request.

Safety: the socket lives in a per-user folder created 0700 (only the same user can connect) and
its name is derived from the data directory, so each data directory has at most one engine (a
second start finds the first one answering and exits). Protocol: one JSON object per line each way.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from zocrates_nb.errors import ZocratesError
from zocrates_nb.paths import DataPaths

__all__ = [
    "DEFAULT_IDLE_S",
    "EngineNotAnswering",
    "ask_engine",
    "search_via_engine",
    "serve",
    "socket_path",
    "start_engine",
]

DEFAULT_IDLE_S = 1800.0
_MAX_MESSAGE = 1 << 26


def socket_path(paths: DataPaths, *, create: bool = True) -> Path:
    """``<runtime dir>/zocrates-<uid>/<hash of the data dir>.sock`` (short: AF_UNIX paths are ≤ 107 bytes).

    ``create=False`` (a client asking whether an engine runs): nothing is made or checked here, so a
    missing or read-only runtime folder never stops a search that would work without an engine."""
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"zocrates-{os.getuid()}"
    digest = hashlib.sha256(str(Path(paths.root).resolve()).encode()).hexdigest()[:20]
    if not create:
        return base / f"{digest}.sock"
    base.mkdir(mode=0o700, exist_ok=True)
    if base.stat().st_uid != os.getuid() or base.stat().st_mode & 0o077:
        raise ZocratesError(
            f"The engine folder {base} is not private to this user.",
            hint=f"Remove it (`rm -r {base}`) and run the command again.",
        )
    return base / f"{digest}.sock"


def ask_engine(paths: DataPaths, request: dict, timeout: float = 120.0) -> dict | None:
    """Send one request to the data directory's engine; None when no engine answers.

    An engine that does not answer within ``timeout`` (stopped, hung) raises ``EngineNotAnswering``."""
    path = socket_path(paths, create=False)
    if not _is_private_socket(path):
        return None  # none, or not one of ours (another user's, a folder open to others): never talked to
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        try:
            conn.connect(str(path))
            conn.sendall(json.dumps(request).encode() + b"\n")
            reply = conn.makefile("rb").readline(_MAX_MESSAGE)
        except TimeoutError as exc:
            raise EngineNotAnswering(
                f"The engine for {paths.root} did not answer within {timeout:g} s (stopped or hung).",
                hint=f"End its process (`pkill -f 'zocrates_nb.workbench.engine --data-dir {paths.root}'`); "
                "searches work without it (`zocrates-nb search --no-engine …`).",
            ) from exc
        except OSError:
            return None  # a stale socket file, or an engine stopping: answer without it
    if not reply:
        return None
    answer = json.loads(reply)
    if not answer.get("ok"):
        error = answer.get("error") or {}
        raise ZocratesError(error.get("message", "The engine failed."), hint=error.get("hint"))
    return answer


class EngineNotAnswering(ZocratesError):
    """An engine's socket is there but the engine does not answer (stopped with SIGSTOP, hung)."""


def _is_private_socket(path: Path) -> bool:
    try:
        folder, found = path.parent.stat(), path.stat()
    except OSError:
        return False
    uid = os.getuid()
    return folder.st_uid == uid and not folder.st_mode & 0o077 and found.st_uid == uid


def search_via_engine(paths: DataPaths, query: str, k: int, filters: dict | None, mode: str | None) -> dict | None:
    """The engine's ``SearchResults.to_dict()`` (plus ``"engine": True``), or None with no engine (or
    one that does not answer a ping within 5 s: the search then runs in this process, not after 120 s)."""
    try:
        if ask_engine(paths, {"op": "ping"}, timeout=5.0) is None:
            return None
    except EngineNotAnswering:
        return None
    answer = ask_engine(paths, {"op": "search", "query": query, "k": k, "filters": filters, "mode": mode})
    return None if answer is None else {**answer["result"], "engine": True}


def start_engine(paths: DataPaths, idle_s: float = DEFAULT_IDLE_S, wait_s: float = 0.0) -> dict:
    """Start a detached engine unless one answers; with ``wait_s`` wait until its dense side is ready."""
    answer = ask_engine(paths, {"op": "ping"}, timeout=5.0)
    if answer is None:
        if not Path(paths.root).is_dir():
            raise ZocratesError(
                f"There is no data directory at {paths.root} yet: an engine would serve an empty library.",
                hint=f"Run `zocrates-nb sync --data-dir {paths.root}` first, then start the engine.",
            )
        with open(_log_path(paths), "ab") as log:
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "zocrates_nb.workbench.engine",
                    "--data-dir",
                    str(paths.root),
                    "--idle",
                    str(idle_s),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=dict(os.environ),
            )
    deadline = time.monotonic() + wait_s
    while True:
        answer = ask_engine(paths, {"op": "ping"}, timeout=5.0)
        if answer is not None and (answer.get("ready") or time.monotonic() >= deadline):
            return answer
        if answer is None and time.monotonic() >= deadline + 30:
            raise ZocratesError(
                "The engine did not start.",
                hint=f"See {_log_path(paths)}; searches still work without it.",
            )
        time.sleep(0.1)


def _log_path(paths: DataPaths) -> Path:
    """``<data dir>/engine.log``, or beside the socket while the data directory cannot be written (the
    engine then serves it read-only)."""
    from zocrates_nb.storage.space import write_problem

    if not write_problem(Path(paths.root)):
        return Path(paths.root) / "engine.log"
    return socket_path(paths).with_suffix(".log")


# ----------------------------------------------------------------------------- the server side


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    workbench: Any = None
    last_request = 0.0


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        line = self.rfile.readline(_MAX_MESSAGE)
        if not line:
            return
        self.server.last_request = time.monotonic()
        try:
            reply = {"ok": True, **_dispatch(self.server, json.loads(line))}
        except ZocratesError as exc:
            reply = {"ok": False, "error": {"type": type(exc).__name__, "message": exc.message, "hint": exc.hint}}
        except Exception as exc:  # noqa: BLE001 — reported to the client, the engine keeps serving
            reply = {
                "ok": False,
                "error": {
                    "type": type(exc).__name__,
                    "message": f"The engine failed: {exc}",
                    "hint": "Run the command with --no-engine, or `zocrates-nb engine stop`.",
                },
            }
        self.wfile.write(json.dumps(reply).encode() + b"\n")


def _dispatch(server: _Server, request: dict) -> dict:
    op = request.get("op")
    wb = server.workbench
    warmup = wb.index.warmup
    if op == "ping":
        return {"pid": os.getpid(), "ready": bool(warmup and warmup.ready), "data_dir": str(wb.paths.root)}
    if op == "search":
        results = wb.search(
            request["query"], k=int(request.get("k") or 10), filters=request.get("filters"), mode=request.get("mode")
        )
        return {"result": results.to_dict()}
    if op == "stop":
        threading.Thread(target=server.shutdown, daemon=True).start()
        return {"stopping": True}
    raise ZocratesError(f"Unknown engine request {op!r}.", hint="Use ping, search or stop.")


def serve(paths: DataPaths, idle_s: float = DEFAULT_IDLE_S) -> int:
    """Run the engine in this process until stopped or idle for ``idle_s`` seconds."""
    from zocrates_nb.storage.locks import Timeout, file_lock
    from zocrates_nb.workbench.core import Workbench

    path = socket_path(paths)
    try:
        with file_lock(paths.locks / "engine.lock", timeout=0.1):
            if ask_engine(paths, {"op": "ping"}, timeout=5.0) is not None:
                return 0  # another engine already serves this directory
            path.unlink(missing_ok=True)
            server = _Server(str(path), _Handler)
            os.chmod(path, 0o600)
    except Timeout:
        return 0  # another engine is starting right now
    server.workbench = Workbench(paths.root, auto_sync=False)
    server.workbench.index.start_warmup()
    server.last_request = time.monotonic()

    def watch_idle() -> None:
        while time.monotonic() - server.last_request < idle_s:
            time.sleep(min(5.0, idle_s / 4))
        server.shutdown()

    threading.Thread(target=watch_idle, name="zocrates-engine-idle", daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        path.unlink(missing_ok=True)
        server.workbench.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m zocrates_nb.workbench.engine")
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--idle", type=float, default=DEFAULT_IDLE_S, help="stop after this many idle seconds")
    args = parser.parse_args(argv)
    return serve(DataPaths.resolve(args.data_dir), args.idle)


if __name__ == "__main__":
    sys.exit(main())
