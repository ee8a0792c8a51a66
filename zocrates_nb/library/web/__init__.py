"""The zotero.org Web API (and Zotero's local API, which speaks the same format) as a library source:
pyzotero for the wire, a SQLite cache so a sync fetches only what changed, and the mapping from API
objects to the records in ``library.base``. The only place that imports pyzotero.
"""
