"""Errors that reach the user.

Every error raised at a boundary (config, library, index, LLM, query) is a
``ZocratesError``: a message saying what went wrong and a ``hint`` saying what to
do about it. The CLI prints both and exits non-zero; widgets show both inline.
Never put an API key into a message.
"""

from __future__ import annotations


class ZocratesError(Exception):
    """Base class: ``str(err)`` is the message plus the hint on its own line."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message}\n  → {self.hint}" if self.hint else self.message


class ConfigError(ZocratesError):
    """zocrates_config.json is unreadable, corrupted, or a value was refused."""


class ValidationError(ConfigError):
    """A value offered for the config was refused; the file is left untouched."""


class LibraryError(ZocratesError):
    """The library source (demo, Zotero SQLite, Web API) failed."""


class LibraryLockedError(LibraryError):
    """Zotero's database could not be read (locked and no snapshot possible)."""


class LibraryReadOnlyError(LibraryError):
    """The configured library source cannot write notes."""


class NotFoundError(ZocratesError):
    """A note, paper, bundle or section key that does not exist."""


class ConversionError(ZocratesError):
    """A note's HTML could not be converted; the note in Zotero is untouched."""


class IndexCorruptError(ZocratesError):
    """The search index is missing, damaged, or built with another model."""


class StorageUnavailableError(ZocratesError):
    """A store of the data directory cannot be written: the directory is read-only or the disk is full.

    Not damage: nothing needs repairing or deleting, and the hint says what to free or allow instead
    (``storage/space.py`` tells the cases apart)."""


class QueryError(ZocratesError):
    """A search query that cannot be run (e.g. empty)."""


class LLMError(ZocratesError):
    """The language-model endpoint failed (auth, unknown model, unreachable, 5xx)."""
