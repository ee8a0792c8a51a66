"""Compatibility shim: the agent tests' scripted model now lives in ``tests/test_agents.py``.

The in-memory corpus/index stand-in that used to be here is gone — every agent test runs on the
real stack (demo library, FTS5 + ChromaDB). Only ``tests/test_widgets.py`` still imports from this
module; once it imports ``ScriptedModel`` from ``tests.test_agents`` this file can be deleted.
"""

from __future__ import annotations

from tests.test_agents import ScriptedModel, role_of

__all__ = ["ScriptedModel", "role_of"]
