"""LLM access: the official ``openai`` client against any OpenAI-compatible endpoint.

Why our own retry loop: the client's built-in retries are silent and cannot be
accounted for; ours honour ``Retry-After``, are bounded by ``llm.max_retries``
and turn every failure into an ``LLMError`` whose hint says what to change. The
API key is redacted from every message we build (servers echo keys back in 401
bodies). This is the only module that imports ``openai``.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import openai

from zocrates_nb.agents.llm_support import (
    PLACEHOLDER_KEY,
    estimate_cost,
    is_loopback,
    is_transport_error,
    redact,
    retry_after_seconds,
    server_message,
)
from zocrates_nb.errors import LLMError
from zocrates_nb.protocols import EventSink, NullEventSink

ROLES = ("coordinator", "library_search", "library_synthesizer", "online_synthesizer", "query_rewriter")
MAX_BACKOFF_S = 30.0


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for, taken from the ``tool_calls`` field only."""

    id: str
    name: str
    arguments: str  # the raw JSON text the model produced

    def parsed_arguments(self) -> dict:
        """Arguments as a dict; raises ``ValueError`` when the model produced invalid JSON."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value

    def as_message_part(self) -> dict:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class LLMReply:
    """What one chat completion returned, with its accounting."""

    content: str
    tool_calls: list[ToolCall]
    usage: dict
    model: str
    latency_ms: float
    role: str = ""

    def assistant_message(self) -> dict:
        """The reply as a message to append to the conversation (tool calls included)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.tool_calls]
        return message


def _message_text(messages: list[dict]) -> str:
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        for call in message.get("tool_calls") or []:
            parts.append(json.dumps(call))
    return "\n".join(parts)


