"""Write small, real PDF files for tests: text on several pages, page labels, and the broken kinds.

Why by hand: a PDF is a few objects and a cross-reference table, and writing them ourselves keeps
the tests free of a PDF-writing dependency and in control of what the extractor is given — the
``/PageLabels`` number tree (roman front matter, then arabic from 1), a ``/Encrypt`` dictionary
whose password nobody knows, pages with no text layer (a scan), a truncated file. The text is set
in Helvetica with WinAnsiEncoding, one ``Tj`` per line, as simple producers write it.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

#: (first page index, numbering style, prefix, first number): style D arabic, r/R roman, a/A letters
Label = tuple[int, str, str, int]


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", "replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _text_stream(paragraphs: Sequence[str], width: int = 88) -> bytes:
    """A content stream: each paragraph wrapped to ``width`` characters, a blank line between them."""
    ops = [b"BT", b"/F1 10 Tf", b"13 TL", b"60 740 Td"]
    for paragraph in paragraphs:
        for line in textwrap.wrap(paragraph, width) or [""]:
            ops.append(_pdf_string(line) + b" Tj T*")
        ops.append(b"T*")
    ops.append(b"ET")
    return b"\n".join(ops)


def _scan_stream() -> bytes:
    """A page with a picture of text and no text layer: filled rectangles only."""
    return b"\n".join(f"0.2 g {60 + (i % 7) * 70} {700 - (i // 7) * 20} 60 8 re f".encode() for i in range(140))


def _label_tree(labels: Sequence[Label]) -> bytes:
    parts = []
    for start, style, prefix, first in labels:
        entry = f"<< /S /{style}" + (f" /P {_pdf_string(prefix).decode('latin-1')}" if prefix else "")
        entry += f" /St {first} >>" if first != 1 else " >>"
        parts.append(f"{start} {entry}")
    return f"<< /Nums [{' '.join(parts)}] >>".encode("latin-1")


def write_pdf(
    path: Path,
    pages: Sequence[Sequence[str] | None],
    *,
    labels: Sequence[Label] = (),
    encrypted: bool = False,
) -> Path:
    """Write a PDF whose page ``i`` shows the paragraphs ``pages[i]`` (``None``: a scanned page, no text).

    ``labels`` adds a ``/PageLabels`` tree, e.g. ``[(0, "r", "", 1), (2, "D", "", 1)]`` for i, ii, 1, 2 ….
    ``encrypted`` adds a standard security handler whose user password is unknown: readers refuse it.
    """
    objects: list[bytes] = []

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled in below, once the page tree exists
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    kids = []
    for paragraphs in pages:
        stream = _scan_stream() if paragraphs is None else _text_stream(paragraphs)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
                b"/Contents %d 0 R >>" % (tree, font, content)
            )
        )
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    objects[catalog - 1] = (
        b"<< /Type /Catalog /Pages %d 0 R" % tree + (b" /PageLabels " + _label_tree(labels) if labels else b"") + b" >>"
    )
    encrypt = (
        add(b"<< /Filter /Standard /V 1 /R 2 /Length 40 /P -44 /O <%s> /U <%s> >>" % (b"7a" * 32, b"3c" * 32))
        if encrypted
        else None
    )
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, catalog)
    if encrypt is not None:
        trailer += b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (encrypt, b"11" * 16, b"11" * 16)
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


_VOCABULARY = (
    "spatial transcriptomics maps gene expression across tissue sections while deconvolution estimates the "
    "cell types in each spot from single cell references with probabilistic models that borrow strength "
    "between neighbouring spots and correct for platform effects before clustering cortex layers tumour "
    "margins immune niches and stromal boundaries appear as smooth gradients rather than sharp borders"
).split()


def page_texts(count: int, words_per_page: int = 180, topic: str = "page", seed: int = 7) -> list[list[str]]:
    """``count`` pages of prose that never repeats itself: page ``i`` mentions ``{topic}marker{i}``.

    The words are drawn by a fixed linear congruential sequence, so the text is the same on every
    run and, like real prose, no run of a dozen words occurs twice.
    """
    state = seed
    pages = []
    for i in range(count):
        words = []
        for _ in range(words_per_page):
            state = (state * 1103515245 + 12345) % 2**31
            words.append(_VOCABULARY[(state >> 8) % len(_VOCABULARY)])
        words.insert(7, f"{topic}marker{i}")
        half = len(words) // 2
        pages.append([" ".join(words[:half]).capitalize() + ".", " ".join(words[half:]).capitalize() + "."])
    return pages
