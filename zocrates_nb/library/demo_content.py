"""The demo library's content files (``zocrates_nb/library/demo/``): read and checked, never written.

Why its own module: the files are hand-written, so every problem must name the file and the key; and
``local.DemoLibrary`` (the SQLite library seeded from them) stays about storage. Formats: docs/contracts.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from zocrates_nb.errors import LibraryError
from zocrates_nb.records import ANNOTATION_TYPES, Annotation, is_valid_key

__all__ = ["DEMO_CONTENT_DIR", "load_demo_annotations", "load_demo_content"]

DEMO_CONTENT_DIR = Path(__file__).resolve().parent / "demo"


def load_demo_content(content_dir: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """Read and validate the demo content files; returns (collections, papers, notes with ``html``).

    Pure apart from reading ``content_dir``; every problem names the file and key,
    because this content is hand-written and a typo must not seed a broken library.
    """
    collections, papers, notes = (
        _read_demo_json(content_dir, n) for n in ("collections.json", "papers.json", "notes.json")
    )
    coll_keys = {c.get("key") for c in collections}
    paper_keys = {p.get("key") for p in papers}
    _check_collections(content_dir, collections, coll_keys)
    _check_papers(content_dir, papers, coll_keys)
    out_notes = []
    for n in notes:
        _check_note(content_dir, n, coll_keys, paper_keys)
        out_notes.append({**n, "html": _read_note_html(content_dir, n)})
    return collections, papers, out_notes


def _read_demo_json(content_dir: Path, name: str) -> list[dict]:
    """One demo content file, which must hold a JSON array."""
    path = content_dir / name
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LibraryError(
            f"Demo content file {path} is missing.",
            "Reinstall zocrates_nb, or pass content_dir= pointing at a complete demo folder.",
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LibraryError(
            f"Demo content file {path} is not valid JSON: {exc}", "Fix the file (it must hold a JSON array)."
        ) from exc
    if not isinstance(data, list):
        raise LibraryError(f"Demo content file {path} must hold a JSON array.", "Fix the file.")
    return data


def _bad_demo(content_dir: Path, what: str, key: object, why: str) -> LibraryError:
    return LibraryError(f"Demo content: {what} {key!r} {why}.", f"Fix {content_dir}/{what}s.json.")


def _check_collections(content_dir: Path, collections: list[dict], coll_keys: set) -> None:
    for c in collections:
        if not is_valid_key(c.get("key", "")) or not c.get("name"):
            raise _bad_demo(content_dir, "collection", c.get("key"), "needs a valid 8-character key and a name")
        if c.get("parent_key") and c["parent_key"] not in coll_keys:
            raise _bad_demo(content_dir, "collection", c["key"], f"has unknown parent_key {c['parent_key']!r}")


def _check_papers(content_dir: Path, papers: list[dict], coll_keys: set) -> None:
    for p in papers:
        if not is_valid_key(p.get("key", "")) or not p.get("title"):
            raise _bad_demo(content_dir, "paper", p.get("key"), "needs a valid 8-character key and a title")
        if set(p.get("collections") or ()) - coll_keys:
            raise _bad_demo(content_dir, "paper", p["key"], "is filed in an unknown collection")


def _check_note(content_dir: Path, n: dict, coll_keys: set, paper_keys: set) -> None:
    key = n.get("key", "")
    if not is_valid_key(key) or key in paper_keys:
        raise _bad_demo(content_dir, "note", key, "needs a valid 8-character key not used by a paper")
    if n.get("parent_key") and n.get("collections"):
        raise _bad_demo(content_dir, "note", key, "is a child note but lists collections (Zotero forbids that)")
    if n.get("parent_key") and n["parent_key"] not in paper_keys:
        raise _bad_demo(content_dir, "note", key, f"has unknown parent_key {n['parent_key']!r}")
    if set(n.get("collections") or ()) - coll_keys:
        raise _bad_demo(content_dir, "note", key, "is filed in an unknown collection")


def _read_note_html(content_dir: Path, n: dict) -> str:
    html_path = content_dir / "notes" / n.get("file", f"{n.get('key', '')}.html")
    try:
        return html_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LibraryError(
            f"Demo content: note file {html_path} could not be read: {exc}", "Add the file or fix notes.json."
        ) from exc


#: annotation types the demo content may use (Zotero's names)
_ANNOTATION_TYPE_NAMES = frozenset(ANNOTATION_TYPES.values())
_DEMO_ANNOTATED_AT = "2024-03-01T09:00:00Z"


def load_demo_annotations(content_dir: Path, paper_keys: set[str], taken: set[str]) -> tuple[Annotation, ...]:
    """The demo's PDF annotations (``annotations.json``; none when the file is absent), checked.

    ``paper_keys``: the papers they may sit on; ``taken``: keys already used by papers, notes and
    collections (an annotation is an item, so its key must be unique in the library)."""
    if not (content_dir / "annotations.json").exists():
        return ()
    out = []
    seen = set(taken)
    for a in _read_demo_json(content_dir, "annotations.json"):
        key = a.get("key", "")
        if not is_valid_key(key) or key in seen:
            raise _bad_demo(content_dir, "annotation", key, "needs a valid 8-character key used by nothing else")
        seen.add(key)
        if a.get("parent_key") not in paper_keys or not is_valid_key(a.get("attachment_key", "")):
            raise _bad_demo(content_dir, "annotation", key, "needs a known parent_key and a valid attachment_key")
        if a.get("annotation_type") not in _ANNOTATION_TYPE_NAMES:
            raise _bad_demo(
                content_dir, "annotation", key, f"has an unknown annotation_type {a.get('annotation_type')!r}"
            )
        page_index = a.get("page_index")
        if not isinstance(page_index, int) or isinstance(page_index, bool) or page_index < 0:
            raise _bad_demo(content_dir, "annotation", key, "needs a page_index (0-based page number)")
        out.append(
            Annotation(
                key=key,
                attachment_key=a["attachment_key"],
                annotation_type=a["annotation_type"],
                parent_key=a["parent_key"],
                text=str(a.get("text") or ""),
                comment=str(a.get("comment") or ""),
                color=str(a.get("color") or ""),
                page_label=str(a.get("page_label") or ""),
                position=json.dumps({"pageIndex": page_index, "rects": []}),
                sort_index=str(a.get("sort_index") or f"{page_index:05d}|000000|00000"),
                tags=tuple(str(t) for t in a.get("tags") or ()),
                version=1,
                date_modified=_DEMO_ANNOTATED_AT,
            )
        )
    return tuple(out)