class LLMClient:
    """Chat completions for the agent roles, with retries, streaming and token accounting."""

    def __init__(
        self,
        settings: Any,
        api_key: str | None,
        events: EventSink | None = None,
        *,
        session: str | None = None,
        backoff_base_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.settings = settings
        self.base_url = settings.base_url
        self.events: EventSink = events if events is not None else NullEventSink()
        self.session = session
        self.backoff_base_s = backoff_base_s
        self._sleep = sleep
        self._api_key_env = getattr(settings, "api_key_env", None) or "OPENAI_API_KEY"
        if not self.base_url:
            raise LLMError(
                "No language model is configured.", "set one: zocrates-nb llm set --base-url URL --model NAME"
            )
        if not api_key:
            if not is_loopback(self.base_url):
                raise LLMError(
                    f"No API key for the LLM endpoint at {self.base_url}.",
                    f"set ${self._api_key_env} or run zocrates-nb llm set --api-key-env NAME",
                )
            api_key = PLACEHOLDER_KEY
        self._key = api_key
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,
            timeout=float(getattr(settings, "timeout_s", 60) or 60),
        )

    def __repr__(self) -> str:  # never the key
        return f"LLMClient(base_url={self.base_url!r}, model={getattr(self.settings, 'model', None)!r})"

    def model_for(self, role: str) -> str:
        model = self.settings.model_for(role) if hasattr(self.settings, "model_for") else None
        model = model or getattr(self.settings, "model", None)
        if not model:
            raise LLMError(f"No model is configured for the {role} agent.", "set one: zocrates-nb llm set --model NAME")
        return model

    # -- the one public call ---------------------------------------------------------
    def chat(
        self,
        role: str,
        messages: list[dict],
        tools: list[dict] | None = None,
        stream_cb: Callable[[str], None] | None = None,
        *,
        profile_tokens: int = 0,
        json_mode: bool = False,
    ) -> LLMReply:
        """One chat completion for ``role``; streams text to ``stream_cb`` when given.

        Retries 429 (honouring Retry-After), 5xx, timeouts and connection errors up to
        ``max_retries`` times; a retry never happens after text was streamed, so the
        caller never sees a token twice.
        """
        model = self.model_for(role)
        request: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            request["tools"] = tools
        if json_mode:
            request["response_format"] = {"type": "json_object"}
        max_retries = max(0, int(getattr(self.settings, "max_retries", 3) or 0))
        started = time.perf_counter()
        attempt = 0
        while True:
            streamed = [False]
            try:
                if stream_cb is None:
                    content, calls, usage = self._complete(request)
                else:
                    content, calls, usage = self._stream(request, stream_cb, streamed)
                break
            except Exception as exc:
                if not isinstance(exc, openai.OpenAIError) and not is_transport_error(exc):
                    raise  # a bug (ours or a stream_cb's), not an endpoint failure
                delay = self._retry_delay(exc, attempt)
                if delay is None or attempt >= max_retries or streamed[0]:
                    error = self._as_llm_error(exc, model, attempt)
                    self._emit(role, model, 0, 0, profile_tokens, started, error=error.message)
                    raise error from None
                attempt += 1
                self._sleep(delay)
        prompt_tokens, completion_tokens, source = self._token_counts(usage, messages, tools, content, calls)
        reply_usage = self._emit(
            role, model, prompt_tokens, completion_tokens, profile_tokens, started, usage_source=source, retries=attempt
        )
        return LLMReply(
            content=content,
            tool_calls=calls,
            usage=reply_usage,
            model=model,
            latency_ms=reply_usage["latency_ms"],
            role=role,
        )

    def embed(self, model: str, texts: list[str]) -> tuple[list[Any], dict]:
        """Vectors of ``texts`` from one ``/v1/embeddings`` request, in input order, and its accounting.

        The same retries and messages as ``chat`` (429 with Retry-After, 5xx, timeouts); the usage is
        emitted as an ``llm`` event of role ``embedding``, so diagnostics' ``token_costs`` prices it.
        """
        max_retries = max(0, int(getattr(self.settings, "max_retries", 3) or 0))
        started, attempt = time.perf_counter(), 0
        while True:
            try:
                response = self._client.embeddings.create(model=model, input=list(texts))
                break
            except Exception as exc:
                if not isinstance(exc, openai.OpenAIError) and not is_transport_error(exc):
                    raise
                delay = self._retry_delay(exc, attempt)
                if delay is None or attempt >= max_retries:
                    error = self._as_llm_error(exc, model, attempt)
                    self._emit("embedding", model, 0, 0, 0, started, error=error.message, texts=len(texts))
                    raise error from None
                attempt += 1
                self._sleep(delay)
        rows = sorted(response.data or [], key=lambda row: row.index)
        if len(rows) != len(texts):
            raise LLMError(
                f"The endpoint at {self.base_url} returned {len(rows)} embeddings for {len(texts)} texts.",
                "check that the model is an embedding model: zocrates-nb index model show",
            )
        tokens = getattr(response.usage, "prompt_tokens", None) if response.usage is not None else None
        if tokens is None:
            from zocrates_nb.tokens import count_tokens

            tokens, source = sum(count_tokens(t) for t in texts), "estimated"
        else:
            source = "api"
        record = self._emit(
            "embedding", model, int(tokens), 0, 0, started, usage_source=source, retries=attempt, texts=len(texts)
        )
        return [row.embedding for row in rows], record

    # -- transport -------------------------------------------------------------------
    def _complete(self, request: dict) -> tuple[str, list[ToolCall], Any]:
        response = self._client.chat.completions.create(**request)
        if not response.choices:
            return "", [], response.usage
        message = response.choices[0].message
        calls = [
            ToolCall(c.id or f"call_{i}", c.function.name, c.function.arguments or "")
            for i, c in enumerate(message.tool_calls or [])
            if getattr(c, "function", None)
        ]
        return message.content or "", calls, response.usage

    def _stream(
        self, request: dict, stream_cb: Callable[[str], None], streamed: list[bool]
    ) -> tuple[str, list[ToolCall], Any]:
        stream = self._client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True})
        text: list[str] = []
        partial: dict[int, dict[str, str]] = {}
        usage = None
        for chunk in stream:
            if getattr(chunk, "usage", None):
                usage = chunk.usage
            for choice in chunk.choices or []:
                delta = choice.delta
                if delta is None:
                    continue
                if delta.content:
                    text.append(delta.content)
                    streamed[0] = True
                    stream_cb(delta.content)
                for tc in delta.tool_calls or []:
                    slot = partial.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                    slot["id"] = tc.id or slot["id"]
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
        calls = [
            ToolCall(slot["id"] or f"call_{index}", slot["name"], slot["arguments"])
            for index, slot in sorted(partial.items())
            if slot["name"]
        ]
        return "".join(text), calls, usage

    # -- accounting ------------------------------------------------------------------
    def _token_counts(
        self, usage: Any, messages: list[dict], tools: list[dict] | None, content: str, calls: list[ToolCall]
    ) -> tuple[int, int, str]:
        if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
            return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0), "api"
        from zocrates_nb.tokens import count_tokens

        prompt = _message_text(messages) + (json.dumps(tools) if tools else "")
        completion = content + "".join(c.name + c.arguments for c in calls)
        return count_tokens(prompt), count_tokens(completion), "estimated"

    def _emit(
        self,
        role: str,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        profile_tokens: int,
        started: float,
        **extra: Any,
    ) -> dict:
        latency_ms = round((time.perf_counter() - started) * 1000, 1)
        cost = estimate_cost(getattr(self.settings, "prices", {}), model, prompt_tokens, completion_tokens)
        record = {
            "role": role,
            "model": model,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "profile_tokens": profile_tokens,
            "latency_ms": latency_ms,
            "cost_usd": cost,
            **extra,
        }
        self.events.emit("llm", session=self.session, **record)
        return record

    # -- failures --------------------------------------------------------------------
    def _retry_delay(self, exc: Exception, attempt: int) -> float | None:
        """Seconds to wait before retrying ``exc``, or None when it is not worth retrying."""
        backoff = min(MAX_BACKOFF_S, self.backoff_base_s * (2**attempt))
        backoff += random.uniform(0, backoff / 2)
        if isinstance(exc, openai.RateLimitError):
            retry_after = retry_after_seconds(exc)
            return backoff if retry_after is None else min(retry_after, 60.0)
        if isinstance(exc, openai.APIStatusError):
            return backoff if exc.status_code >= 500 else None
        if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)) or is_transport_error(exc):
            return backoff
        return None

    def _as_llm_error(self, exc: Exception, model: str, retries: int) -> LLMError:
        where = self.base_url
        tried = f" (after {retries} retries)" if retries else ""
        if isinstance(exc, openai.AuthenticationError):
            return LLMError(
                f"The LLM endpoint at {where} rejected the API key (401).",
                f"check the key in ${self._api_key_env} "
                f"(zocrates-nb llm set --api-key-env NAME to read another variable)",
            )
        if isinstance(exc, openai.PermissionDeniedError):
            return LLMError(
                f"The API key may not use model '{model}' at {where} (403).",
                f"check the key in ${self._api_key_env}, or choose another model: zocrates-nb llm set --model NAME",
            )
        if isinstance(exc, openai.NotFoundError):
            return LLMError(
                f"Model '{model}' was not found at {where} (404).",
                "choose a model the endpoint serves: zocrates-nb llm set --model NAME "
                "(and check that the base URL ends in /v1 if the server needs it)",
            )
        if isinstance(exc, openai.RateLimitError):
            return LLMError(
                f"The LLM endpoint at {where} is rate limiting requests (429){tried}.",
                "wait a minute and ask again, or raise llm.max_retries in the config",
            )
        if isinstance(exc, openai.APITimeoutError):
            return LLMError(
                f"The LLM endpoint at {where} did not answer in time{tried}.",
                "check the server, or raise llm.timeout_s: zocrates-nb llm set --timeout-s N",
            )
        if isinstance(exc, openai.APIConnectionError) or is_transport_error(exc):
            return LLMError(
                f"Cannot reach the LLM endpoint at {where}{tried}.",
                "start the server or fix the URL: zocrates-nb llm set --base-url URL",
            )
        if isinstance(exc, openai.APIStatusError):
            detail = redact(server_message(exc), self._key)
            if exc.status_code >= 500:
                return LLMError(
                    f"The LLM endpoint at {where} failed ({exc.status_code}){tried}: {detail}",
                    "try again later; if it persists, check the server's logs",
                )
            return LLMError(
                f"The LLM endpoint at {where} refused the request ({exc.status_code}): {detail}",
                "check the model name and settings: zocrates-nb llm show",
            )
        return LLMError(
            f"The LLM call failed: {redact(f'{type(exc).__name__}: {exc}', self._key)}",
            "check the endpoint: zocrates-nb llm show",
        )
