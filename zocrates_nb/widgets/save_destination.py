"""Where a chat's Save as Note goes: the collection and parent-paper pickers of ``ChatPanel`` (a mixin).

Why this module exists: choosing a destination is its own idea apart from chatting. A note is
standalone (optionally in a collection) xor the child of a paper, and a paper is found by typing
(a type-ahead over the library, the most cited paper of the last answer offered first). The
pickers are plain ipywidgets owned by the panel; ``ChatPanel`` inherits ``SaveDestination`` and
``chat`` re-exports the constants (split out of ``widgets/chat.py``, issue 12).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

NO_COLLECTION = "Unfiled (My Library)"
NO_PARENT = "— none (standalone note) —"
#: a small library lists every paper until the user types; a big one lists the top 20 matches
SHOW_ALL_PAPERS_UP_TO = 200
#: a Dropdown treats the value None as "nothing selected" (a blank box), so "none" is ""
_NONE = ""


class SaveDestination:
    """The destination pickers of a chat panel: a collection, or a parent paper found by typing."""

    workbench: Any

    def _build_destination(self) -> None:
        """Create the pickers and fill them from the workbench's library."""
        self.collection_picker = widgets.Dropdown(
            description="Collection:", options=[(NO_COLLECTION, _NONE)], style={"description_width": "initial"}
        )
        self.collection_picker.add_class("zc-save-collection")
        self.parent_picker = widgets.Dropdown(
            description="or child of:", options=[(NO_PARENT, _NONE)], style={"description_width": "initial"}
        )
        self.parent_picker.add_class("zc-save-parent")
        self.paper_search = widgets.Text(
            placeholder="type to find a paper (title, author, year)…",
            continuous_update=True,
            layout=widgets.Layout(width="18em"),
        )
        self.paper_search.add_class("zc-save-paper-search")
        self.paper_search.observe(lambda change: self.filter_parents(change["new"]), names="value")
        self._suggested: str | None = None
        self._fill_pickers()
        self.collection_picker.observe(self._picked_collection, names="value")
        self.parent_picker.observe(self._picked_parent, names="value")

    def _fill_pickers(self) -> None:
        """Fill the destination pickers: the collection tree, and the papers' type-ahead index."""
        from zocrates_nb.widgets.picker import PaperIndex, collection_tree

        collections = self.workbench.collections()
        self._collection_names = {c.key: c.name for c in collections}
        papers = self.workbench.papers()
        self._paper_titles = {p.key: p.title for p in papers}
        self._paper_index = PaperIndex.build(papers)
        self.collection_picker.options = [(NO_COLLECTION, _NONE)] + collection_tree(collections)
        self.filter_parents(self.paper_search.value)

    def filter_parents(self, query: str) -> list[tuple[str, str]]:
        """Show the top 20 papers matching ``query`` (the suggested parent first); keep the current pick."""
        from zocrates_nb.widgets.picker import TOP_N, filter_papers

        small = not query.strip() and len(self._paper_index) <= SHOW_ALL_PAPERS_UP_TO
        matches = filter_papers(self._paper_index, query, limit=len(self._paper_index) if small else TOP_N)
        keep = self.parent_picker.value
        head = [(NO_PARENT, _NONE)]
        if self._suggested and self._suggested in self._paper_titles:
            head.append((f"★ most cited: {self._paper_titles[self._suggested][:60]}", self._suggested))
        if keep and keep not in {k for _, k in head + matches} and keep in self._paper_titles:
            head.append((self._paper_titles[keep][:70], keep))
        shown = head + [m for m in matches if m[1] != self._suggested]
        self.parent_picker.options = shown
        self.parent_picker.value = keep if keep in {k for _, k in shown} else _NONE
        return matches

    def suggest_parent(self, answer: Any) -> str | None:
        """Offer the paper ``answer`` cites most as the parent (listed first; not selected for you)."""
        from zocrates_nb.widgets.picker import suggested_parent

        self._suggested = suggested_parent(answer, frozenset(self._paper_titles))
        self.filter_parents(self.paper_search.value)
        return self._suggested

    def _picked_collection(self, change: dict) -> None:
        if change["new"] and self.parent_picker.value:
            self.parent_picker.value = _NONE  # a note is standalone xor a child

    def _picked_parent(self, change: dict) -> None:
        if change["new"] and self.collection_picker.value:
            self.collection_picker.value = _NONE

    def _destination(self, collection_key: str | None, parent_key: str | None) -> tuple[str | None, str | None]:
        if collection_key is None and parent_key is None:
            return self.collection_picker.value or None, self.parent_picker.value or None
        return collection_key, parent_key
