"""ProfileEditor: edit the User Research Profile (≤ 1,000 characters) in a notebook cell.

An anywidget, because ipywidgets' Textarea cannot limit length in the browser: the front end
(``static/profile_editor.js``) is a real ``<textarea maxlength=…>`` with a live counter and the
Save / Clear buttons. The buttons send the textarea's current text with the request, so a Save
clicked right after fast typing cannot save an older value. The limit is enforced a second time on
save by the same ``ConfigStore`` (same file, same lock) the REST endpoint and CLI use, so a value
set from code that is too long is refused with the error shown inline. The sample profile is the
placeholder only — it is never saved.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

from zocrates_nb.errors import ZocratesError
from zocrates_nb.workbench.core import default_workbench

_STATIC = Path(__file__).parent / "static"


def counter_text(chars: int, limit: int, tokens: int | None) -> str:
    """The counter line: exact tokens when known, else the ≈ chars/4 estimate the browser shows."""
    token_part = f"{tokens} tokens" if tokens is not None else f"~{(chars + 3) // 4} tokens"
    return f"{chars} / {limit} characters · {token_part}"


class ProfileEditor(anywidget.AnyWidget):
    """Edit, save and clear the research profile the agents see.

    ``ProfileEditor()`` edits the default workbench's profile; ``ProfileEditor(wb)`` a given one.
    From code: ``editor.value = "…"``, ``editor.save()``, ``editor.clear()``, ``editor.counter``,
    ``editor.status`` (the inline message) and ``editor.status_kind`` ("ok" | "error" | "").
    """

    _esm = _STATIC / "profile_editor.js"
    _css = _STATIC / "profile_editor.css"
    value = traitlets.Unicode("").tag(sync=True)
    placeholder = traitlets.Unicode("").tag(sync=True)
    max_chars = traitlets.Int(1000).tag(sync=True)
    #: exact token count of the formatted profile section, valid for a text of length ``token_chars``
    token_count = traitlets.Int(0).tag(sync=True)
    token_chars = traitlets.Int(-1).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    status_kind = traitlets.Unicode("").tag(sync=True)

    def __init__(self, workbench: Any = None, **kwargs: Any) -> None:
        if workbench is None:
            workbench = default_workbench()
        from zocrates_nb.settings.profile import SAMPLE_RESEARCH_PROFILE

        self.workbench = workbench
        limit = workbench.profile_limit
        super().__init__(value=workbench.profile, placeholder=SAMPLE_RESEARCH_PROFILE, max_chars=limit, **kwargs)
        self.add_class("zc-profile-editor")
        self.observe(self._recount_tokens, names="value")
        self._update_tokens(self.value)
        self.on_msg(self._on_front_end_msg)

    # ------------------------------------------------------------------ counter
    @property
    def counter(self) -> str:
        """What the counter shows: "n / 1000 characters · T tokens"."""
        exact = self.token_count if self.token_chars == len(self.value) else None
        return counter_text(len(self.value), self.max_chars, exact)

    def _recount_tokens(self, change: dict) -> None:
        self._update_tokens(change["new"])

    def _update_tokens(self, text: str) -> None:
        from zocrates_nb.settings.profile import profile_token_report

        report = profile_token_report(text, limit=self.max_chars)
        self.token_count = int(report["tokens"])
        self.token_chars = len(text)

    # ------------------------------------------------------------------ actions
    def save(self) -> None:
        """Validate and write the profile (same ConfigStore, lock and file as the REST endpoint)."""
        self._say("", "")
        try:
            self.workbench.set_profile(self.value)
        except Exception as exc:
            self._show_error(exc)
            raise
        saved = self.workbench.profile
        self._say(
            f"✓ Saved ({len(saved)} character{'s' if len(saved) != 1 else ''})."
            if saved.strip()
            else "✓ Saved: the profile is empty.",
            "ok",
        )

    def clear(self) -> None:
        """Remove the saved profile and empty the box (the placeholder comes back)."""
        self._say("", "")
        try:
            self.workbench.clear_profile()
        except Exception as exc:
            self._show_error(exc)
            raise
        self.value = ""
        self._say("✓ Cleared: no profile is sent with questions.", "ok")

    def _on_front_end_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        """Save / Clear clicked in the browser; the message carries the textarea's text."""
        event = content.get("event")
        if event not in ("save", "clear"):
            return
        if event == "save" and isinstance(content.get("value"), str):
            self.value = content["value"]
        try:
            self.save() if event == "save" else self.clear()
        except Exception:
            return  # already shown inline by _show_error: the browser has no caller to raise to

    # ------------------------------------------------------------------ messages
    def _say(self, text: str, kind: str) -> None:
        self.status, self.status_kind = text, kind

    def _show_error(self, exc: BaseException) -> None:
        if isinstance(exc, ZocratesError):
            text = exc.message + (f" → {exc.hint}" if exc.hint else "")
        else:
            text = f"Unexpected error: {type(exc).__name__}: {exc}"
        self._say(f"⚠ {text}", "error")
