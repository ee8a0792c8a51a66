"""``wb.export(answer, fmt)``: gather the cited papers' metadata and make the writing formats.

The pure work (keys, CSL, BibTeX, Pandoc Markdown) lives in ``zocrates_nb.export``; this module
reads what it needs from the corpus (each cited paper's manifest, a cited note's parent paper) and
the answer's own online evidence, and writes the files where asked.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zocrates_nb.errors import NotFoundError, ZocratesError
from zocrates_nb.export.bibtex import bibtex
from zocrates_nb.export.csl import (
    Reference,
    citation_keys,
    csl_items,
    reference_from_manifest,
    reference_from_online,
)
from zocrates_nb.export.pandoc import pandoc_markdown
from zocrates_nb.storage.atomic import write_atomically
from zocrates_nb.storage.space import elsewhere_hint, unavailable, write_problem

if TYPE_CHECKING:
    from zocrates_nb.agents.answer import Answer

__all__ = ["EXPORT_FORMATS", "Export", "export_answer"]

log = logging.getLogger(__name__)

#: format -> the file suffix it is written with
EXPORT_FORMATS = {"markdown": ".md", "bibtex": ".bib", "csl-json": ".json"}


@dataclass(frozen=True)
class Export:
    """One answer in a writing format: ``text`` (the file's content) and, for Markdown, ``bib`` beside it."""

    fmt: str
    text: str
    references: list[dict[str, str]] = field(default_factory=list)  # [{"citekey", "title"}]
    bib: str | None = None

    def written_to(self, path: str | Path | None) -> Export:
        """This export, written to ``path`` first when one is given (``Workbench.export``)."""
        if path is not None:
            self.write(path)
        return self

    def write(self, path: str | Path) -> list[Path]:
        """Write the file (and, for Markdown, the ``.bib`` its header names, beside it); returns the paths.

        Each file is replaced atomically (a failed write never empties an earlier export of the same
        name); a full disk or a read-only folder is one clear error, and a folder made for it is taken
        away again."""
        target = Path(path).expanduser()
        if target.is_dir():
            raise ZocratesError(
                f"{target} is a folder.", f"Give a file name, e.g. {target / ('answer' + EXPORT_FORMATS[self.fmt])}."
            )
        made = next((p for p in reversed(target.parents) if not p.exists()), None)  # the first folder made here
        files: list[tuple[Path, str]] = []
        text = self.text
        if self.bib is not None:
            bib_path = target.with_suffix(".bib")
            text = text.replace('bibliography: "answer.bib"', f"bibliography: {json.dumps(bib_path.name)}", 1)
            files.append((bib_path, self.bib))
        files.insert(0, (target, text))
        try:
            for where, content in files:
                write_atomically(where, content.encode("utf-8"))
        except OSError as exc:
            if made is not None:
                shutil.rmtree(made, ignore_errors=True)
            if problem := write_problem(target, exc):
                error = unavailable("The export", target, problem, exc)
                error.hint = elsewhere_hint(problem)
                raise error from exc
            raise
        return [where for where, _ in files]

    def _repr_markdown_(self) -> str:
        """The file's text as a code block: shown, never rendered (it is the user's text, not ours to run)."""
        fence = "`" * max(3, 1 + max((len(run) for run in _backtick_runs(self.text)), default=0))
        return f"{fence}{'markdown' if self.fmt == 'markdown' else ''}\n{self.text}\n{fence}"


def _backtick_runs(text: str) -> list[str]:
    return re.findall(r"`+", text)


def _references(corpus: Any, answer: Answer) -> list[Reference]:
    """The answer's cited papers (a cited child note or annotation brings its paper) and online candidates,
    in citation order."""
    found: dict[str, Reference] = {}
    online = {e.get("title"): e for e in answer.evidence if e.get("kind") == "online"}
    for citation in answer.citations:
        if citation.kind == "online":
            entry = online.get(citation.title) or {"title": citation.title, "url": citation.url}
            ref = reference_from_online(entry, citation.citation)
            found.setdefault(ref.item_id, ref)
            continue
        if not citation.key:
            continue
        try:
            manifest = corpus.manifest(citation.key, event="export")
            if citation.kind in ("note", "annotation"):  # a child note or an annotation brings its paper
                if not manifest.get("parent_key"):
                    continue
                manifest = corpus.manifest(manifest["parent_key"], event="export")
        except NotFoundError as err:  # gone since the answer (deleted in Zotero): export the rest
            log.warning("export: %s is no longer in the corpus (%s)", citation.key, err.message)
            continue
        if manifest.get("content_type") == "text/paper":
            found.setdefault(str(manifest["key"]), reference_from_manifest(manifest))
    return list(found.values())


def export_answer(corpus: Any, answer: Answer, fmt: str = "markdown") -> Export:
    """``answer`` as ``fmt`` (``markdown``: Pandoc/Quarto with ``[@citekey]`` and a ``.bib``;
    ``bibtex``; ``csl-json``), with Better BibTeX keys where the library has them."""
    if fmt not in EXPORT_FORMATS:
        raise ZocratesError(f"Unknown export format {fmt!r}.", f"Use one of: {', '.join(EXPORT_FORMATS)}.")
    references = _references(corpus, answer)
    keys = citation_keys(references)
    items = csl_items(references, keys)
    listing = [{"citekey": keys[r.item_id], "title": str(r.csl.get("title") or "")} for r in references]
    if fmt == "csl-json":
        return Export(fmt, json.dumps(items, ensure_ascii=False, indent=2) + "\n", listing)
    if fmt == "bibtex":
        return Export(fmt, bibtex(items), listing)
    markdown, _ = pandoc_markdown(
        answer.text, references, keys, title=answer.question or "Answer", bibliography="answer.bib"
    )
    return Export(fmt, markdown, listing, bib=bibtex(items))
