"""Where an attachment's file is on disk, the way Zotero resolves it (``Zotero.Item.getFilePathAsync``).

Facts from zotero/zotero (``chrome/content/zotero/xpcom/data/item.js``, ``xpcom/attachments.js``):

- link modes: 0 imported file, 1 imported URL (both stored in ``<data dir>/storage/<attachment key>/``),
  2 linked file (anywhere), 3 linked URL (no file), 4 embedded image (a note's picture);
- an imported file's ``path`` is ``storage:<file name>``; names starting ``.zotero`` are Zotero's own
  files (``.zotero-ft-cache``), never the attachment;
- a linked file's ``path`` is absolute, or ``attachments:<relative path>`` (forward slashes, as it
  syncs between systems) under the "Linked Attachment Base Directory", the profile pref
  ``extensions.zotero.baseAttachmentPath`` (read by ``detect.attachment_base_dir``).

Pure: no file is opened here; ``is_pdf`` decides from the content type, or the name when Zotero
recorded none.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from zocrates_nb.library.desktop.reader import AttachmentRow

__all__ = ["BASE_PATH_PLACEHOLDER", "STORAGE_PREFIX", "attachment_path", "is_pdf", "needs_base_dir"]

STORAGE_PREFIX = "storage:"
#: ``Zotero.Attachments.BASE_PATH_PLACEHOLDER``
BASE_PATH_PLACEHOLDER = "attachments:"
_FILE_MODES = (0, 1)
_LINKED_FILE = 2


def is_pdf(row: AttachmentRow) -> bool:
    """A PDF attachment: ``application/pdf``, or no content type and a ``.pdf`` name."""
    if row.content_type:
        return row.content_type.strip().lower() == "application/pdf"
    return (row.path or "").lower().endswith(".pdf")


def needs_base_dir(row: AttachmentRow) -> bool:
    """A linked file stored relative to the base directory (so the pref must be looked up)."""
    return row.link_mode == _LINKED_FILE and (row.path or "").startswith(BASE_PATH_PLACEHOLDER)


def attachment_path(row: AttachmentRow, storage_dir: Path, base_dir: Path | None) -> Path | None:
    """The file an attachment names, or None when it has none we may read (a URL, an odd path)."""
    path = row.path or ""
    if row.link_mode in _FILE_MODES:
        if not path.startswith(STORAGE_PREFIX):
            return None
        name = path[len(STORAGE_PREFIX) :]
        # one file name inside storage/<key>/: a crafted path must not climb out of it
        if not name or name.startswith(".zotero") or "/" in name or "\\" in name or name in (".", ".."):
            return None
        return storage_dir / row.key / name
    if row.link_mode != _LINKED_FILE or not path:
        return None
    if path.startswith(BASE_PATH_PLACEHOLDER):
        if base_dir is None:
            return None
        relative = PurePosixPath(path[len(BASE_PATH_PLACEHOLDER) :].replace("\\", "/"))
        if relative.is_absolute():
            return None
        return Path(base_dir).joinpath(*relative.parts)
    linked = Path(path)
    return linked if linked.is_absolute() else None
