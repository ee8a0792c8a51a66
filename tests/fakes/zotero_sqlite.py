"""Build small ``zotero.sqlite`` files for tests, following the schema facts in
../shared/docs/zotero-formats.md §1 (Zotero 5, 7, 9 and 10 variants).

The variants differ where real Zotero databases differ: Zotero 5 has no
``*Combined`` tables, ``deletedCollections`` or ``itemAnnotations`` (Zotero 6+); 9 adds ``itemAttachments.lastRead``
and ``libraries.isAdmin``; 10 adds ``clientVersion`` columns, ``*Normalized``
columns and runs in WAL mode. Item type and field ids are deliberately
different in every variant, as they are between real databases, so a reader
that hard-codes ids fails these tests.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

USERDATA_VERSION = {"5": 102, "7": 123, "9": 125, "10": 129}

_TYPES = [
    "note",
    "attachment",
    "annotation",
    "journalArticle",
    "book",
    "bookSection",
    "conferencePaper",
    "preprint",
    "case",
]
_FIELDS = ["title", "date", "DOI", "abstractNote", "publicationTitle", "bookTitle", "extra", "caseName", "url"]
_CREATOR_TYPES = ["author", "editor", "contributor"]


def _ddl(variant: str) -> str:
    v10 = variant == "10"
    client = ", clientVersion INT NOT NULL DEFAULT 0" if v10 else ""
    norm = lambda col: f", {col}Normalized TEXT" if v10 else ""  # noqa: E731
    lib_extra = {
        "5": "",
        "7": ", archived INT NOT NULL DEFAULT 0",
        "9": ", archived INT NOT NULL DEFAULT 0, isAdmin INT NOT NULL DEFAULT 0",
        "10": ", archived INT NOT NULL DEFAULT 0, isAdmin INT NOT NULL DEFAULT 0",
    }[variant]
    att_extra = ", lastProcessedModificationTime INT, lastRead INT" if variant in ("9", "10") else ""
    ddl = f"""
    CREATE TABLE version (schema TEXT PRIMARY KEY, version INT NOT NULL);
    CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL,
        filesEditable INT NOT NULL, version INT NOT NULL DEFAULT 0, storageVersion INT NOT NULL DEFAULT 0,
        lastSync INT NOT NULL DEFAULT 0{lib_extra}{client});
    CREATE TABLE groups (groupID INTEGER PRIMARY KEY, libraryID INT NOT NULL UNIQUE, name TEXT NOT NULL,
        description TEXT NOT NULL, version INT NOT NULL);
    CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT,
        display INT DEFAULT 1);
    CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
    CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
    CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL,
        dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
        dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
        clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, libraryID INT NOT NULL,
        key TEXT NOT NULL, version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0{client},
        UNIQUE (libraryID, key));
    CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE{norm("value")});
    CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID));
    CREATE TABLE itemNotes (itemID INTEGER PRIMARY KEY, parentItemID INT, note TEXT, title TEXT);
    CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT,
        contentType TEXT, charsetID INT, path TEXT, syncState INT DEFAULT 0, storageModTime INT,
        storageHash TEXT{att_extra});
    CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT
        {norm("firstName")}{norm("lastName")}, UNIQUE (lastName, firstName, fieldMode));
    CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL,
        creatorTypeID INT NOT NULL DEFAULT 1, orderIndex INT NOT NULL DEFAULT 0,
        PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex), UNIQUE (itemID, orderIndex));
    CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL,
        parentCollectionID INT DEFAULT NULL, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
        libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0,
        synced INT NOT NULL DEFAULT 0{client}, UNIQUE (libraryID, key));
    CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL,
        orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (collectionID, itemID));
    CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
    CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE{norm("name")});
    CREATE TABLE itemTags (itemID INT NOT NULL, tagID INT NOT NULL, type INT NOT NULL, PRIMARY KEY (itemID, tagID));
    CREATE TABLE relationPredicates (predicateID INTEGER PRIMARY KEY, predicate TEXT UNIQUE);
    CREATE TABLE itemRelations (itemID INT NOT NULL, predicateID INT NOT NULL, object TEXT NOT NULL,
        PRIMARY KEY (itemID, predicateID, object));
    """
    if variant != "5":
        ddl += """
        CREATE TABLE itemTypesCombined (itemTypeID INT NOT NULL, typeName TEXT NOT NULL,
            display INT DEFAULT 1 NOT NULL, custom INT NOT NULL, PRIMARY KEY (itemTypeID));
        CREATE TABLE fieldsCombined (fieldID INT NOT NULL, fieldName TEXT NOT NULL, label TEXT,
            fieldFormatID INT, custom INT NOT NULL, PRIMARY KEY (fieldID));
        CREATE TABLE deletedCollections (collectionID INTEGER PRIMARY KEY,
            dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
        """
        # Zotero 6+ (userdata 106+): PDF annotations, children of their attachment; 10 adds *Normalized
        ddl += f"""
        CREATE TABLE itemAnnotations (itemID INTEGER PRIMARY KEY, parentItemID INT NOT NULL, type INTEGER NOT NULL,
            authorName TEXT, text TEXT, comment TEXT, color TEXT, pageLabel TEXT, sortIndex TEXT NOT NULL,
            position TEXT NOT NULL, isExternal INT NOT NULL{norm("text")}{norm("comment")});
        """
    return ddl


class ZoteroDB:
    """A tiny Zotero database. ``with ZoteroDB(path, "9") as db: db.add_paper(...)``."""

    def __init__(self, path: Path, variant: str = "7") -> None:
        if variant not in USERDATA_VERSION:
            raise ValueError(f"variant must be one of {sorted(USERDATA_VERSION)}")
        self.path, self.variant = Path(path), variant
        self.conn = sqlite3.connect(str(path), isolation_level=None)
        if variant == "10":
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.executescript(_ddl(variant))
        self.conn.execute("INSERT INTO version VALUES ('userdata', ?)", (USERDATA_VERSION[variant],))
        offset = {"5": 1, "7": 3, "9": 7, "10": 11}[variant]  # ids differ between databases
        self.type_id = {name: offset + (i * 5) % 37 for i, name in enumerate(_TYPES)}
        self.field_id = {name: offset * 2 + i for i, name in enumerate(_FIELDS)}
        self.ctype_id = {name: i + 1 for i, name in enumerate(_CREATOR_TYPES)}
        for name, tid in self.type_id.items():
            self.conn.execute("INSERT INTO itemTypes(itemTypeID, typeName) VALUES (?, ?)", (tid, name))
            if variant != "5":
                self.conn.execute("INSERT INTO itemTypesCombined VALUES (?, ?, 1, 0)", (tid, name))
        for name, fid in self.field_id.items():
            self.conn.execute("INSERT INTO fields(fieldID, fieldName) VALUES (?, ?)", (fid, name))
            if variant != "5":
                self.conn.execute("INSERT INTO fieldsCombined VALUES (?, ?, NULL, NULL, 0)", (fid, name))
        for name, cid in self.ctype_id.items():
            self.conn.execute("INSERT INTO creatorTypes VALUES (?, ?)", (cid, name))
        cols = "libraryID, type, editable, filesEditable, version"
        self.conn.execute(f"INSERT INTO libraries({cols}) VALUES (1, 'user', 1, 1, 40)")
        self.conn.execute(f"INSERT INTO libraries({cols}) VALUES (2, 'group', 1, 1, 7)")
        if variant == "10":
            self.conn.execute("UPDATE libraries SET clientVersion = 77 WHERE libraryID = 1")
        self.item_ids: dict[str, int] = {}
        self.collection_ids: dict[str, int] = {}

    @classmethod
    def reopen(cls, path: Path, variant: str = "7") -> ZoteroDB:
        """An existing test database, to change it later ("Zotero synced a note down")."""
        db = cls.__new__(cls)
        db.path, db.variant = Path(path), variant
        db.conn = sqlite3.connect(str(path), isolation_level=None)
        db.type_id = dict(db.conn.execute("SELECT typeName, itemTypeID FROM itemTypes"))
        db.field_id = dict(db.conn.execute("SELECT fieldName, fieldID FROM fields"))
        db.ctype_id = dict(db.conn.execute("SELECT creatorType, creatorTypeID FROM creatorTypes"))
        db.item_ids = dict(db.conn.execute("SELECT key, itemID FROM items"))
        db.collection_ids = dict(db.conn.execute("SELECT key, collectionID FROM collections"))
        return db

    # -- building ---------------------------------------------------------
    def _item(self, key: str, type_name: str, library_id: int = 1, version: int = 5) -> int:
        cur = self.conn.execute(
            "INSERT INTO items(itemTypeID, libraryID, key, version, dateAdded, dateModified) "
            "VALUES (?, ?, ?, ?, '2023-01-17 15:43:51', '2023-01-17 15:44:41')",
            (self.type_id[type_name], library_id, key, version),
        )
        item_id = cur.lastrowid
        if self.variant == "10":
            self.conn.execute("UPDATE items SET clientVersion = ? WHERE itemID = ?", (version + 100, item_id))
        self.item_ids[key] = item_id
        return item_id

    def _field(self, item_id: int, name: str, value: str) -> None:
        self.conn.execute("INSERT OR IGNORE INTO itemDataValues(value) VALUES (?)", (value,))
        (value_id,) = self.conn.execute("SELECT valueID FROM itemDataValues WHERE value = ?", (value,)).fetchone()
        self.conn.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, self.field_id[name], value_id))

    def add_group(self, group_id: int, name: str, library_id: int = 2) -> None:
        """Library ``library_id`` (2 is a group library in every fake) as zotero.org group ``group_id``."""
        self.conn.execute(
            "INSERT INTO groups(groupID, libraryID, name, description, version) VALUES (?, ?, ?, '', 3)",
            (group_id, library_id, name),
        )

    def add_collection(self, key: str, name: str, parent: str | None = None, library_id: int = 1) -> None:
        cur = self.conn.execute(
            "INSERT INTO collections(collectionName, parentCollectionID, libraryID, key) VALUES (?, ?, ?, ?)",
            (name, self.collection_ids.get(parent), library_id, key),
        )
        self.collection_ids[key] = cur.lastrowid

    def add_paper(
        self,
        key: str,
        title: str,
        *,
        item_type: str = "journalArticle",
        creators: list[tuple[str, str, str]] = (),
        date: str | None = None,
        doi: str | None = None,
        abstract: str | None = None,
        publication: str | None = None,
        extra: str | None = None,
        collections: list[str] = (),
        library_id: int = 1,
    ) -> int:
        """``creators``: (firstName, lastName, creatorType); firstName "" → single-field name."""
        item_id = self._item(key, item_type, library_id)
        self._field(item_id, "caseName" if item_type == "case" else "title", title)
        for name, value in (
            ("date", date),
            ("DOI", doi),
            ("abstractNote", abstract),
            ("publicationTitle", publication),
            ("extra", extra),
        ):
            if value is not None:
                self._field(item_id, name, value)
        # insert in reverse so row order differs from orderIndex (readers must ORDER BY it)
        for order, (first, last, ctype) in reversed(list(enumerate(creators))):
            mode = 1 if not first else 0
            self.conn.execute(
                "INSERT OR IGNORE INTO creators(firstName, lastName, fieldMode) VALUES (?, ?, ?)", (first, last, mode)
            )
            (cid,) = self.conn.execute(
                "SELECT creatorID FROM creators WHERE firstName = ? AND lastName = ? AND fieldMode = ?",
                (first, last, mode),
            ).fetchone()
            self.conn.execute(
                "INSERT INTO itemCreators VALUES (?, ?, ?, ?)", (item_id, cid, self.ctype_id[ctype], order)
            )
        for coll in collections:
            self.conn.execute(
                "INSERT INTO collectionItems(collectionID, itemID) VALUES (?, ?)", (self.collection_ids[coll], item_id)
            )
        return item_id

    def add_note(
        self,
        key: str,
        html: str,
        *,
        parent: str | None = None,
        collections: list[str] = (),
        wrap: bool = True,
        title: str = "",
        library_id: int = 1,
    ) -> int:
        """Stored as Zotero stores it: with the ``zotero-note znv1`` wrapper unless ``wrap=False``."""
        item_id = self._item(key, "note", library_id)
        raw = f'<div class="zotero-note znv1">{html}</div>' if wrap else html
        self.conn.execute("INSERT INTO itemNotes VALUES (?, ?, ?, ?)", (item_id, self.item_ids.get(parent), raw, title))
        for coll in collections:
            self.conn.execute(
                "INSERT INTO collectionItems(collectionID, itemID) VALUES (?, ?)", (self.collection_ids[coll], item_id)
            )
        return item_id

    def add_attachment(
        self,
        key: str,
        parent: str,
        *,
        note: str | None = None,
        link_mode: int = 0,
        path: str | None = "storage:paper.pdf",
        content_type: str | None = "application/pdf",
        library_id: int = 1,
    ) -> int:
        """A child attachment as Zotero stores it: ``link_mode`` 0 imported file (``path`` ``storage:NAME``,
        the file in ``storage/<key>/``), 1 imported URL, 2 linked file (an absolute path or
        ``attachments:REL`` under the linked-attachment base directory), 3 linked URL (no file)."""
        item_id = self._item(key, "attachment", library_id)
        self.conn.execute(
            "INSERT INTO itemAttachments(itemID, parentItemID, linkMode, contentType, path) VALUES (?, ?, ?, ?, ?)",
            (item_id, self.item_ids[parent], link_mode, content_type, path),
        )
        if note is not None:  # attachment notes live in itemNotes too
            self.conn.execute(
                "INSERT INTO itemNotes VALUES (?, ?, ?, '')",
                (item_id, self.item_ids[parent], f'<div class="zotero-note znv1">{note}</div>'),
            )
        return item_id

    def add_annotation(
        self,
        key: str,
        attachment: str,
        *,
        type_id: int = 1,
        text: str | None = None,
        comment: str | None = None,
        color: str = "#ffd400",
        page_label: str = "1",
        page_index: int = 0,
        sort_index: str | None = None,
        tags: list[str] = (),
        library_id: int = 1,
    ) -> int:
        """An annotation as Zotero's reader stores it (type 1 highlight, 2 note, 3 image, 4 ink, 5 underline,
        6 text): a child of its PDF attachment, ``position`` JSON, ``sortIndex`` ``PPPPP|OOOOOO|TTTTT``."""
        item_id = self._item(key, "annotation", library_id)
        position = f'{{"pageIndex":{page_index},"rects":[[305.787,724.52,327.787,746.52]]}}'
        self.conn.execute(
            "INSERT INTO itemAnnotations(itemID, parentItemID, type, authorName, text, comment, color, pageLabel, "
            "sortIndex, position, isExternal) VALUES (?, ?, ?, '', ?, ?, ?, ?, ?, ?, 0)",
            (
                item_id,
                self.item_ids[attachment],
                type_id,
                text,
                comment,
                color,
                page_label,
                sort_index or f"{page_index:05d}|000000|00069",
                position,
            ),
        )
        for tag in tags:
            self.tag(key, tag)
        return item_id

    def update_annotation(self, key: str, **columns) -> None:
        """Change stored columns (``text``, ``comment``, ``color``, ``pageLabel``) as an edit in the reader does."""
        for column, value in columns.items():
            self.conn.execute(f"UPDATE itemAnnotations SET {column} = ? WHERE itemID = ?", (value, self.item_ids[key]))
        self.conn.execute(
            "UPDATE items SET dateModified = '2024-02-01 10:00:00' WHERE itemID = ?", (self.item_ids[key],)
        )

    def delete_item(self, key: str) -> None:
        """Erase an item for good (emptied trash): Zotero's ``ON DELETE CASCADE`` drops its child rows."""
        item_id = self.item_ids.pop(key)
        for table in ("itemAnnotations", "itemNotes", "itemAttachments", "itemTags", "itemData", "items"):
            self.conn.execute(f"DELETE FROM {table} WHERE itemID = ?", (item_id,))

    def relate(self, key: str, other: str, *, both: bool = True, predicate: str = "dc:relation") -> None:
        """Zotero's "Related" list: ``predicate`` with the other item's URI, on both items unless ``both=False``."""
        self.conn.execute("INSERT OR IGNORE INTO relationPredicates(predicate) VALUES (?)", (predicate,))
        (pid,) = self.conn.execute(
            "SELECT predicateID FROM relationPredicates WHERE predicate = ?", (predicate,)
        ).fetchone()
        for a, b in [(key, other), (other, key)][: 2 if both else 1]:
            self.conn.execute(
                "INSERT INTO itemRelations VALUES (?, ?, ?)",
                (self.item_ids[a], pid, f"http://zotero.org/users/1/items/{b}"),
            )

    def tag(self, key: str, name: str) -> None:
        self.conn.execute("INSERT OR IGNORE INTO tags(name) VALUES (?)", (name,))
        (tag_id,) = self.conn.execute("SELECT tagID FROM tags WHERE name = ?", (name,)).fetchone()
        self.conn.execute("INSERT OR IGNORE INTO itemTags VALUES (?, ?, 0)", (self.item_ids[key], tag_id))

    def trash(self, key: str) -> None:
        self.conn.execute("INSERT INTO deletedItems(itemID) VALUES (?)", (self.item_ids[key],))

    def trash_collection(self, key: str) -> None:
        self.conn.execute("INSERT INTO deletedCollections(collectionID) VALUES (?)", (self.collection_ids[key],))

    def set_setting(self, setting: str, key: str, value) -> None:
        """Zotero's ``settings`` table: ``account.userID`` (the synced account), ``client.lastVersion``."""
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS settings (setting TEXT, key TEXT, value, PRIMARY KEY (setting, key))"
        )
        self.conn.execute("INSERT OR REPLACE INTO settings VALUES (?, ?, ?)", (setting, key, value))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> ZoteroDB:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
