"""OKF v0.2 bundles on disk: ``corpus/<key>/okf.json`` + ``content.md``.

Why a temporary directory and renames: a reader (another kernel, an agent tool)
must see the old bundle or the new one, never a manifest from one and content
from the other. A bundle is written completely into ``corpus/.tmp-…``, fsynced,
then renamed into place; an existing bundle is first renamed aside, the new one
renamed in, the old one removed. During the microseconds between those two
renames the directory is absent, so readers retry briefly (``read_bundle``).

Readers open the directory once and read both files relative to that handle,
so a swap in the middle of a read cannot mix generations; the manifest's
``content_sha256`` is checked against the content as a second guard (and makes
a bundle damaged by a crash detectable, so the corpus can re-materialise it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from zocrates_nb.errors import NotFoundError, ZocratesError

OKF_VERSION = "0.2"
MANIFEST = "okf.json"
CONTENT = "content.md"
_KEY = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DIR_FD = os.open in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")
_RETRY_DELAYS = (0.001, 0.004, 0.016, 0.05)
T = TypeVar("T")


class BundleError(ZocratesError):
    """A bundle on disk is missing pieces or does not match its manifest."""


def note_manifest(note, converted, context: dict, converted_at: str) -> dict:
    """The OKF v0.2 manifest of a note bundle (fields as in docs/contracts.md)."""
    manifest = _base_manifest(converted, context, converted_at)
    manifest.update(
        key=note.key, content_type="text/note", item_type="note", version=note.version, date_modified=note.date_modified
    )
    if note.library_id is not None:  # the Zotero library it lives in (the index keeps it: search filters by it)
        manifest["library_id"] = note.library_id
    return manifest


def paper_manifest(paper, converted, context: dict, converted_at: str) -> dict:
    """The OKF v0.2 manifest of a paper bundle: the note fields plus creators, year, DOI, citation."""
    manifest = _base_manifest(converted, context, converted_at)
    manifest.update(
        key=paper.key,
        content_type="text/paper",
        item_type=paper.item_type,
        creators=list(paper.creators),
        year=paper.year,
        doi=paper.doi,
        citation=paper.citation,
        publication=paper.publication,
        date=paper.date,
        version=paper.version,
        date_modified=paper.date_modified,
        text_source=converted.text_source,
    )
    if paper.citation_key:  # the user's own key for citing it (export keeps it)
        manifest["citation_key"] = paper.citation_key
    if paper.library_id is not None:
        manifest["library_id"] = paper.library_id
    if converted.pages:  # where each PDF page sits in content.md: what gives every chunk its pages
        manifest["pages"] = [page.to_json() for page in converted.pages]
    if converted.pdf_failures:
        manifest["pdf_failures"] = [{"attachment_key": k, "reason": why} for k, why in converted.pdf_failures]
    return manifest


def annotation_manifest(annotation, converted, context: dict, converted_at: str) -> dict:
    """The manifest of a PDF annotation's bundle: the note fields (its paper as parent) plus what the
    reader made (type, highlighted text, comment, colour, page, position, tags) and where (the PDF)."""
    manifest = _base_manifest(converted, context, converted_at)
    manifest.update(
        key=annotation.key,
        content_type="text/annotation",
        item_type="annotation",
        annotation_type=annotation.annotation_type,
        text=annotation.text,
        comment=annotation.comment,
        color=annotation.color,
        color_name=annotation.color_name,
        color_meaning=context.get("color_meaning"),
        page_label=annotation.page,
        page_index=annotation.page_index,
        position=annotation.position,
        sort_index=annotation.sort_index,
        tags=list(annotation.tags),
        attachment_key=annotation.attachment_key,
        library_id=annotation.library_id,
        version=annotation.version,
        date_modified=annotation.date_modified,
    )
    return manifest


def _base_manifest(converted, context: dict, converted_at: str) -> dict:
    manifest = converted.manifest_fields()
    manifest.update(
        parent_key=context.get("parent_key"),
        parent_title=context.get("parent_title"),
        collections=context["collections"],
        collection_keys=context["collection_keys"],
        converted_at=converted_at,
    )
    if context.get("parent_creators") or context.get("parent_year"):
        manifest.update(parent_creators=context.get("parent_creators") or [], parent_year=context.get("parent_year"))
    if context.get("links"):  # a note's links to papers (corpus/links.py): key, reason, title
        manifest["links"] = [dict(link) for link in context["links"]]
    return manifest


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise ValueError(f"not a safe bundle key: {key!r}")
    return key


def content_sha256(markdown: str) -> str:
    return hashlib.sha256(markdown.encode("utf-8", "surrogatepass")).hexdigest()


def _write_file(path: Path, data: bytes, durable: bool) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        if durable:
            handle.flush()
            os.fsync(handle.fileno())


def _fsync_dir(path: Path) -> None:
    if not hasattr(os, "O_DIRECTORY"):  # pragma: no cover - Windows has no directory fsync
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class PreparedBundle:
    """A complete bundle in a temporary directory, waiting to be renamed into place."""

    corpus_dir: Path
    key: str
    tmp_dir: Path
    durable: bool = True

    @property
    def final_dir(self) -> Path:
        return self.corpus_dir / self.key

    def install(self) -> Path:
        """Rename into place (old bundle aside → new in → old removed). Returns the bundle path."""
        final = self.final_dir
        try:
            os.rename(self.tmp_dir, final)
        except OSError:
            if not final.exists():
                raise
            aside = self.corpus_dir / f".old-{self.key}-{uuid.uuid4().hex[:8]}"
            os.rename(final, aside)
            try:
                os.rename(self.tmp_dir, final)
            except OSError:
                os.rename(aside, final)  # put the old bundle back: never leave the key without one
                raise
            shutil.rmtree(aside, ignore_errors=True)
        if self.durable:
            _fsync_dir(self.corpus_dir)
        return final

    def discard(self) -> None:
        shutil.rmtree(self.tmp_dir, ignore_errors=True)


def prepare_bundle(
    corpus_dir: Path, key: str, manifest: dict, markdown: str, *, durable: bool = True
) -> PreparedBundle:
    """Write a bundle into ``corpus/.tmp-<key>-<random>/`` (fsynced when ``durable``)."""
    _check_key(key)
    corpus_dir = Path(corpus_dir)
    corpus_dir.mkdir(parents=True, exist_ok=True)
    manifest = {**manifest, "key": key, "okf_version": OKF_VERSION, "content_sha256": content_sha256(markdown)}
    tmp = corpus_dir / f".tmp-{key}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        _write_file(tmp / CONTENT, markdown.encode("utf-8", "surrogatepass"), durable)
        _write_file(tmp / MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=2).encode("utf-8"), durable)
        if durable:
            _fsync_dir(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return PreparedBundle(corpus_dir, key, tmp, durable)


def write_bundle(corpus_dir: Path, key: str, manifest: dict, markdown: str, *, durable: bool = True) -> Path:
    """Write ``corpus/<key>/`` atomically (temporary directory + rename); returns the bundle path."""
    prepared = prepare_bundle(corpus_dir, key, manifest, markdown, durable=durable)
    try:
        return prepared.install()
    except BaseException:
        prepared.discard()
        raise


def remove_bundle(corpus_dir: Path, key: str) -> bool:
    """Remove ``corpus/<key>/`` (renamed aside first, so it vanishes in one step). True if it existed."""
    final = Path(corpus_dir) / _check_key(key)
    aside = Path(corpus_dir) / f".old-{key}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(final, aside)
    except FileNotFoundError:
        return False
    shutil.rmtree(aside, ignore_errors=True)
    return True


def sweep_temporary(corpus_dir: Path, older_than_s: float = 600.0) -> int:
    """Remove ``.tmp-*``/``.old-*`` directories left by a crashed writer. Returns how many."""
    removed = 0
    corpus_dir = Path(corpus_dir)
    if not corpus_dir.is_dir():
        return 0
    cutoff = time.time() - older_than_s
    for entry in corpus_dir.iterdir():
        if entry.name.startswith((".tmp-", ".old-")):
            try:
                if entry.stat().st_mtime < cutoff:
                    shutil.rmtree(entry, ignore_errors=True)
                    removed += 1
            except FileNotFoundError:
                continue
    return removed


def _read_pair(bundle_dir: Path) -> tuple[bytes, bytes]:
    if _DIR_FD:
        dir_fd = os.open(bundle_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return _read_at(dir_fd, MANIFEST), _read_at(dir_fd, CONTENT)
        finally:
            os.close(dir_fd)
    return (bundle_dir / MANIFEST).read_bytes(), (bundle_dir / CONTENT).read_bytes()  # pragma: no cover


def _read_at(dir_fd: int, name: str) -> bytes:
    fd = os.open(name, os.O_RDONLY, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _across_swaps(read: Callable[[], T], retry_on: tuple[type[BaseException], ...]) -> T:
    """``read()``, tried again after short sleeps while it fails with ``retry_on``.

    A reader can land between the two renames of a bundle swap (old moved aside, new not yet
    in place) or see a half-written file on a filesystem without atomic rename; a few
    milliseconds later the new generation is complete. The last error is re-raised.
    """
    last: BaseException | None = None
    for delay in (0.0, *_RETRY_DELAYS):
        if delay:
            time.sleep(delay)
        try:
            return read()
        except retry_on as err:
            last = err
    assert last is not None
    raise last


def read_bundle(bundle_dir: Path) -> tuple[dict, str]:
    """(manifest, markdown) of one bundle generation, retrying briefly across a concurrent swap."""
    bundle_dir = Path(bundle_dir)

    def read() -> tuple[dict, str]:
        raw_manifest, raw_content = _read_pair(bundle_dir)
        manifest = json.loads(raw_manifest)
        markdown = raw_content.decode("utf-8", "surrogatepass")
        expected = manifest.get("content_sha256")
        if expected and expected != content_sha256(markdown):
            raise BundleError(
                f"bundle {bundle_dir.name}: content.md does not match okf.json",
                "Run `zocrates-nb sync --verify` to re-materialise it.",
            )
        return manifest, markdown

    try:
        return _across_swaps(
            read, (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, UnicodeDecodeError, BundleError)
        )
    except BundleError:
        raise
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, UnicodeDecodeError) as err:
        raise NotFoundError(
            f"No complete bundle at {bundle_dir}.", "Run `zocrates-nb sync` to (re)build the corpus."
        ) from err


def read_manifest(bundle_dir: Path) -> dict:
    """The bundle's ``okf.json`` (retrying briefly across a concurrent swap)."""
    path = Path(bundle_dir) / MANIFEST
    try:
        return _across_swaps(
            lambda: json.loads(path.read_bytes()), (FileNotFoundError, NotADirectoryError, json.JSONDecodeError)
        )
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError) as err:
        raise NotFoundError(f"No manifest at {path}.", "Run `zocrates-nb sync` to (re)build the corpus.") from err


