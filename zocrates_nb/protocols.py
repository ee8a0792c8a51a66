"""The collaborator interfaces the pipeline is written against: chat client, embedder, event sink, index.

Why: tools, agents and the wiring receive these objects as arguments (the workbench decides which
concrete ones); typing them with ``typing.Protocol`` says what each needs without importing the
concrete class (and its heavy library: openai, onnxruntime, chromadb). This module imports nothing
from the package, so every layer may use it. ``NullEventSink`` is the do-nothing default that lets a
component always call ``self.events.emit(...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, runtime_checkable

__all__ = ["ChatClient", "Embedder", "EventSink", "NullEventSink", "SearchIndex"]


@runtime_checkable
class EventSink(Protocol):
    """Where diagnostics events go (``diagnostics.events.EventLog`` writes JSON lines)."""

    def emit(self, kind: str, **fields: Any) -> None:
        """Record one event of ``kind``; never raises (logging must not break the work logged)."""
        ...


class NullEventSink:
    """An event sink that records nothing: the default when no event log is given."""

    def emit(self, kind: str, **fields: Any) -> None:
        """Drop the event."""

    @contextmanager
    def timed(self, kind: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """A block whose fields go nowhere (mirrors ``EventLog.timed``)."""
        yield dict(fields)

    def __repr__(self) -> str:
        return "NullEventSink()"


@runtime_checkable
class ChatClient(Protocol):
    """One chat completion per call for an agent role (``agents.llm.LLMClient`` over the openai client)."""

    def chat(
        self,
        role: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        stream_cb: Callable[[str], None] | None = None,
        *,
        profile_tokens: int = 0,
        json_mode: bool = False,
    ) -> Any:
        """The model's reply (``LLMReply``: ``content``, ``tool_calls``, ``usage``); streams text to ``stream_cb``."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Texts to unit vectors (``index.embed.MiniLMEmbedder``, the ONNX all-MiniLM-L6-v2)."""

    def embed(self, texts: Sequence[str]) -> Any:
        """One row per text (a ``numpy.ndarray`` of shape ``(len(texts), dim)``)."""
        ...


@runtime_checkable
class SearchIndex(Protocol):
    """Ranked retrieval over the indexed chunks (``index.hybrid.HybridIndex``: FTS5 + vectors, fused)."""

    def search(
        self,
        query: str,
        k: int = 10,
        filters: Mapping[str, Any] | None = None,
        mode: str = "hybrid",
        *,
        collapse: bool = True,
        query_embedding: Any = None,
    ) -> list[Any]:
        """The top ``k`` ``SearchHit`` s (one per document when ``collapse``)."""
        ...

    def search_with_notices(
        self,
        query: str,
        k: int = 10,
        filters: Mapping[str, Any] | None = None,
        mode: str = "hybrid",
        *,
        collapse: bool = True,
        query_embedding: Any = None,
        fallback: bool = True,
    ) -> tuple[list[Any], list[str]]:
        """Like ``search``, plus the notices a reader should see (a degraded dense side, a capped ``k``)."""
        ...

    def resolve_library(self, value: str) -> Any:
        """The library (``records.LibraryInfo``) a name or id names; a QueryError listing them when none."""
        ...
