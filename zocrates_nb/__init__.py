"""zocrates_nb — a notebook-first research workbench over your Zotero library.

The public API is small on purpose::

    from zocrates_nb import open_workbench, ChatPanel, ProfileEditor
    wb = open_workbench()          # the demo library unless Zotero is configured
    wb.search("cell-type deconvolution of Visium spots")
    ChatPanel(wb)

Names are imported lazily so that ``import zocrates_nb`` stays cheap (the Jupyter
server extension imports this package at server start).
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["Workbench", "open_workbench", "ChatPanel", "ProfileEditor", "__version__"]

_LAZY = {
    "Workbench": ("zocrates_nb.workbench.core", "Workbench"),
    "open_workbench": ("zocrates_nb.workbench.core", "open_workbench"),
    "default_workbench": ("zocrates_nb.workbench.core", "default_workbench"),
    "ChatPanel": ("zocrates_nb.widgets", "ChatPanel"),
    "ProfileEditor": ("zocrates_nb.widgets", "ProfileEditor"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'zocrates_nb' has no attribute {name!r}")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """Lets ``jpserver_extensions = {"zocrates_nb": true}`` load the REST handlers too."""
    return [{"module": "zocrates_nb.server"}]
