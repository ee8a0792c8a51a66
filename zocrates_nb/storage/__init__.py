"""Durable-write primitives every store of the data directory uses: atomic file replace, file locks,
SQLite transactions and WAL, content hashes.

Why one folder: each store (bundles, meta db, FTS, outbox, config, demo library) must fail the same way
on a locked file or a full disk; these modules are the one place that knows how. They import nothing of
the package but ``errors``, so every layer may use them.
"""
