"""Writing notes into a Zotero library: the local-API and Web API note writers, which of them a config
has, the outbox (saved notes not yet confirmed by Zotero, pushed exactly once) and the one-time setup
checks the CLI runs. May import ``library.base``, ``library.web`` and the shared helpers; never the
settings module (config arrives as a plain dict).
"""
