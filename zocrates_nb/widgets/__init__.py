"""Notebook widgets: ``ChatPanel`` (chat with Save as Note) and ``ProfileEditor``.

Only this package imports ipywidgets/anywidget. Names are loaded lazily so that importing the
package (or ``zocrates_nb.widgets.render``, which re-exports the one renderer in
``zocrates_nb.display.render``) never pulls in ipywidgets.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChatPanel", "ProfileEditor"]

_LAZY = {
    "ChatPanel": ("zocrates_nb.widgets.chat", "ChatPanel"),
    "ChatMessage": ("zocrates_nb.widgets.chat", "ChatMessage"),
    "ProfileEditor": ("zocrates_nb.widgets.profile_editor", "ProfileEditor"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'zocrates_nb.widgets' has no attribute {name!r}")
