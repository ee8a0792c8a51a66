"""The hybrid index over the corpus's chunks: SQLite FTS5 and ChromaDB vectors, fused by rank.

It owns the index's one SQLite connection and settings (``core``), keeping it consistent with the corpus
(``consistency``: FTS rows inside the corpus's transaction, vectors after its commit, reconcile, rebuild),
searching it (``searching``, ``filtered``; ``HybridIndex`` in ``hybrid`` assembles the three), what a chunk
is indexed with (``records``, ``context``) and the background warm-up of the dense side (``warmup``).
Its four parts are layered inside (vectors, then embed, lexical, rank; import-linter keeps it). It may
import the corpus, conversion, storage, the settings' schema and the shared root vocabulary. It is handed
its settings and an event sink, so it never reads the config, the secrets or diagnostics, and it never
imports the library sources, the query side (retrieval), the agents or any face.
"""
