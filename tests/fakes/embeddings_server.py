"""An OpenAI-compatible ``/v1/embeddings`` on 127.0.0.1, for the opt-in embedding backend.

It speaks the real wire format, so the product is tested through the official ``openai`` client:
``input`` as a string or a list, ``encoding_format`` ``base64`` (what the client sends by default:
little-endian float32, base64-encoded) or ``float``, the list response
(``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}``),
OpenAI's error JSON for a wrong key (401, echoing it), an unknown model (404), too many inputs in
one request (400) and whatever is queued (``rate_limited``, ``server_error`` of openai_server.py).

The vectors are deterministic bags of hashed words (``dim`` wide, unit length): texts that share
words are near, so a search through them finds what it should.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler

import numpy as np

from tests.fakes.loopback import LoopbackServer
from tests.fakes.openai_server import error

WORD = re.compile(r"[a-z0-9]+")


def bag_vector(text: str, dim: int) -> list[float]:
    """The fake model: each word adds +-1 at a hashed position; unit length (zero text: a fixed axis)."""
    vector = np.zeros(dim, dtype=np.float64)
    for word in WORD.findall(text.lower()):
        digest = hashlib.md5(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % dim] += 1.0 if digest[4] % 2 else -1.0
    norm = float(np.linalg.norm(vector))
    if norm == 0:
        vector[0], norm = 1.0, 1.0
    return [float(x) for x in vector / norm]


class FakeEmbeddings(LoopbackServer):
    """``with FakeEmbeddings(dim=64) as server:``; point the client at ``server.base_url``."""

    def __init__(
        self, *, dim: int = 64, api_key: str | None = None, models: set[str] | None = None, max_inputs: int = 2048
    ) -> None:
        self.dim = dim
        self.api_key = api_key
        self.models = models if models is not None else {"fake-embed-small"}
        self.max_inputs = max_inputs
        self.script: deque[dict] = deque()
        self.requests: list[dict] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def queue(self, *specs: dict) -> None:
        self.script.extend(specs)

    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]

    def texts_embedded(self) -> int:
        return sum(len(b["input"]) if isinstance(b.get("input"), list) else 1 for b in self.bodies())

    def answer(self, body: dict, headers: dict) -> tuple[int, dict, dict]:
        with self._lock:
            self.requests.append({"headers": headers, "body": body})
            if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
                sent = headers.get("authorization", "").removeprefix("Bearer ")
                spec = error(401, f"Incorrect API key provided: {sent}.", code="invalid_api_key")
            elif body.get("model") not in self.models:
                spec = error(404, f"The model `{body.get('model')}` does not exist.", code="model_not_found")
            elif self.script:
                spec = self.script.popleft()
            else:
                spec = {}
        if "status" in spec:
            return spec["status"], {"error": spec["error"]}, spec.get("headers") or {}
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        if not inputs or len(inputs) > self.max_inputs or not all(isinstance(t, str) for t in inputs):
            return 400, {"error": error(400, f"'$.input' must hold 1 to {self.max_inputs} strings.")["error"]}, {}
        data = []
        for i, text in enumerate(inputs):
            vector = bag_vector(text, self.dim)
            value: object = vector
            if body.get("encoding_format") == "base64":
                value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": i, "embedding": value})
        tokens = sum(len(WORD.findall(t.lower())) or 1 for t in inputs)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {"object": "list", "data": data, "model": body["model"], "usage": usage}, {}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeEmbeddings
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/embeddings"):
            status, payload, headers = 404, {"error": error(404, f"Unknown path {self.path}")["error"]}, {}
        else:
            status, payload, headers = self.fake.answer(body, {k.lower(): v for k, v in self.headers.items()})
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


FakeEmbeddings.handler_class = _Handler
