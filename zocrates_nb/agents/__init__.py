"""The agents: coordinator → library search (ReAct) → library / online synthesizers.

``coordinator.Coordinator`` runs a chat turn; ``llm.LLMClient`` is the only
place that talks to a language model; ``clean`` keeps Zotero keys out of what
people read; ``evidence_only`` answers when no model is configured. Prompts are
Markdown files in ``prompts/``.
"""

from __future__ import annotations

from zocrates_nb.agents.answer import Answer, ChatSession, Citation

__all__ = ["Answer", "ChatSession", "Citation"]
