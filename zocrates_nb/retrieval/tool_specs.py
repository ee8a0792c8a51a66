"""The agent tools as the model is told about them: the OpenAI function schemas of the three tools.

Why apart from retrieval/tools.py: this is the tools' contract with the model (names, argument
schemas, what the evidence headers look like), read by the agents when they call the model; the
tools module is the code that answers those calls.
"""

from __future__ import annotations

from zocrates_nb.records import INLINE_WORDS

__all__ = ["MAX_AGENT_K", "TOOL_SPECS"]

#: the agents' search tool returns at most this many results: more evidence only dilutes a model's context
MAX_AGENT_K = 50

TOOL_SPECS: list[dict] = [
    {
        "type": "function",
        "function": {
            "name": "search_corpus",
            "description": (
                "Search the user's library: their own notes and their papers. Returns up to k results, one per "
                f"document. Short notes (under {INLINE_WORDS} words) are quoted in full as '> ' lines. "
                "Longer notes show a title and abstract; call read_document with their key for the full text. "
                "Paper results show title, first author, year and the matching passage. Headers give the keys to cite: "
                "[Note Key: K], [Note Key: K, Parent Paper Key: P] or [Paper Key: P] (with the page, e.g. "
                "[Paper Key: P, p. 12], when the passage comes from the PDF). Search several times "
                "with different wording if the first results miss."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Natural-language description of what to find."},
                    "k": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_AGENT_K,
                        "default": 10,
                        "description": "How many documents to return.",
                    },
                    "filters": {
                        "type": "object",
                        "additionalProperties": False,
                        "description": "Optional filters.",
                        "properties": {
                            "item_type": {
                                "type": "string",
                                "description": "'note', 'paper', or a Zotero item type such as 'journalArticle'.",
                            },
                            "collection": {"type": "string", "description": "Collection key or name."},
                            "parent_key": {"type": "string", "description": "Only notes attached to this paper key."},
                        },
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_document",
            "description": (
                "Read a note or paper in full as Markdown, by the key shown in search results. "
                "Pass a section id from get_document_toc to read one section of a long document."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": "The 8-character document key, e.g. 'ABCD2345'."},
                    "section": {"type": "string", "description": "Optional section id from get_document_toc."},
                },
                "required": ["key"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_document_toc",
            "description": (
                "List the headings of a long note or paper (id, level, title, line range) so you "
                "can read only the section you need with read_document."
            ),
            "parameters": {
                "type": "object",
                "properties": {"key": {"type": "string", "description": "The 8-character document key."}},
                "required": ["key"],
                "additionalProperties": False,
            },
        },
    },
]
