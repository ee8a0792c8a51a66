"""The dense side of the index: ChromaDB (``store``, the only module that imports chromadb), the
zero-import fast read path (``fast``), the store's metadata and handles, and the background fill and
feed that embed committed chunks while the lexical side already answers.
"""
