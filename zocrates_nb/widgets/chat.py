"""ChatPanel: ask the library questions in a notebook cell, and save answers back as Zotero notes.

Built from stock ipywidgets so it renders anywhere widgets do; the one custom piece is the input
line with its Send button (an anywidget): ipywidgets' ``Text.on_submit`` is deprecated, a blur must
not send, and a Send click must carry the text as typed (ipywidgets may still be holding back the
last keystrokes' state updates when a plain Button's click message goes out).
Everything a button does is a public method (``send``, ``save_answer``, ``save_session``), so the
panel can be driven from code and tested without a browser. Errors are shown in the panel itself,
where the researcher is looking, and re-raised to code callers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

from zocrates_nb.display import answers, render  # the renderers (zocrates_nb.display.render, .answers)
from zocrates_nb.errors import ZocratesError
from zocrates_nb.widgets.picker import library_options

# the collection / parent-paper pickers (and their constants) live in save_destination.py (issue 12)
from zocrates_nb.widgets.save_destination import NO_COLLECTION, NO_PARENT, SHOW_ALL_PAPERS_UP_TO, SaveDestination
from zocrates_nb.workbench.core import default_workbench

__all__ = [
    "NO_COLLECTION",
    "NO_PARENT",
    "SHOW_ALL_PAPERS_UP_TO",
    "STREAM_RENDER_INTERVAL",
    "ChatInput",
    "ChatMessage",
    "ChatPanel",
]

_STATIC = Path(__file__).parent / "static"
#: Re-render a streaming bubble at most this often (seconds); the final text is always rendered.
STREAM_RENDER_INTERVAL = 0.05


class ChatInput(anywidget.AnyWidget):
    """Input + Send: Enter or Send posts ``{"event": "submit", "value": text}`` (and carries the panel's CSS)."""

    _esm = _STATIC / "chat.js"
    _css = _STATIC / "chat.css"
    value = traitlets.Unicode("").tag(sync=True)
    placeholder = traitlets.Unicode("Ask your library…").tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)


@dataclass
class ChatMessage:
    """One bubble: ``role`` is "user" or "assistant"; assistant messages carry their ``Answer``."""

    role: str
    text: str
    answer: Any = None
    saved: Any = None
    widget: Any = dc_field(default=None, repr=False)  # the bubble (HTML widget or _AssistantBubble)


