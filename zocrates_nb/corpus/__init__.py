"""The corpus of OKF v0.2 bundles (``corpus/<key>/okf.json`` + ``content.md``).

``meta`` keeps key → SHA-256 of the source in ``conversion_meta.db``; ``bundle``
writes and reads bundles atomically; ``sync.Corpus`` keeps both in line with a
library source and serves the read path (``read_document``, ``get_document_toc``).
"""
