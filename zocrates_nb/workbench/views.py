"""The read-only views of a workbench: library, profile, status, the Zotero offer (a mixin of ``Workbench``).

Why this module exists: ``workbench.py`` is the one wiring module (which source, index, agents
a data directory gets); these methods wire nothing. They read what is already wired (the
library source, the config store, the data directory) for a notebook, a widget or the CLI,
so they live beside the wiring as ``WorkbenchViews`` (issue 12). ``Workbench`` inherits them
unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from zocrates_nb.errors import NotFoundError

if TYPE_CHECKING:
    from zocrates_nb.corpus.sync import Corpus
    from zocrates_nb.display.render import BundleView
    from zocrates_nb.index.hybrid import HybridIndex
    from zocrates_nb.library.base import Collection, LibrarySource, Paper
    from zocrates_nb.library.desktop.detect import DetectedLibrary
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.retrieval.tools import LibraryTools
    from zocrates_nb.settings.config import ConfigStore


class WorkbenchViews:
    """What a workbench shows without changing anything; ``Workbench`` sets ``paths``, ``config``, ``source``
    and opens ``corpus`` and ``tools``."""

    paths: DataPaths
    config: ConfigStore
    source: LibrarySource

    if TYPE_CHECKING:  # opened lazily by ``Workbench`` (cached properties)

        @property
        def corpus(self) -> Corpus: ...

        @property
        def tools(self) -> LibraryTools: ...

        @property
        def index(self) -> HybridIndex: ...

        def read_document(self, key: str, section: str | None = None) -> str: ...

    # -- documents -----------------------------------------------------------
    def get_document_toc(self, key: str) -> list[dict[str, Any]]:
        """The headings of a document, to read one section with ``read_document(key, section=...)``."""
        return self.tools.get_document_toc(key)

    def bundle(self, key: str) -> BundleView:
        """A note or paper as a notebook shows it: title, provenance, sanitized content (``BundleView``).

        The Markdown is read first (one ``read`` event; a stale bundle is re-materialised), then
        the manifest of that same fresh bundle is looked up (a ``lookup``, so one display counts
        as one read in the hit rates).
        """
        from zocrates_nb.display.render import BundleView

        markdown = self.read_document(key)
        return BundleView(self.corpus.manifest(key), markdown)

    # -- your own Zotero ---------------------------------------------------
    def zotero_offer(self) -> DetectedLibrary | None:
        """On the demo library, the first Zotero library found on this computer (an offer; nothing switches)."""
        from zocrates_nb.library.desktop.detect import detect

        if (self.config.read().get("library") or {}).get("source", "demo") != "demo":
            return None
        found = detect(probe=False)
        return found[0] if found else None

    def zotero_folder(self, path: str | Path | None = None) -> Path:
        """The Zotero data directory ``path`` names (the detected one by default), checked to hold a
        ``zotero.sqlite``: what ``use_zotero`` switches to."""
        if path is None:
            offer = self.zotero_offer()
            if offer is None:
                raise NotFoundError(
                    "No Zotero data directory was found.",
                    "Pass its folder: wb.use_zotero('~/Zotero'), or run `zocrates-nb library detect`.",
                )
            path = offer.path
        folder = Path(path).expanduser().resolve()
        if not (folder / "zotero.sqlite").is_file():
            raise NotFoundError(f"No zotero.sqlite inside {folder}.", "Give Zotero's data directory.")
        return folder

    def pending_notes(self) -> dict[str, str]:
        """Notes saved here that wait in the outbox (not yet in Zotero), key → why; {} for the demo library.

        Why here, in the wiring: search results say "not yet in Zotero" for these keys, but the index
        and the tools never open the outbox; ``Workbench.tools`` is handed this lookup (one query a search).
        """
        from zocrates_nb.library.pending import is_zotero_source
        from zocrates_nb.library.writing.outbox import Outbox

        return Outbox.for_paths(self.paths).unsent() if is_zotero_source(self.source) else {}

    # -- library views ----------------------------------------------------
    def collections(self) -> list[Collection]:
        """The library's collections, by name."""
        return sorted(self.source.snapshot().collections, key=lambda c: c.name.lower())

    def papers(self) -> list[Paper]:
        """The library's papers, by first author and year."""
        return sorted(self.source.snapshot().papers, key=lambda p: (p.first_author, p.year or 0))

    def libraries(self) -> list[dict[str, Any]]:
        """The libraries searched (the user's own first, then each group), as the last sync recorded them:
        ``library_id``, ``name``, ``kind``, ``group_id`` and ``documents``. ``search(filters={"library": …})``
        and ``ask(…, library=…)`` take a name or an id."""
        return [
            {
                "library_id": lib.library_id,
                "name": lib.name,
                "kind": lib.kind,
                "group_id": lib.group_id,
                "documents": count,
            }
            for lib, count in self.index.libraries()
        ]

    def library_label(self) -> str:
        """The library's name for a header ("Demo library", "Zotero desktop"), without its file path."""
        return self.source.describe().split(" (")[0]

    def llm_configured(self) -> bool:
        """Whether a language model is configured (else answers are evidence-only)."""
        return bool(self.config.llm().configured)

    # -- profile -------------------------------------------------------------
    @property
    def profile(self) -> str:
        """The User Research Profile sent with every question ('' when none is set)."""
        return self.config.profile()

    @property
    def profile_limit(self) -> int:
        """The most characters the profile may hold (``max_research_profile_chars``, 1,000 by default)."""
        return int(self.config.profile_limit())

    def set_profile(self, text: str) -> None:
        """Validate and save the profile (refused past ``profile_limit``; the file is then left as it was)."""
        self.config.set_profile(text)

    def clear_profile(self) -> None:
        """Remove the profile: no profile section is sent with questions."""
        self.config.clear_profile()

    def status(self) -> dict[str, Any]:
        """What ``zocrates-nb status`` shows: data directory, library, corpus, index, profile, LLM (never a key)."""
        from zocrates_nb.health.status import collect_status

        status = collect_status(self.paths)
        status.setdefault("library", {})["label"] = self.source.describe()
        return status
