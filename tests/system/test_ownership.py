"""Each third-party library is imported by one module (docs/contracts.md, "Conventions")."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "zocrates_nb"

OWNERS = {
    "chromadb": {"index/vectors/store.py"},
    "chromadb_rust_bindings": {"index/vectors/fast.py"},  # Chroma's Rust core: read-only one-shot queries
    "duckdb": {"diagnostics/views.py"},
    "openai": {"agents/llm.py"},
    "pyzotero": {"library/web/source.py"},
    "markdownify": {"convert/html.py"},
    "bs4": {"convert/html.py"},
    "markdown_it": {"convert/note_html.py"},
    "nh3": {"sanitize.py"},
    "quicktok": {"tokens.py"},
    "matplotlib": {"diagnostics/plots.py"},
    "tqdm": {"progress.py"},
    "filelock": {"settings/config.py", "storage/locks.py"},
    "httpx": {"agents/online_clients.py"},
    "defusedxml": {"agents/online_clients.py"},
    "httpx2": {"library/web/source.py"},  # pyzotero's own HTTP client, for its error types
    "pypdfium2": {"library/pdf_text.py"},  # PDFium: per-page text and page labels of PDF attachments
    "pybtex": {"export/bibtex.py"},  # the .bib of an exported answer
}

#: libraries owned by a whole sub-package rather than one module
PACKAGE_OWNERS = {
    "ipywidgets": "widgets/",
    "anywidget": "widgets/",
    # the embedding model: its runtime (model.py), its one-time ONNX build and int8 quantization (build.py)
    "onnxruntime": "index/embed/",
    "onnx": "index/embed/",
    "tokenizers": "index/embed/",
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_each_third_party_library_has_one_owner():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        for lib in _imports(path) & OWNERS.keys():
            if rel not in OWNERS[lib]:
                offenders.append(f"{rel} imports {lib} (owner: {sorted(OWNERS[lib])})")
        for lib in _imports(path) & PACKAGE_OWNERS.keys():
            if not rel.startswith(PACKAGE_OWNERS[lib]):
                offenders.append(f"{rel} imports {lib} (owner: {PACKAGE_OWNERS[lib]})")
    assert offenders == []


def test_owners_exist():
    missing = {lib: o for lib, owners in OWNERS.items() for o in owners if not (PACKAGE / o).exists()}
    assert missing == {}
