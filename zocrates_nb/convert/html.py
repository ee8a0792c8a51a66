"""Zotero note HTML → Markdown (the only module that imports markdownify and bs4).

Why Zotero-aware and not plain markdownify: a Zotero note carries meaning in
attributes that a generic converter throws away or mangles — citations are
``span.citation`` with URL-encoded CSL-JSON, highlights carry their page label in
``data-annotation``, math is ``$…$`` text that Markdown escaping would break, and
embedded images point at attachments the agent cannot see. We rewrite those
nodes in the parsed tree first (into plain text or placeholders), then let
markdownify do the generic part, then put the placeholders back verbatim.

Everything here is pure: a string in, a string (plus warnings) out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import markdownify
from bs4 import BeautifulSoup, NavigableString, Tag

# citation wording and the parser-free text paths live beside this module; re-exported for callers
from zocrates_nb.convert.citation import JsonDict as JsonDict
from zocrates_nb.convert.citation import decode_json_attr
from zocrates_nb.convert.citation import format_citation as format_citation
from zocrates_nb.convert.html_text import MAX_TITLE_LENGTH as MAX_TITLE_LENGTH
from zocrates_nb.convert.html_text import note_title as note_title
from zocrates_nb.convert.html_text import plain_text_markdown as plain_text_markdown

try:  # lxml parses ~25% faster; html.parser is the always-available fallback
    import lxml  # noqa: F401

    _PARSER = "lxml"
except ImportError:  # pragma: no cover - lxml ships with the venv
    _PARSER = "html.parser"

#: above this size markdownify takes seconds; such notes are converted as plain paragraphs
LARGE_NOTE_CHARS = 2_000_000

#: elements whose content never reaches the Markdown (active content, media, form widgets)
_DROP_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "object",
    "embed",
    "video",
    "audio",
    "source",
    "track",
    "canvas",
    "svg",
    "head",
    "title",
    "meta",
    "link",
    "base",
    "button",
    "input",
    "select",
    "textarea",
    "frame",
    "frameset",
    "applet",
)
_DROP_SET = frozenset(_DROP_TAGS)
_REPORTED_DROPS = ("script", "style", "iframe", "object", "embed")
_SAFE_LINK = re.compile(r"^\s*(?:https?:|mailto:|zotero:|doi:|#|/|\.|[^:/?#\s]+(?:[/?#]|$))", re.I)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_STRIKE_STYLE = re.compile(r"text-decoration[^;]*line-through", re.I)
_TAG_LIKE = re.compile(r"<(?=[A-Za-z/!?])")
_HASH_HEADING = re.compile(r"(\s|^)(#{1,6}(?:\s|$))")
_QUOTES = "\"'“”‘’«»„"

# placeholders survive markdownify untouched (private-use code points are never escaped)
_INLINE_OPEN, _INLINE_CLOSE = "\ue000", "\ue001"
_BLOCK_OPEN, _BLOCK_CLOSE = "\ue002", "\ue003"
_INLINE_TOKEN = re.compile(_INLINE_OPEN + r"(\d+)" + _INLINE_CLOSE)
_BLOCK_TOKEN = re.compile(r"(?m)^(?P<prefix>[ \t]*(?:>[ \t]?)*)" + _BLOCK_OPEN + r"(\d+)" + _BLOCK_CLOSE)


class _Converter(markdownify.MarkdownConverter):
    """markdownify with the few overrides a note needs."""

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return ""  # images were replaced by placeholders before conversion

    def escape(self, text: str, parent_tags: set[str]) -> str:
        """Also escape text that would read as an HTML tag or a heading once rendered as Markdown."""
        text = super().escape(text, parent_tags)  # type: ignore[misc]  # markdownify's stubs omit escape
        text = _TAG_LIKE.sub(r"\\<", text)
        return _HASH_HEADING.sub(r"\1\\\2", text)


_OPTIONS: dict[str, Any] = dict(
    heading_style="ATX",
    bullets="-",
    code_language="",
    table_infer_header=True,
    strip_document="strip",
    escape_misc=False,
    # identifiers such as n_latent or adata.obs_names stay searchable as written
    escape_underscores=False,
)


def _attr(tag: Tag, name: str) -> str | None:
    """An attribute as one string (bs4 hands multi-valued attributes such as ``class`` back as lists)."""
    value = tag.get(name)
    if value is None or isinstance(value, str):
        return value
    return " ".join(value)


_REWRITE_KINDS = ("wrapper", "annotation", "citation", "block_math", "inline_math", "img", "strike", "a", "items")


@dataclass
class _Found:
    """What one walk over a parsed note found: elements to remove (and why), and nodes to rewrite by kind."""

    doomed: list[Tag] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    hidden: int = 0
    tags: dict[str, list[Tag]] = field(default_factory=lambda: {name: [] for name in _REWRITE_KINDS})


def _collect(soup: BeautifulSoup) -> _Found:
    """One walk over the tree: elements to drop or hide, and each Zotero-specific node by its rewrite kind."""
    found = _Found()
    for tag in soup.find_all(True):
        if _doom(tag, found):
            continue
        attrs = tag.attrs
        if "data-citation-items" in attrs:
            found.tags["items"].append(tag)
        kind = _rewrite_kind(tag)
        if kind is not None:
            found.tags[kind].append(tag)
        if tag.name == "span" and _STRIKE_STYLE.search(_attr(tag, "style") or ""):
            found.tags["strike"].append(tag)
    return found


def _doom(tag: Tag, found: _Found) -> bool:
    """Mark a dropped (script, iframe, …) or hidden element for removal; True when it was marked."""
    attrs = tag.attrs
    if tag.name in _DROP_SET:
        found.doomed.append(tag)
        if tag.name in _REPORTED_DROPS:
            found.dropped[tag.name] = found.dropped.get(tag.name, 0) + 1
        return True
    if "hidden" in attrs or _HIDDEN_STYLE.search(_attr(tag, "style") or ""):
        found.doomed.append(tag)
        found.hidden += 1
        return True
    return False


def _rewrite_kind(tag: Tag) -> str | None:
    """Which Zotero-specific rewrite a node needs (wrapper, annotation, citation, math, image, unsafe link)."""
    name, attrs = tag.name, tag.attrs
    classes = attrs.get("class") or ()
    if name == "div" and ("data-schema-version" in attrs or "zotero-note" in classes):
        return "wrapper"
    if name == "span" and classes:
        if ("highlight" in classes or "underline" in classes) and "data-annotation" in attrs:
            return "annotation"
        if "citation" in classes:
            return "citation"
        return "inline_math" if "math" in classes else None
    if name == "pre" and "math" in classes:
        return "block_math"
    if name == "img":
        return "img"
    if name == "a" and "href" in attrs and not _SAFE_LINK.match(_attr(tag, "href") or ""):
        return "a"
    return None


def _to_strike(tag: Tag) -> None:
    tag.name = "s"


class _Rewriter:
    """Rewrites Zotero-specific nodes of one parsed note; collects placeholders and warnings."""

    def __init__(self) -> None:
        self.inline: list[str] = []
        self.blocks: list[str] = []
        self.warnings: list[str] = []
        self.images = 0

    def _inline_token(self, soup: BeautifulSoup, text: str) -> NavigableString:
        self.inline.append(text)
        return NavigableString(f"{_INLINE_OPEN}{len(self.inline) - 1}{_INLINE_CLOSE}")

    def _block_token(self, soup: BeautifulSoup, text: str) -> Tag:
        self.blocks.append(text)
        para = soup.new_tag("p")
        para.string = f"{_BLOCK_OPEN}{len(self.blocks) - 1}{_BLOCK_CLOSE}"
        return para

    def rewrite(self, soup: BeautifulSoup) -> None:
        """One walk over the tree collects the nodes to rewrite; they are then rewritten in order."""
        found = _collect(soup)
        self._drop(found)
        self._apply(soup, {kind: [t for t in tags if not t.decomposed] for kind, tags in found.tags.items()})

    def _drop(self, found: _Found) -> None:
        """Remove dropped and hidden elements, saying so: their content is not part of the note text."""
        for tag in found.doomed:
            if not tag.decomposed:
                tag.decompose()
        for name, count in sorted(found.dropped.items()):
            self.warnings.append(f"removed {count} <{name}> element(s); their content is not part of the note text")
        if found.hidden:
            self.warnings.append(f"removed {found.hidden} hidden element(s)")

    def _apply(self, soup: BeautifulSoup, live: dict[str, list[Tag]]) -> None:
        """Rewrite the collected nodes kind by kind, in this order (annotations before citations: an
        annotation's quote is followed by its citation). Nodes a previous rewrite detached are skipped
        where a rewrite needs the node in the tree."""
        known = self._citation_items(live["items"])
        steps: tuple[tuple[str, bool, Callable[[Tag], object]], ...] = (
            ("wrapper", False, lambda tag: tag.unwrap()),
            ("annotation", False, lambda tag: self._annotation(soup, tag)),
            ("citation", True, lambda tag: self._citation(soup, tag, known)),
            (
                "block_math",
                False,
                lambda tag: tag.replace_with(self._block_token(soup, self._math(tag.get_text(), block=True))),
            ),
            (
                "inline_math",
                True,
                lambda tag: tag.replace_with(self._inline_token(soup, self._math(tag.get_text(), block=False))),
            ),
            ("img", True, lambda tag: self._image(soup, tag)),
            ("strike", False, _to_strike),
            ("a", True, lambda tag: tag.unwrap()),  # javascript:, data:, vbscript: … keep the text, drop the target
        )
        for kind, needs_parent, rewrite_one in steps:
            for tag in live[kind]:
                if not needs_parent or tag.parent is not None:
                    rewrite_one(tag)

    @staticmethod
    def _citation_items(holders: list[Tag]) -> dict[str, JsonDict]:
        known: dict[str, JsonDict] = {}
        for holder in holders:
            items = decode_json_attr(_attr(holder, "data-citation-items"))
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and isinstance(item.get("itemData"), dict):
                    for uri in item.get("uris") or []:
                        known[str(uri)] = item["itemData"]
        return known

    def _citation(self, soup: BeautifulSoup, span: Tag, known: dict[str, JsonDict]) -> None:
        visible = " ".join(span.get_text(" ").split())
        if visible.strip("() "):
            text = visible.replace("( ", "(").replace(" )", ")")
            if not text.startswith("("):
                text = f"({text})"
        else:
            text = format_citation(_attr(span, "data-citation"), known)
        span.replace_with(NavigableString(text))

    def _annotation(self, soup: BeautifulSoup, span: Tag) -> None:
        """A highlight/underline annotation → ``“text” (p. 12)``, its paragraph made a quote."""
        data = decode_json_attr(_attr(span, "data-annotation"))
        data = data if isinstance(data, dict) else {}
        page = str(data.get("pageLabel") or "").strip()
        if not page and isinstance(data.get("citationItem"), dict):
            page = str(data["citationItem"].get("locator") or "").strip()
        quote = " ".join(span.get_text(" ").split()).strip(_QUOTES + " ")
        if page and _citation_follows(span, page):
            page = ""  # the citation right after already says "p. N"
        text = f"“{quote}”" + (f" (p. {page})" if page else "")
        block = span.find_parent(("p", "li", "td", "th", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "div"))
        opens_block = block is not None and _starts_with(block, span)
        span.replace_with(NavigableString(text))
        # Zotero's annotation notes give each highlight its paragraph (highlight, citation, comment): that is
        # a quote; a highlight quoted inside a sentence (a saved answer) stays in its sentence
        if block is not None and opens_block and block.name == "p" and block.find_parent("blockquote") is None:
            block.wrap(soup.new_tag("blockquote"))

    @staticmethod
    def _math(text: str, *, block: bool) -> str:
        body = text.strip()
        fence = "$$" if block else "$"
        if body.startswith(fence) and body.endswith(fence) and len(body) >= 2 * len(fence):
            body = body[len(fence) : -len(fence)].strip()
        elif body.startswith("$") and body.endswith("$") and len(body) >= 2:
            body = body.strip("$").strip()
        return f"{fence}{body}{fence}"

    def _image(self, soup: BeautifulSoup, img: Tag) -> None:
        self.images += 1
        alt = " ".join((_attr(img, "alt") or _attr(img, "title") or "").split())
        if not alt and img.has_attr("data-annotation"):
            data = decode_json_attr(_attr(img, "data-annotation"))
            page = data.get("pageLabel") if isinstance(data, dict) else None
            alt = f"image annotation, p. {page}" if page else "image annotation"
        img.replace_with(self._inline_token(soup, f"[image: {alt}]" if alt else "[image]"))


def _starts_with(block: Tag, span: Tag) -> bool:
    """True when nothing but white space comes before ``span`` in ``block``."""
    for node in block.descendants:
        if node is span:
            return True
        if isinstance(node, NavigableString) and node.strip():
            return False
    return False


def _citation_follows(span: Tag, page: str) -> bool:
    """True when the next non-blank sibling is a citation (tag or already-rendered text) naming the page."""
    sibling = span.next_sibling
    while isinstance(sibling, NavigableString) and not sibling.strip():
        sibling = sibling.next_sibling
    if sibling is None:
        return False
    text = sibling.get_text(" ") if isinstance(sibling, Tag) else str(sibling)
    is_citation = isinstance(sibling, Tag) and "citation" in (sibling.get("class") or [])
    return (is_citation or text.lstrip().startswith("(")) and f"p. {page}" in text[:200]


def _restore(markdown: str, rewriter: _Rewriter) -> str:
    def block(match: re.Match[str]) -> str:
        prefix = match.group("prefix")
        lines = rewriter.blocks[int(match.group(2))].split("\n")
        return "\n".join(prefix + line for line in lines)

    markdown = _BLOCK_TOKEN.sub(block, markdown)
    return _INLINE_TOKEN.sub(lambda m: rewriter.inline[int(m.group(1))], markdown)


def _tidy(markdown: str) -> str:
    markdown = re.sub(r"[ \t]+\n(?!\n)", lambda m: m.group(0) if m.group(0).startswith("  ") else "\n", markdown)
    markdown = re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", markdown)
    return markdown.strip() + "\n" if markdown.strip() else ""


def html_to_markdown_with_warnings(html: str) -> tuple[str, list[str]]:
    """Convert a note's HTML; returns the Markdown and human-readable warnings (never raises on content)."""
    if not html.strip():
        return "", ["the note is empty"]
    if len(html) > LARGE_NOTE_CHARS:
        markdown = plain_text_markdown(html)
        return markdown, [
            f"very large note ({len(html) / 1e6:.1f} MB of HTML): converted as plain paragraphs without formatting"
        ]
    soup = BeautifulSoup(html, _PARSER)
    rewriter = _Rewriter()
    rewriter.rewrite(soup)
    markdown = _Converter(**_OPTIONS).convert_soup(soup)
    markdown = _tidy(_restore(markdown, rewriter))
    warnings = rewriter.warnings
    if not markdown.strip():
        warnings.append("the note has no text")
    elif rewriter.images and not _INLINE_TOKEN.sub("", re.sub(r"\[image(?:: [^\]]*)?\]", "", markdown)).strip():
        warnings.append(f"the note has only images ({rewriter.images}); only their alt text is searchable")
    return markdown, warnings


def note_html_to_markdown(html: str) -> str:
    """Zotero note HTML → Markdown (see module docstring for the Zotero-specific rules)."""
    return html_to_markdown_with_warnings(html)[0]
