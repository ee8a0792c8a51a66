"""Old home of the HTML builders, kept importable: the renderers are ``zocrates_nb.display.render``
and ``zocrates_nb.display.answers``.

Why a re-export: the chat panel and existing notebooks import ``zocrates_nb.widgets.render``; the
builders themselves live outside ``widgets/`` so that engine objects can render without the UI package.
"""

from __future__ import annotations

from zocrates_nb.display.answers import answer_sources, render_answer, render_answer_body, render_source, render_sources
from zocrates_nb.display.render import (
    SNIPPET_CHARS,
    BundleView,
    describe_destination,
    escape,
    field,
    kind_label,
    markdown_to_html,
    render_bundle,
    render_search_hit,
    render_search_results,
    saved_message,
    snippet,
)
from zocrates_nb.records import INLINE_WORDS

__all__ = [
    "INLINE_WORDS",
    "SNIPPET_CHARS",
    "BundleView",
    "answer_sources",
    "describe_destination",
    "escape",
    "field",
    "kind_label",
    "markdown_to_html",
    "render_answer",
    "render_answer_body",
    "render_bundle",
    "render_search_hit",
    "render_search_results",
    "render_source",
    "render_sources",
    "saved_message",
    "snippet",
]
