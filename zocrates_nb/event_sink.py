"""The event-sink seam the pipeline emits diagnostics through, and a sink that records nothing.

The pipeline (corpus/, index/) must not import ``diagnostics`` (import-linter's side-channel
contract), so it depends on this protocol; ``diagnostics.events.EventLog`` satisfies it and the
workbench passes one in. ``NullEventSink`` is the default, so emitting code needs no ``None`` checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["EventSink", "NullEventSink"]


class EventSink(Protocol):
    def emit(self, kind: str, **fields: Any) -> None: ...


class NullEventSink:
    """An event sink that records nothing (a corpus without diagnostics)."""

    def emit(self, kind: str, **fields: Any) -> None:
        return None

    @contextmanager
    def timed(self, kind: str, **fields: Any) -> Iterator[dict[str, Any]]:
        yield dict(fields)

    def __repr__(self) -> str:
        return "NullEventSink()"