class ChatPanel(SaveDestination):
    """A chat over your library with Save as Note.

    ``ChatPanel()`` uses the default workbench (``zocrates_nb.open_workbench()``, ``ZOCRATES_HOME``
    honoured); ``ChatPanel(wb)`` uses yours. Display it as the last expression of a cell.
    """

    def __init__(self, workbench: Any = None) -> None:
        if workbench is None:
            workbench = default_workbench()
        self.workbench = workbench
        self.session = workbench.new_session()
        self.messages: list[ChatMessage] = []
        self._build()

    # ------------------------------------------------------------------ layout
    def _build(self) -> None:
        self.log = widgets.VBox([], layout=widgets.Layout(width="100%"))
        self.log.add_class("zc-chat-log")
        self.error = widgets.HTML("")
        self.error.add_class("zc-chat-error")
        self.status = widgets.HTML("")
        self.status.add_class("zc-chat-status")
        for line in (self.error, self.status):  # empty lines take no room in the panel
            line.layout.display = "none"
            line.observe(_hide_when_empty, names="value")

        self.input = ChatInput(layout=widgets.Layout(width="100%"))
        self.input.add_class("zc-chat-input")
        self.input.on_msg(self._on_input_msg)

        self._build_destination()
        listed: list[dict] = getattr(self.workbench, "libraries", list)()  # the user's own and each group's
        self.library_picker = widgets.Dropdown(options=library_options(listed), description="Search in")
        self.library_picker.add_class("zc-chat-library")
        self.library_picker.layout.display = None if len(listed) > 1 else "none"  # one library: nothing to pick
        self.save_session_button = widgets.Button(
            description="Save session as Note",
            icon="save",
            tooltip="Save the whole conversation as one note",
            layout=widgets.Layout(width="auto"),
        )
        self.save_session_button.add_class("zc-save-session")
        self.save_session_button.on_click(lambda _b: self._guarded(self.save_session))

        header = widgets.HTML(self._header_html())
        header.add_class("zc-chat-header")
        save_row = widgets.HBox(
            [self.collection_picker, self.paper_search, self.parent_picker, self.save_session_button],
            layout=widgets.Layout(flex_flow="row wrap"),
        )
        save_row.add_class("zc-chat-save-row")
        # the offer looks for a Zotero library on this computer (a copy of its database): on a
        # thread, so a big library never holds up opening the panel; wait_for_offer() for code
        self.offer: list = []
        self.offer_box = widgets.HBox([])
        self._offer_ready = threading.Event()
        threading.Thread(target=self._find_offer, name="zocrates-zotero-offer", daemon=True).start()
        self.root = widgets.VBox(
            [header, self.offer_box, self.log, self.error, self.library_picker, self.input, save_row, self.status],
            layout=widgets.Layout(width="100%"),
        )
        self.root.add_class("zc-chat")

    def _header_html(self) -> str:
        try:
            source = self.workbench.library_label()
        except Exception as exc:  # a header must not stop the panel from opening
            source = f"library unavailable ({type(exc).__name__})"
        mode = "language model configured" if self._llm_configured() else "evidence-only mode (no LLM configured)"
        return (
            f'<div class="zc-chat-title"><strong>Zocrates</strong> '
            f'<span class="zc-muted">· {render.escape(source)} · {render.escape(mode)}</span></div>'
        )

    def _llm_configured(self) -> bool:
        try:
            return bool(self.workbench.llm_configured())
        except Exception:
            return False

    def wait_for_offer(self, timeout: float = 30.0) -> list:
        """The "use my Zotero library" button once the search for one has finished ([] when none)."""
        self._offer_ready.wait(timeout)
        return self.offer

    def _find_offer(self) -> None:
        try:
            self.offer = self._offer_button()
            self.offer_box.children = tuple(self.offer)
        finally:
            self._offer_ready.set()

    def _offer_button(self) -> list:
        """On the demo library, a one-line offer to switch to a detected Zotero library (never automatic)."""
        try:
            offer = self.workbench.zotero_offer() if hasattr(self.workbench, "zotero_offer") else None
        except ZocratesError:
            offer = None
        except Exception as exc:  # noqa: BLE001 — an unreadable Zotero folder must not break the panel
            self.status.value = (
                f"Could not look for a Zotero library: {render.escape(type(exc).__name__)}: {render.escape(exc)}"
            )
            offer = None
        if offer is None:
            return []
        button = widgets.Button(
            description=offer.offer,
            icon="exchange",
            layout=widgets.Layout(width="auto"),
            tooltip=f"Switch this data directory to {offer.path} and sync it",
        )
        button.add_class("zc-use-zotero")

        def use(_b: Any) -> None:
            self._guarded(lambda: self.workbench.use_zotero(offer.path))
            button.layout.display = "none"
            self.refresh()

        button.on_click(use)
        return [button]

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.root._repr_mimebundle_(**kwargs)

    # ------------------------------------------------------------------ errors
    def _show_error(self, exc: BaseException) -> None:
        if isinstance(exc, ZocratesError):
            hint = f'<br><span class="zc-hint">→ {render.escape(exc.hint)}</span>' if exc.hint else ""
            text = f"{render.escape(exc.message)}{hint}"
        else:
            text = f"Unexpected error: {render.escape(type(exc).__name__)}: {render.escape(exc)}"
        self.error.value = f'<div class="zc-error-line" role="alert">⚠ {text}</div>'

    def _clear_error(self) -> None:
        self.error.value = ""

    def _guarded(self, action: Callable[[], Any]) -> Any:
        """Run a button action; its error is already shown in the panel, so do not raise into the void."""
        try:
            return action()
        except Exception:
            return None

    # ------------------------------------------------------------------ asking
    def _on_input_msg(self, _widget: Any, content: dict, _buffers: Any) -> None:
        if content.get("event") == "submit":
            if "value" in content:
                self.input.value = str(content["value"])
            self.submit()

    def _send_from_input(self) -> Any:
        return self.send(self.input.value)

    def submit(self) -> Any:
        """What Enter / Send do: send the text in the input line (errors shown in the panel)."""
        return self._guarded(self._send_from_input)

    def send(self, text: str) -> Any:
        """Ask ``text``; adds a user bubble and a streamed assistant bubble. Returns the Answer."""
        self._clear_error()
        question = (text or "").strip()
        if not question:
            exc = ZocratesError("There is no question to send.", "Type a question, then press Enter or Send.")
            self._show_error(exc)
            raise exc
        self.input.value = ""
        self._add_user(question)
        bubble = _AssistantBubble(self)
        self.input.disabled = True
        try:
            scope = {"library": self.library_picker.value} if self.library_picker.value else {}
            answer = self.workbench.ask(question, session=self.session, on_token=bubble.on_token, **scope)
        except Exception as exc:
            bubble.failed(exc)
            self._show_error(exc)
            raise
        finally:
            self.input.disabled = False
        message = ChatMessage("assistant", getattr(answer, "text", ""), answer=answer, widget=bubble)
        bubble.finish(answer)
        self.messages.append(message)
        return answer

    def _add_user(self, question: str) -> None:
        bubble = widgets.HTML(f'<div class="zc-bubble-text">{render.escape(question)}</div>')
        bubble.add_class("zc-bubble")
        bubble.add_class("zc-bubble-user")
        self.messages.append(ChatMessage("user", question, widget=bubble))
        self.log.children = (*self.log.children, bubble)

    # ------------------------------------------------------------------ saving
    @property
    def answers(self) -> list[ChatMessage]:
        """The assistant messages, in order (what ``save_answer(index)`` indexes)."""
        return [m for m in self.messages if m.role == "assistant"]

    def save_answer(
        self,
        index: int = -1,
        collection_key: str | None = None,
        parent_key: str | None = None,
        title: str | None = None,
    ) -> Any:
        """Save one answer as a note (default: the last; destination: the dropdowns). Returns SavedNote."""
        self._clear_error()
        try:
            answers = self.answers
            if not answers:
                raise ZocratesError("There is no answer to save yet.", "Ask a question first.")
            try:
                message = answers[index]
            except IndexError:
                raise ZocratesError(
                    f"There is no answer number {index}; this chat has {len(answers)}.",
                    "Use an index between 0 and the number of answers − 1 (or −1 for the last).",
                ) from None
            collection_key, parent_key = self._destination(collection_key, parent_key)
            saved = self.workbench.save_answer(
                message.answer, collection_key=collection_key, parent_key=parent_key, title=title
            )
        except Exception as exc:
            self._show_error(exc)
            raise
        message.saved = saved
        self._confirm(saved, bubble=message.widget)
        return saved

    def save_session(
        self, collection_key: str | None = None, parent_key: str | None = None, title: str | None = None
    ) -> Any:
        """Save the whole conversation as one note (destination: arguments, else the dropdowns)."""
        self._clear_error()
        try:
            collection_key, parent_key = self._destination(collection_key, parent_key)
            saved = self.workbench.save_session(
                self.session, collection_key=collection_key, parent_key=parent_key, title=title
            )
        except Exception as exc:
            self._show_error(exc)
            raise
        self._confirm(saved)
        return saved

    def _confirm(self, saved: Any, bubble: Any = None) -> None:
        text = render.saved_message(
            saved.title,
            collection=self._collection_names.get(saved.collection_key) if saved.collection_key else None,
            parent=self._paper_titles.get(saved.parent_key, saved.parent_key) if saved.parent_key else None,
        )
        if getattr(saved, "destination", "") == "outbox":  # searchable now, but say where it really is
            text += f" — not yet in Zotero: {saved.reason}"
        html = f'<span class="zc-saved">✓ {render.escape(text)}</span>'
        if isinstance(bubble, _AssistantBubble):
            bubble.saved_line.value = html  # an answer's confirmation sits under that answer
            self.status.value = ""
        else:
            self.status.value = html

    def refresh(self) -> None:
        """Re-read collections and papers into the dropdowns (after the library changed)."""
        self._fill_pickers()


