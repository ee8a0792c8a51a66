"""Pure HTML builders for everything the notebook shows: search results, answers, note bundles.

The one renderer: ``_repr_html_`` of engine objects (``SearchResults``, ``Answer``, ``BundleView``,
``SavedNote``) and the chat panel in ``widgets/`` all call these functions; agents and tools hand back
data. So this module lives outside ``widgets/``, imports no UI library and touches no files, and its
output can be tested as plain strings. Why sanitize: note HTML, note Markdown and LLM answers are
attacker-influenced, and JupyterLab runs ``<script>`` in trusted outputs (stored XSS in the Jupyter
origin). Every untrusted fragment goes through ``zocrates_nb.sanitize.sanitize_html``; every plain
string goes through ``html.escape``; only the structure built here is trusted.

LaTeX (``$…$`` and ``$$…$$``) is protected from the Markdown parser and left as text so that
JupyterLab's MathJax (or the ``HTMLMath`` widget) can typeset it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from zocrates_nb.display.annotations import annotation_cell, annotation_title
from zocrates_nb.display.pages import hit_library, library_fields, open_pdf_url, page_span, select_url
from zocrates_nb.records import INLINE_WORDS, kind_of_content_type

SNIPPET_CHARS = 320

_KIND_LABELS = {"note": "note", "child_note": "child note", "paper": "paper", "annotation": "annotation"}


def escape(text: object) -> str:
    """Escape any value as HTML text (``None`` → empty)."""
    return html.escape("" if text is None else str(text), quote=True)


def markdown_to_html(markdown: str | None) -> str:
    """Markdown (a note, an answer) → sanitized HTML, with LaTeX kept as ``$…$`` text for MathJax.

    The Markdown rendering is the one Save as Note uses (``convert.note_html``: math protected,
    raw HTML escaped); the result still passes the display sanitizer before it is shown.
    """
    if not markdown:
        return ""
    from zocrates_nb.convert.note_html import markdown_to_note_body
    from zocrates_nb.sanitize import sanitize_html  # the one nh3 owner

    return sanitize_html(markdown_to_note_body(markdown))


def field(obj: Any, name: str, default: Any = None) -> Any:
    """Read ``name`` from a dataclass/object or a mapping: citations and evidence come as either."""
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def kind_label(kind: str | None, parent: object = None) -> str:
    """Human label: "paper", "note" or "child note"."""
    if kind == "note" and parent:
        return "child note"
    return _KIND_LABELS.get(kind or "", kind or "document")


def snippet(text: str | None, limit: int = SNIPPET_CHARS) -> str:
    """The first ``limit`` characters of ``text``, cut at a word boundary, with an ellipsis."""
    text = (text or "").strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " …"


def _word_count(item: Any, *, count_text: bool = False) -> int | None:
    """The document's word count; with ``count_text``, else the words of the text at hand (a search hit's
    chunk, which is the whole note when the note is short)."""
    words = field(item, "word_count")
    if isinstance(words, int) or not count_text:
        return words if isinstance(words, int) else None
    text = field(item, "text")
    return len(text.split()) if isinstance(text, str) and text.strip() else None


def is_inlined(item: Any, *, count_text: bool = False) -> bool:
    """A short note is shown whole, as the agents' evidence text quotes it (``INLINE_WORDS``)."""
    explicit = field(item, "inlined")
    if explicit is not None:
        return bool(explicit)
    words = _word_count(item, count_text=count_text)
    return field(item, "kind") == "note" and words is not None and 0 < words < INLINE_WORDS


def _ranks_text(ranks: Mapping[str, Any] | None) -> str:
    if not ranks:
        return ""
    parts = [f"{name} #{rank}" for name, rank in ranks.items() if rank is not None]
    return " · ".join(parts)


def _badge(text: str) -> str:
    return f'<span class="zc-badge">{escape(text)}</span>'


def muted(text: str) -> str:
    return f'<span class="zc-muted" style="opacity:0.7">{escape(text)}</span>'


# --------------------------------------------------------------------------- search results

_LEFT = 'style="text-align:left"'


