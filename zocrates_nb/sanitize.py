"""HTML sanitizing (the only module that imports nh3).

Why: JupyterLab runs ``<script>`` in trusted outputs, so a Zotero note or an
LLM answer (attacker-influenced through retrieved notes) rendered as HTML is a
stored-XSS path into the user's Jupyter origin. Everything we display as HTML
goes through ``sanitize_html``; every note we write to Zotero goes through
``sanitize_note_html`` (Zotero's note-editor element set, which the Web API
enforces server-side anyway).

Both are allowlists: unknown tags are unwrapped (their text kept), script/style
content is removed, ``on*``/``style`` attributes and ``javascript:``/``data:``
URLs are dropped, links get ``rel="noopener noreferrer"``, and remote images
(tracking pixels, exfiltration) become their alt text.
"""

from __future__ import annotations

import html as html_lib
import re

import nh3

__all__ = ["sanitize_html", "sanitize_note_html", "escape_text"]

_COMMON_TAGS = {
    "p",
    "br",
    "hr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "strong",
    "b",
    "em",
    "i",
    "u",
    "s",
    "del",
    "ins",
    "strike",
    "sub",
    "sup",
    "code",
    "pre",
    "kbd",
    "samp",
    "var",
    "blockquote",
    "q",
    "cite",
    "abbr",
    "acronym",
    "dfn",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "table",
    "caption",
    "colgroup",
    "col",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "th",
    "td",
    "a",
    "img",
    "span",
    "div",
}
DISPLAY_TAGS = _COMMON_TAGS | {"mark", "small", "details", "summary", "figure", "figcaption"}
#: zotero/note-editor ``src/core/schema/README.md`` "TinyMCE valid elements list"
NOTE_TAGS = _COMMON_TAGS | {"address", "font", "bdo", "label", "legend"}

_DROP_CONTENT = {
    "script",
    "style",
    "noscript",
    "template",
    "iframe",
    "object",
    "embed",
    "svg",
    "math",
    "textarea",
    "select",
    "title",
    "head",
    "frameset",
    "applet",
}
_CLASS_HOLDERS = (
    "span",
    "div",
    "pre",
    "code",
    "p",
    "table",
    "td",
    "th",
    "li",
    "ul",
    "ol",
    "a",
    "blockquote",
    "section",
)
_CELL = {"colspan", "rowspan", "align"}


def _with_class(attributes: dict[str, set[str]], holders: tuple[str, ...]) -> dict[str, set[str]]:
    merged = {tag: set(names) for tag, names in attributes.items()}
    for tag in holders:
        merged.setdefault(tag, set()).add("class")
    return merged


DISPLAY_ATTRIBUTES: dict[str, set[str]] = _with_class(
    {
        "*": {"dir", "lang", "title"},
        "a": {"href", "title"},
        "img": {"src", "alt", "title", "width", "height"},
        "td": _CELL,
        "th": _CELL | {"scope"},
        "ol": {"start"},
    },
    _CLASS_HOLDERS,
)
NOTE_ATTRIBUTES: dict[str, set[str]] = _with_class(
    {
        "*": {"dir"},
        "a": {"href", "title"},
        "img": {"src", "alt", "title", "width", "height"},
        "td": {"colspan", "rowspan"},
        "th": {"colspan", "rowspan"},
        "ol": {"start"},
        "blockquote": {"cite"},
        **{f"h{n}": {"id"} for n in range(1, 7)},
    },
    ("span", "pre", "p", "code", "div"),
)

_SCHEMES = {"http", "https", "mailto", "zotero"}
_IMG = re.compile(r"<img\b[^>]*>", re.I)
_ATTR = re.compile(r'([\w:-]+)="([^"]*)"')
_SAFE_CLASS = re.compile(r"^[\w\- ]*$")


def escape_text(text: str) -> str:
    """Plain text → HTML text (the one way we put untrusted plain text into HTML)."""
    return html_lib.escape(text, quote=True)


def _attribute_filter(tag: str, attr: str, value: str) -> str | None:
    if attr == "class" and not _SAFE_CLASS.match(value):
        return None
    return value


def _replace_remote_images(cleaned: str, keep_attachment_images: bool) -> str:
    """Remote, data: and src-less images → ``[image: alt]`` text; relative (local) images stay."""

    def replace(match: re.Match) -> str:
        attrs = dict(_ATTR.findall(match.group(0)))
        src = html_lib.unescape(attrs.get("src", "")).strip()
        if keep_attachment_images and "data-attachment-key" in attrs:
            return match.group(0)  # Zotero deletes embedded-image attachments whose <img> vanishes
        if src and not re.match(r"^(?:[a-z][a-z0-9+.-]*:|//)", src, re.I):
            return match.group(0)
        alt = " ".join(html_lib.unescape(attrs.get("alt", "") or attrs.get("title", "")).split())
        return escape_text(f"[image: {alt}]" if alt else "[image]")

    return _IMG.sub(replace, cleaned)


def sanitize_html(html: str) -> str:
    """Untrusted HTML → HTML that is safe to put into a notebook output or widget."""
    if not html:
        return ""
    cleaned = nh3.clean(
        html,
        tags=DISPLAY_TAGS,
        clean_content_tags=_DROP_CONTENT,
        attributes=DISPLAY_ATTRIBUTES,
        attribute_filter=_attribute_filter,
        url_schemes=_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )
    return _replace_remote_images(cleaned, keep_attachment_images=False)


def sanitize_note_html(html: str) -> str:
    """HTML we are about to write into a Zotero note → Zotero's element set, nothing active.

    Keeps ``data-*`` attributes (schema version, citations, annotations,
    attachment keys) because Zotero's note-editor needs them.
    """
    if not html:
        return ""
    cleaned = nh3.clean(
        html,
        tags=NOTE_TAGS,
        clean_content_tags=_DROP_CONTENT,
        attributes=NOTE_ATTRIBUTES,
        attribute_filter=_attribute_filter,
        generic_attribute_prefixes={"data-"},
        url_schemes=_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return _replace_remote_images(cleaned, keep_attachment_images=True)