class _AssistantBubble:
    """One assistant bubble: streamed body, expandable sources, and its own Save as Note button."""

    def __init__(self, panel: ChatPanel) -> None:
        self.panel = panel
        self.buffer: list[str] = []
        self._last_render = 0.0
        self.body = widgets.HTMLMath('<span class="zc-muted">Searching your library…</span>')
        self.body.add_class("zc-answer-body")
        self.sources = widgets.HTML("")
        self.sources.add_class("zc-sources-box")
        self.save_button = widgets.Button(
            description="Save as Note",
            icon="bookmark",
            disabled=True,
            tooltip="Save this answer as a Zotero note (destination below)",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        self.save_button.add_class("zc-save-note")
        self.saved_line = widgets.HTML("")
        self.saved_line.add_class("zc-saved-line")
        actions = widgets.HBox([self.save_button, self.saved_line])
        actions.add_class("zc-answer-actions")
        self.root = widgets.VBox([self.body, self.sources, actions])
        self.root.add_class("zc-bubble")
        self.root.add_class("zc-bubble-assistant")
        panel.log.children = (*panel.log.children, self.root)

    def on_token(self, token: str) -> None:
        """Streaming callback for ``workbench.ask``: append and re-render (throttled)."""
        self.buffer.append(str(token))
        now = time.monotonic()
        if now - self._last_render >= STREAM_RENDER_INTERVAL:
            self._last_render = now
            self.body.value = render.markdown_to_html("".join(self.buffer))

    def finish(self, answer: Any) -> None:
        self.body.value = answers.render_answer_body(getattr(answer, "text", ""))
        self.sources.value = answers.render_sources(answers.answer_sources(answer))
        answer_number = len(self.panel.answers)  # this answer's index once appended
        self.panel.suggest_parent(answer)
        self.save_button.disabled = False
        self.save_button.on_click(lambda _b: self.panel._guarded(lambda: self.panel.save_answer(index=answer_number)))

    def failed(self, exc: BaseException) -> None:
        partial = "".join(self.buffer)
        self.body.value = (
            render.markdown_to_html(partial) if partial else ""
        ) + '<p class="zc-muted">No answer (see the error below).</p>'


def _hide_when_empty(change: dict) -> None:
    change["owner"].layout.display = None if change["new"] else "none"