def _source_cell(hit: Any, pending_reason: str | None = None) -> str:
    """Kind and keys: a search result is where the researcher looks a key up to cite or read it.

    A note still in the outbox says "not yet in Zotero" (and why), as the outbox list and the ChatPanel do."""
    kind, parent, key = field(hit, "kind"), field(hit, "parent_key"), field(hit, "key")
    cell = escape(kind_label(kind, parent))
    if key:
        cell += f" <code>{escape(key)}</code>"
    if parent:
        cell += f"<br><small>on paper <code>{escape(parent)}</code></small>"
    library = library_fields(hit)  # a group library's item says which (the user's own goes unsaid)
    if library.get("library_kind") == "group" or field(hit, "library_kind") == "group":
        name = library.get("library_name") or field(hit, "library_name")
        cell += f'<br><small class="zc-library">in {escape(str(name))}</small>'
    if pending_reason is not None:
        cell += (
            f'<br><small class="zc-pending" style="color:#8a5a00" title="{escape(pending_reason)}">'
            f"not yet in Zotero</small> {muted(snippet(pending_reason, 120))}"
        )
    return cell


def _evidence_cell(hit: Any) -> str:
    """The whole text of an inlined note, else an excerpt (and how to read a long note in full)."""
    text = field(hit, "text") or ""
    if is_inlined(hit, count_text=True):
        return (
            f'<blockquote class="zc-inlined" style="margin:0;border-left:3px solid #ccc;padding-left:6px">'
            f"{markdown_to_html(text)}</blockquote>{muted('inlined (short note)')}"
        )
    if field(hit, "kind") == "annotation":
        return annotation_cell(hit)
    if field(hit, "kind") == "note":
        words = _word_count(hit, count_text=True)
        counted = f", {words} words" if words is not None else ""
        excerpt = markdown_to_html(snippet(field(hit, "abstract") or text))
        return (
            f'<div class="zc-snippet">{excerpt}</div>'
            f"<small>→ read_document(&quot;{escape(field(hit, 'key'))}&quot;){counted}</small>"
        )
    section = field(hit, "section")
    heading = f"<small>§ {escape(section)}</small><br>" if section else ""
    return f'{heading}{_pages_line(hit)}<div class="zc-snippet">{markdown_to_html(snippet(text))}</div>'


def _pages_line(hit: Any) -> str:
    """ "p. 12 · open in Zotero" for a paper chunk read from its PDF (the link opens the PDF at that page)."""
    span = page_span(hit)
    if span is None:
        return ""
    url = field(hit, "open_pdf") or open_pdf_url(span)  # a search hit's own link knows its library
    link = f' · <a class="zc-open-pdf" href="{escape(url)}">open in Zotero</a>' if url else ""
    return f'<small class="zc-pages">{escape(span.cite())}{link}</small><br>'


def render_search_hit(
    hit: Any, position: int, pending_reason: str | None = None, zotero_library: str | None = None
) -> str:
    """One search hit as a table row: source and keys, title and citation, text, retriever ranks, score.

    ``pending_reason``: why the note is not in Zotero yet (a hit from ``search --json`` carries its own).
    ``zotero_library`` ("library", "groups/<id>"): the title links to the item in Zotero."""
    if pending_reason is None and field(hit, "pending"):
        pending_reason = str(field(hit, "pending_reason") or "waiting in the outbox")
    title = escape(field(hit, "title") or "(untitled)")
    if field(hit, "kind") == "annotation":  # "Highlight on “Paper”, p. 12"
        title = escape(annotation_title(field(hit, "annotation"), field(hit, "parent_title")))
    target = field(hit, "parent_key") if field(hit, "kind") == "annotation" else field(hit, "key")
    link = field(hit, "zotero_select") or select_url(target, hit_library(hit, zotero_library))
    if link and not pending_reason:  # a note still in the outbox is not in Zotero yet
        title = f'<a href="{escape(link)}" title="Show in Zotero">{title}</a>'
    if field(hit, "citation"):
        title += f"<br><small>{escape(field(hit, 'citation'))}</small>"
    score = field(hit, "score")
    cells = (
        str(position),
        _source_cell(hit, pending_reason),
        f"<strong>{title}</strong>",
        _evidence_cell(hit),
        escape(_ranks_text(field(hit, "ranks"))),
        "" if score is None else f"{float(score):.4f}",
    )
    return (
        f'<tr class="zc-hit" data-kind="{escape(field(hit, "kind"))}" '
        'style="border-top:1px solid #ddd;vertical-align:top">'
        + "".join(f"<td {_LEFT}>{cell}</td>" for cell in cells)
        + "</tr>"
    )


