"""Model-based test: random sequences of library edits, sync, save, search, read, rebuild and crashes,
compared after every step with a plain dict model of what the corpus and search must hold (issue 10).

The model: ``library`` (key → marker words, what Zotero holds) and ``corpus`` (what sync/save/read
have brought in). Invariants after every step: the corpus's note keys are exactly the model's;
the FTS index holds exactly the meta rows; every note the model says is in the corpus is found by
search under its current marker word and served with it, never under an older one (an edit is
never served stale); a note the corpus does not hold (trashed and synced, or not synced yet) is
found under none of its markers, and reading a trashed one raises NotFoundError.

CI size: ZOCRATES_STATEFUL_EXAMPLES (default 3) × ZOCRATES_STATEFUL_STEPS (default 12); `make soak`
scales both up. Hypothesis prints the failing sequence of steps.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

EXAMPLES = int(os.environ.get("ZOCRATES_STATEFUL_EXAMPLES", "3"))
STEPS = int(os.environ.get("ZOCRATES_STATEFUL_STEPS", "12"))
WORDS = st.lists(
    st.sampled_from(
        ["wombat", "ledger", "quokka", "burrow", "spines", "tidal", "marsh", "lantern", "copper", "meadow"]
    ),
    min_size=1,
    max_size=4,
).map(" ".join)
STATS = {"steps": 0, "examples": 0}
TEMPLATE: dict[str, Path] = {}


class CorpusMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="zocrates-stateful-"))
        self.home = self.tmp / "home"
        shutil.copytree(TEMPLATE["path"], self.home)
        self.wb = self._open()
        self.counter = 0
        self.rebuilds = 0
        self.library: dict[str, str] = {}  # our notes in the library: key → marker + words
        self.corpus: dict[str, str] = {}  # our notes the corpus must hold now
        self.markers: dict[str, list[str]] = {}  # every marker a key ever had (oldest first)
        self.base = set(self.wb.corpus.keys("note"))
        STATS["examples"] += 1

    def _open(self):
        from zocrates_nb.workbench.core import Workbench

        return Workbench(self.home, auto_sync=False)

    def _text(self, words: str) -> str:
        self.counter += 1
        return f"zqm{self.counter}x {words}"

    def _remember(self, key: str, text: str) -> None:
        self.markers.setdefault(key, []).append(_marker(text))

    # ------------------------------------------------------------------ rules
    @initialize()
    def start(self) -> None:
        STATS["steps"] += 0

    @rule(words=WORDS)
    def create_in_library(self, words: str) -> None:
        text = self._text(words)
        note = self.wb.source.create_note(f"<p>{text}</p>")
        self.library[note.key] = text
        self._remember(note.key, text)
        STATS["steps"] += 1

    @precondition(lambda self: self.library)
    @rule(data=st.data(), words=WORDS)
    def edit_in_library(self, data, words: str) -> None:
        key = data.draw(st.sampled_from(sorted(self.library)))
        text = self._text(words)
        self.wb.source.update_note(key, f"<h1>Edited</h1><p>{text}</p>")
        self.library[key] = text
        self._remember(key, text)
        STATS["steps"] += 1

    @precondition(lambda self: self.library)
    @rule(data=st.data())
    def trash_in_library(self, data) -> None:
        key = data.draw(st.sampled_from(sorted(self.library)))
        self.wb.source.trash_note(key)
        del self.library[key]
        STATS["steps"] += 1

    @rule()
    def sync(self) -> None:
        report = self.wb.sync(progress=False)
        assert report.counts["failed"] == 0, report.summary()
        self.corpus = dict(self.library)
        STATS["steps"] += 1

    @rule(words=WORDS)
    def save(self, words: str) -> None:
        text = self._text(words)
        saved = self.wb.save_note("Saved " + words.split()[0], text)
        self.library[saved.key] = self.corpus[saved.key] = text
        self._remember(saved.key, text)
        STATS["steps"] += 1

    @precondition(lambda self: self.corpus)
    @rule(data=st.data())
    def read_document(self, data) -> None:
        """Reading re-materialises a stale note, or drops one trashed in the library."""
        from zocrates_nb.errors import NotFoundError

        key = data.draw(st.sampled_from(sorted(self.corpus)))
        if key in self.library:
            assert self.library[key] in self.wb.read_document(key)
            self.corpus[key] = self.library[key]
        else:
            with pytest.raises(NotFoundError):
                self.wb.read_document(key)
            del self.corpus[key]
        STATS["steps"] += 1

    @precondition(lambda self: self.rebuilds < 1)  # re-embeds every chunk: once per example is enough
    @rule()
    def rebuild(self) -> None:
        self.wb.index.rebuild(self.wb.corpus)
        self.rebuilds += 1
        STATS["steps"] += 1

    @rule(words=WORDS)
    def crash_during_save(self, words: str) -> None:
        """The process dies after the FTS COMMIT and before the vectors: the next process must cope."""
        text = self._text(words)
        before = {n.key for n in self.wb.source.snapshot().notes}

        def die(*args, **kwargs):
            raise KeyboardInterrupt("simulated crash")

        self.wb.index._sync_ids = die
        with pytest.raises(KeyboardInterrupt):
            self.wb.save_note("Crash " + words.split()[0], text)
        key = ({n.key for n in self.wb.source.snapshot().notes} - before).pop()
        self.library[key] = self.corpus[key] = text
        self._remember(key, text)
        self.wb = self._open()  # the dead process's objects are abandoned, not closed
        STATS["steps"] += 1

    # ------------------------------------------------------------------ invariants
    @invariant()
    def corpus_matches_the_model(self) -> None:
        held = set(self.wb.corpus.keys("note"))
        assert held - self.base == set(self.corpus)
        meta = set(self.wb.corpus.keys())
        indexed = {k for (k,) in self.wb.index._conn.execute("SELECT key FROM index_documents")}
        assert indexed == meta

    @invariant()
    def every_held_note_is_found_and_trashed_ones_are_not(self) -> None:
        for key, text in self.corpus.items():
            found = self.wb.search(_marker(text), k=10).keys()
            assert key in found, (key, _marker(text), found)
        for key, markers in self.markers.items():
            current = _marker(self.corpus[key]) if key in self.corpus else None
            for marker in markers:  # lexical: only a note holding the marker word can match it
                if marker != current:
                    found = [h.key for h in self.wb.index.search(marker, k=10, mode="lexical")]
                    assert key not in found, (key, marker, "not held under this marker", self.corpus.get(key))

    @invariant()
    def edited_notes_are_served_with_their_current_words_and_trashed_ones_are_gone(self) -> None:
        """Read only where reading changes nothing: a note whose library copy is the corpus's (the fast
        path), and a note that neither holds (trashed and synced or read): it must raise NotFoundError."""
        from zocrates_nb.errors import NotFoundError

        for key, markers in self.markers.items():
            if key in self.corpus and self.library.get(key) == self.corpus[key]:
                served = self.wb.read_document(key)
                current = _marker(self.corpus[key])
                assert current in served, (key, current, served)
                assert not [m for m in markers if m != current and m in served.split()], (key, markers, served)
            elif key not in self.corpus and key not in self.library:
                with pytest.raises(NotFoundError):
                    self.wb.read_document(key)

    def teardown(self) -> None:
        self.wb.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _marker(text: str) -> str:
    """The unique word (``zqm<n>x``) a note text starts with."""
    return text.split()[0]


def test_corpus_state_machine(demo_template):
    TEMPLATE["path"] = demo_template
    run_state_machine_as_test(
        CorpusMachine,
        settings=settings(
            max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, suppress_health_check=list(HealthCheck)
        ),
    )
    print(f"\n[test_stateful] examples={STATS['examples']} steps={STATS['steps']}")
