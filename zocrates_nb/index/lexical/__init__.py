"""The lexical side of the index: SQLite FTS5 tables and their migrations, MATCH building, the split
ranking that scores rare words first (``split``), the cached bm25 shares of everyday words
(``impacts``) and pseudo-relevance feedback for the note lane (``prf``).
"""
