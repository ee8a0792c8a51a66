"""A scripted OpenAI-compatible server on 127.0.0.1 (``/v1/chat/completions``).

It speaks the real wire format so the product is tested through the official
``openai`` client: JSON completions with ``usage``, SSE streaming with tool-call
deltas and a final usage chunk (``stream_options.include_usage``), and OpenAI's
error JSON (``{"error": {"message", "type", "param", "code"}}``) for 401, 404
(unknown model), 429 (with ``Retry-After``) and 500, and a stalled request
(``stall(seconds)``) that outlasts the client's read timeout.

Replies come from a queue (``server.queue(...)``) or, when the queue is empty,
from ``responder(body) -> spec`` — a tiny scripted "model" for multi-agent turns.
Every request is recorded (path, headers, JSON body) so tests can assert on the
system prompts and messages the product sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import LoopbackServer


def reply(
    content: str = "", tool_calls: list[dict] | None = None, *, usage: bool | dict = True, pieces: int = 4
) -> dict:
    """A successful completion. ``tool_calls``: ``[{"name", "arguments": dict | str}]``."""
    return {"content": content, "tool_calls": tool_calls or [], "usage": usage, "pieces": pieces}


def call(name: str, **arguments: Any) -> dict:
    return {"name": name, "arguments": arguments}


def error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type_: str = "invalid_request_error",
    headers: dict | None = None,
) -> dict:
    return {
        "status": status,
        "error": {"message": message, "type": type_, "param": None, "code": code},
        "headers": headers or {},
    }


def rate_limited(retry_after: str = "0") -> dict:
    return error(
        429,
        "Rate limit reached for requests. Please try again shortly.",
        code="rate_limit_exceeded",
        type_="requests",
        headers={"Retry-After": retry_after},
    )


def server_error() -> dict:
    return error(500, "The server had an error while processing your request.", type_="server_error")


def stall(seconds: float, then: dict | None = None) -> dict:
    """One request that is answered only after ``seconds`` (longer than the client's timeout).

    Queued like any other spec, so it applies once: the next request gets the next
    spec. ``then`` is what the late answer would have been (a normal reply by default).
    """
    return {"stall_s": float(seconds), "then": then or reply("too late")}


class FakeOpenAI(LoopbackServer):
    """Start with ``with FakeOpenAI() as server:``; point the client at ``server.base_url``."""

    def __init__(
        self,
        responder: Callable[[dict], dict] | None = None,
        *,
        api_key: str | None = None,
        models: set[str] | None = None,
    ) -> None:
        self.responder = responder
        self.api_key = api_key  # when set, other keys get OpenAI's 401 (echoing the key)
        self.models = models  # when set, other models get OpenAI's 404 model_not_found
        self.script: deque[dict] = deque()
        self.requests: list[dict] = []
        self._lock = threading.Lock()

    # -- lifecycle ------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def queue(self, *specs: dict) -> None:
        self.script.extend(specs)

    # -- what the tests read --------------------------------------------------------
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]

    def system_prompts(self) -> list[str]:
        return [m["content"] for b in self.bodies() for m in b.get("messages", []) if m.get("role") == "system"]

    # -- dispatch -------------------------------------------------------------------
    def next_spec(self, body: dict, headers: dict) -> dict:
        with self._lock:
            self.requests.append({"path": "/v1/chat/completions", "headers": headers, "body": body})
            if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
                sent = headers.get("authorization", "").removeprefix("Bearer ")
                return error(
                    401,
                    f"Incorrect API key provided: {sent}. You can find your API key at "
                    "https://platform.openai.com/account/api-keys.",
                    code="invalid_api_key",
                )
            if self.models is not None and body.get("model") not in self.models:
                return error(
                    404,
                    f"The model `{body.get('model')}` does not exist or you do not have access to it.",
                    code="model_not_found",
                )
            if self.script:
                return self.script.popleft()
        if self.responder is None:
            return error(500, "fake server: no scripted reply left", type_="server_error")
        return self.responder(body)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._json(
                404,
                {
                    "error": {
                        "message": f"Unknown path {self.path}",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
        headers = {k.lower(): v for k, v in self.headers.items()}
        spec = self.fake.next_spec(body, headers)
        if "stall_s" in spec:
            time.sleep(spec["stall_s"])
            spec = spec["then"]
            try:  # the client has usually given up and closed the connection by now
                return self._answer(body, spec)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return None
        return self._answer(body, spec)

    def _answer(self, body: dict, spec: dict) -> None:
        if "status" in spec:
            return self._json(spec["status"], {"error": spec["error"]}, spec.get("headers"))
        if body.get("stream"):
            return self._stream(body, spec)
        return self._json(200, _completion(body, spec))

    def _json(self, status: int, payload: dict, headers: dict | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, body: dict, spec: dict) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in _chunks(body, spec):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


def _usage(body: dict, spec: dict) -> dict | None:
    if spec.get("usage") is False:
        return None
    if isinstance(spec.get("usage"), dict):
        return spec["usage"]
    prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    completion = len(spec.get("content", "").split()) + 5 * len(spec.get("tool_calls", []))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _tool_calls(spec: dict) -> list[dict]:
    out = []
    for i, c in enumerate(spec.get("tool_calls", [])):
        args = c["arguments"] if isinstance(c["arguments"], str) else json.dumps(c["arguments"])
        out.append(
            {
                "id": c.get("id", f"call_{i}_{int(time.time() * 1e6) % 10**8}"),
                "type": "function",
                "function": {"name": c["name"], "arguments": args},
            }
        )
    return out


def _completion(body: dict, spec: dict) -> dict:
    calls = _tool_calls(spec)
    message: dict[str, Any] = {"role": "assistant", "content": spec.get("content") or None}
    if calls:
        message["tool_calls"] = calls
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model"),
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": "tool_calls" if calls else "stop"}
        ],
    }
    usage = _usage(body, spec)
    if usage is not None:
        payload["usage"] = usage
    return payload


def _chunks(body: dict, spec: dict):
    base = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": body.get("model"),
    }

    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    content = spec.get("content", "")
    if content:
        pieces = max(1, int(spec.get("pieces", 4)))
        step = max(1, -(-len(content) // pieces))
        for start in range(0, len(content), step):
            yield chunk({"content": content[start : start + step]})
    calls = _tool_calls(spec)
    for index, tc in enumerate(calls):
        args = tc["function"]["arguments"]
        half = len(args) // 2
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": tc["id"],
                        "type": "function",
                        "function": {"name": tc["function"]["name"], "arguments": args[:half]},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": args[half:]}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    usage = _usage(body, spec)
    if usage is not None and (body.get("stream_options") or {}).get("include_usage"):
        yield {**base, "choices": [], "usage": usage}


FakeOpenAI.handler_class = _Handler