def render_search_results(
    hits: Sequence[Any],
    *,
    query: str | None = None,
    mode: str | None = None,
    latency_ms: float | None = None,
    notice: str | None = None,
    pending: Mapping[str, str] | None = None,
    zotero_library: str | None = None,
) -> str:
    """Search results as one sanitized HTML table (``SearchResults._repr_html_`` and any list of hits).

    ``pending``: keys of notes waiting in the outbox → why; their rows say "not yet in Zotero".

    Cells carry ``text-align:left`` themselves because JupyterLab's output CSS right-aligns table cells.
    """
    heading = f"results for <q>{escape((query or '')[:200])}</q>" if query else "results"
    facts = [part for part in (mode, None if latency_ms is None else f"{latency_ms:.0f} ms") if part]
    parts = [
        '<div class="zocrates-search zc-results" style="font-size:0.9em">',
        f"<p><b>{len(hits)}</b> {heading}" + (f" {muted('(' + ', '.join(facts) + ')')}" if facts else "") + "</p>",
    ]
    if notice:
        parts.append(f'<p style="color:#8a5a00">{escape(notice)}</p>')
    if not hits:
        return "".join(parts) + "<p>Nothing found.</p></div>"
    head = "".join(f"<th {_LEFT}>{name}</th>" for name in ("#", "Source", "Title", "Evidence", "Ranks", "Score"))
    pending = pending or {}
    rows = "".join(
        render_search_hit(hit, i, pending.get(field(hit, "key")), zotero_library) for i, hit in enumerate(hits, 1)
    )
    return "".join(parts) + (
        f'<table style="border-collapse:collapse"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>'
    )


# --------------------------------------------------------------------------- bundles


def render_bundle(manifest: Mapping[str, Any], markdown: str) -> str:
    """An OKF bundle: title, provenance (parent paper, collections, hash, converter), then content."""
    title = manifest.get("title") or "(untitled)"
    kind = kind_of_content_type(manifest.get("content_type"))
    facts = [kind_label(kind, manifest.get("parent_key"))]
    if manifest.get("citation"):
        facts.append(str(manifest["citation"]))
    if manifest.get("parent_title"):
        facts.append(f"child of “{manifest['parent_title']}”")
    if manifest.get("collections"):
        facts.append("in " + ", ".join(str(c) for c in manifest["collections"]))
    if manifest.get("word_count") is not None:
        facts.append(f"{manifest['word_count']} words")
    provenance = []
    if manifest.get("source_hash"):
        provenance.append(f"source sha256 {str(manifest['source_hash'])[:12]}…")
    if manifest.get("converter_version"):
        provenance.append(f"converter {manifest['converter_version']}")
    if manifest.get("converted_at"):
        provenance.append(f"converted {manifest['converted_at']}")
    abstract = ""
    if manifest.get("abstract"):
        source = manifest.get("abstract_source") or "given"
        abstract = f'<p class="zc-abstract"><em>Abstract ({escape(source)}):</em> {escape(manifest["abstract"])}</p>'
    return (
        f'<div class="zc-bundle"><h3>{escape(title)}</h3>'
        f"<p>{muted(' · '.join(facts))}<br>{muted(' · '.join(provenance))}"
        f"{' · ' + muted('key ' + str(manifest['key'])) if manifest.get('key') else ''}</p>"
        f'{abstract}<div class="zc-bundle-content">{markdown_to_html(markdown)}</div></div>'
    )


@dataclass(frozen=True)
class BundleView:
    """A note or paper bundle as a notebook cell shows it (``BundleView(manifest, markdown)``,
    or ``wb.bundle(key)``).

    Deliberately no ``_repr_markdown_``: JupyterLab renders *trusted* outputs (every output of
    the current session) without sanitizing, and its Markdown renderer passes raw HTML through,
    so a note's ``<script>`` or ``<img onerror>`` would run. The only rich repr is the HTML
    one, built from escaped text and sanitized note content.
    """

    manifest: Mapping[str, Any]
    markdown: str

    def _repr_html_(self) -> str:
        return render_bundle(self.manifest, self.markdown)

    def __repr__(self) -> str:
        return f"BundleView(key={self.manifest.get('key')!r}, title={self.manifest.get('title')!r})"


# --------------------------------------------------------------------------- confirmations


def describe_destination(*, collection: str | None = None, parent: str | None = None) -> str:
    """Where a saved note went, in words ("collection ‘Reading group’", "a child note of ‘…’")."""
    if parent:
        return f"a child note of ‘{parent}’"
    if collection:
        return f"collection ‘{collection}’"
    return "My Library (unfiled)"


def saved_message(title: str, *, collection: str | None = None, parent: str | None = None) -> str:
    """The panel's confirmation text: "Saved to collection ‘Reading group’ as ‘…’"."""
    if parent:
        return f"Saved as {describe_destination(parent=parent)}: ‘{title}’"
    return f"Saved to {describe_destination(collection=collection)} as ‘{title}’"