def read_markdown(bundle_dir: Path) -> str:
    """The bundle's ``content.md`` (checked against the manifest)."""
    return read_bundle(bundle_dir)[1]


@dataclass(frozen=True)
class StoredDocument:
    """One bundle as stored on disk; ``error`` says why it could not be read (then no content)."""

    key: str
    manifest: dict | None = None
    markdown: str | None = None
    error: str | None = None


def bundle_dirs(corpus_dir: Path) -> Iterator[Path]:
    """The bundle folders under ``corpus_dir`` (with an ``okf.json``; temporary ``.tmp-…`` ones skipped), sorted."""
    root = Path(corpus_dir)
    if not root.is_dir():
        return iter(())
    return iter(sorted(p for p in root.iterdir() if (p / MANIFEST).is_file() and not p.name.startswith(".")))


def stored_documents(corpus_dir: Path) -> Iterator[StoredDocument]:
    """Every bundle under ``corpus_dir`` read as it is (no staleness check, no library access).

    A bundle that does not read or verify is yielded with ``error`` set instead of raising, so a
    rebuild skips it and names it rather than stopping at the first damaged folder.
    """
    for bundle_dir in bundle_dirs(corpus_dir):
        try:
            manifest, markdown = read_bundle(bundle_dir)
        except (ZocratesError, KeyError, TypeError, ValueError) as err:
            yield StoredDocument(bundle_dir.name, error=f"{type(err).__name__}: {err}")
            continue
        yield StoredDocument(bundle_dir.name, manifest, markdown)
