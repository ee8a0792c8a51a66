"""What the LLM client needs besides ``openai``: endpoint and key helpers, prices, error details.

Kept apart from agents/llm.py (the only ``openai`` importer) so that module holds the calls alone:
``is_loopback`` (local servers need no real key), ``redact`` (keys never reach people or logs),
``estimate_cost`` (``llm.prices``) and the small readers of a failed response.
"""

from __future__ import annotations

import ipaddress
from typing import Any
from urllib.parse import urlparse

#: Sent to loopback servers (Ollama, vLLM, LM Studio) that accept any key.
PLACEHOLDER_KEY = "not-needed"


def is_loopback(base_url: str | None) -> bool:
    """True for http(s)://localhost / 127.x / ::1 endpoints (local servers need no real key)."""
    host = (urlparse(base_url or "").hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def redact(text: str, key: str | None) -> str:
    """Remove the API key (and any long tail of it) from text meant for people or logs."""
    if not key or key == PLACEHOLDER_KEY:
        return text
    text = text.replace(key, "[redacted]")
    if len(key) > 12:
        text = text.replace(key[-12:], "[redacted]")
    return text


def estimate_cost(prices: dict, model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """US dollars from ``llm.prices`` ({model: {"prompt": $/1M, "completion": $/1M}}); None if unpriced."""
    price = (prices or {}).get(model)
    if not isinstance(price, dict):
        return None
    try:
        cost = (
            prompt_tokens * float(price.get("prompt", 0)) + completion_tokens * float(price.get("completion", 0))
        ) / 1_000_000
    except (TypeError, ValueError):
        return None
    return round(cost, 8)


def is_transport_error(exc: BaseException) -> bool:
    """A network failure raised outside the client's own wrapping (e.g. mid-stream by httpx)."""
    return type(exc).__module__.split(".")[0] in ("httpx", "httpcore") or isinstance(
        exc, (ConnectionError, TimeoutError)
    )


def retry_after_seconds(exc: Exception) -> float | None:
    """The ``Retry-After`` header of a failed response, in seconds (None when absent or unreadable)."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def server_message(exc: Any) -> str:
    """The server's own error message (OpenAI's ``{"error": {"message"}}`` or a bare ``message``)."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if body.get("message"):
            return str(body["message"])
    return str(getattr(exc, "message", "") or exc)
