"""Progress reporting for long runs (the only module that imports tqdm).

Why one small wrapper: sync and index builds run both in notebooks (where a
widget bar is right) and in a terminal (where one line that rewrites itself is
right), and must be silent in tests, pipes and ``--json`` output. Callers say
*whether* they want progress (``True``/``False``/``None`` = decide for me); this
module decides *how*.
"""

from __future__ import annotations

import sys
from typing import IO, Any


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell), without importing IPython."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - a half-initialised IPython is "not a notebook"
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _stream_is_terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class ProgressReporter:
    """A progress bar, a single updating terminal line, or nothing.

    ``enabled=None`` shows progress only where someone is watching (a notebook
    or a terminal on ``stream``) and only for runs of at least ``min_total``
    items. Use as a context manager; ``update(n)`` advances, ``note(text)`` sets
    a short status after the counter.
    """

    def __init__(
        self,
        total: int,
        description: str,
        *,
        enabled: bool | None = None,
        stream: IO[str] | None = None,
        min_total: int = 20,
        unit: str = "doc",
    ) -> None:
        self.total = total
        self.count = 0
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            enabled = total >= min_total and (in_notebook() or _stream_is_terminal(self.stream))
        self.enabled = bool(enabled) and total > 0
        self._bar: Any = None
        if not self.enabled:
            return
        if in_notebook() and stream is None:
            from tqdm.auto import tqdm as auto_tqdm

            self._bar = auto_tqdm(total=total, desc=description, unit=unit)
        else:
            from tqdm import tqdm as line_tqdm

            self._bar = line_tqdm(
                total=total,
                desc=description,
                unit=unit,
                file=self.stream,
                dynamic_ncols=True,
                leave=True,
                mininterval=0.1,
            )

    def update(self, n: int = 1) -> None:
        self.count += n
        if self._bar is not None:
            self._bar.update(n)

    def note(self, text: str) -> None:
        if self._bar is not None:
            self._bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
