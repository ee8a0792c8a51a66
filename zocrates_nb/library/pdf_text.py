"""Per-page text from a paper's PDF files, with the PDF's page labels, cached per attachment.

Why PDFium (pypdfium2, Apache-2.0/BSD-3): on the same real PDFs it reads 13–19 times as many pages a
second as pypdf or pdfminer.six, with the same words (benchmarks/bench_pdf_extract.py, docs/performance.md),
it is the engine Chrome ships, so damaged files that browsers open it opens too, and its wheel
carries the library (no system package). It gives each page's text and ``/PageLabels``
(``FPDF_GetPageLabel``: "iv", "12"); a page without a label is called by its 1-based number.

A PDF that cannot be read never fails a sync: ``read_pdf`` returns a ``PdfText`` with the reason
(encrypted, damaged, not a PDF, no text layer) and the paper falls back to Zotero's full-text cache.

Why a cache (``<data dir>/pdf_text.sqlite``): a paper is re-converted when its metadata or its
collections change, or when the converter changes; its PDF usually did not. The cache keeps each
attachment's pages under the file's size and modification time, so an unchanged PDF is never read
twice; a changed one (new size or mtime) is read again. The pages are stored zlib-compressed.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import zlib
from pathlib import Path

from zocrates_nb.records import PdfFile, PdfPage, PdfText
from zocrates_nb.storage.sqlite_tx import enable_wal

__all__ = ["EXTRACTOR", "PdfPageReader", "PdfTextCache", "clean_label", "read_pdf"]

log = logging.getLogger(__name__)

#: bump when what is extracted from the same file changes: every cached entry is then read again
EXTRACTOR = "pdfium/1"
#: PDFium's own parser tolerates up to 1,024 bytes of junk before ``%PDF-``; past that it is not a PDF
_HEADER_WINDOW = 1024
#: how a failure to open the file begins: a passing condition (permissions, a file being written), never cached
UNOPENED = "the PDF file could not be opened"
_LABEL_JUNK = re.compile(r"[\[\]<>{}\x00-\x1f\x7f]")
_LABEL_CHARS = 24
#: PDFium is not thread-safe: one document at a time in this process
_PDFIUM = threading.Lock()


def _failure_reason(message: str) -> str:
    """PDFium's load error → what the user reads in the sync report."""
    if "password" in message.lower():
        return "the PDF is encrypted (it needs a password)"
    if "format" in message.lower() or "file" in message.lower():
        return f"the PDF is damaged ({message})"
    return f"the PDF could not be read ({message})"


def clean_label(label: str | None, index: int) -> str:
    """A page label fit to print in a citation: one short line, no brackets (it comes from the file, so it
    must not be able to shape an evidence header); the 1-based page number when there is none."""
    text = " ".join(_LABEL_JUNK.sub(" ", label or "").split())[:_LABEL_CHARS]
    return text or str(index + 1)


def read_pdf(path: Path, attachment_key: str) -> PdfText:
    """Each page's text and label, or the reason there are none (never raises for the file's content)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEADER_WINDOW)
    except OSError as exc:
        return PdfText(attachment_key, failure=f"{UNOPENED} ({exc.strerror or exc})")
    if b"%PDF-" not in head:
        return PdfText(attachment_key, failure="the file is not a PDF (no %PDF- header)")
    try:  # pypdfium2 loads PDFium (a 6 MB shared library) on import: only a sync with PDFs pays for it
        import pypdfium2
    except ImportError:
        return PdfText(attachment_key, failure=f"{UNOPENED}: pypdfium2 is not installed (pip install pypdfium2)")

    pages: list[PdfPage] = []
    with _PDFIUM:
        try:
            document = pypdfium2.PdfDocument(str(path))
        except pypdfium2.PdfiumError as exc:
            return PdfText(attachment_key, failure=_failure_reason(str(exc)))
        try:
            for index in range(len(document)):
                page = document[index]
                textpage = page.get_textpage()
                try:
                    text = textpage.get_text_range()
                finally:
                    textpage.close()
                    page.close()
                pages.append(PdfPage(index, clean_label(document.get_page_label(index), index), text))
        except pypdfium2.PdfiumError as exc:
            return PdfText(attachment_key, failure=_failure_reason(str(exc)))
        finally:
            document.close()
    if not any(p.text.strip() for p in pages):
        return PdfText(attachment_key, failure=f"the PDF has no text layer ({len(pages)} pages; a scan?)")
    return PdfText(attachment_key, tuple(pages))


class PdfTextCache:
    """``attachment key → (size, mtime_ns, extractor, failure, pages)`` in one SQLite file.

    A cache, not a store: any error reading or writing it is logged and the PDF is simply read
    (again); it never fails the work it speeds up.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False, timeout=10.0)
            enable_wal(conn)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS pdf_text (attachment_key TEXT PRIMARY KEY, size INTEGER NOT NULL, "
                "mtime_ns INTEGER NOT NULL, extractor TEXT NOT NULL, failure TEXT, pages BLOB)"
            )
            self._conn = conn
        return self._conn

    def get(self, pdf: PdfFile) -> PdfText | None:
        """The cached text of this very file (same size and mtime, same extractor), else None."""
        try:
            with self._lock:
                row = (
                    self._connection()
                    .execute(
                        "SELECT failure, pages FROM pdf_text WHERE attachment_key = ? AND size = ? AND mtime_ns = ? "
                        "AND extractor = ?",
                        (pdf.attachment_key, pdf.size, pdf.mtime_ns, EXTRACTOR),
                    )
                    .fetchone()
                )
            if row is None:
                return None
            failure, blob = row
            pages = tuple(PdfPage(i, label, text) for i, label, text in json.loads(zlib.decompress(blob)))
            return PdfText(pdf.attachment_key, pages, failure)
        except (sqlite3.Error, OSError, ValueError, zlib.error) as exc:
            log.warning("PDF text cache %s unreadable (%s); reading the PDF", self.path, exc)
            return None

    def put(self, pdf: PdfFile, text: PdfText) -> None:
        blob = zlib.compress(json.dumps([[p.index, p.label, p.text] for p in text.pages]).encode("utf-8"), 6)
        try:
            with self._lock:
                self._connection().execute(
                    "INSERT OR REPLACE INTO pdf_text VALUES (?, ?, ?, ?, ?, ?)",
                    (pdf.attachment_key, pdf.size, pdf.mtime_ns, EXTRACTOR, text.failure, blob),
                )
        except (sqlite3.Error, OSError) as exc:
            log.warning("PDF text cache %s not written (%s); the PDF will be read again next time", self.path, exc)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


class PdfPageReader:
    """What the corpus asks for a paper's PDFs (``corpus.writer.PageReader``): cached, then extracted.

    ``extracted`` and ``cached`` count the files read and the files served from the cache (what the
    benchmark and the tests of "an unchanged PDF is not read again" look at).
    """

    def __init__(self, cache_path: Path) -> None:
        self.cache = PdfTextCache(cache_path)
        self.extracted = 0
        self.cached = 0

    def read(self, pdf: PdfFile) -> PdfText:
        found = self.cache.get(pdf)
        if found is not None:
            self.cached += 1
            return found
        text = read_pdf(Path(pdf.path), pdf.attachment_key)
        self.extracted += 1
        if not (text.failure or "").startswith(UNOPENED):
            self.cache.put(pdf, text)
        return text

    def close(self) -> None:
        self.cache.close()
