"""The query side the agents and the user see: the three agent tools (``search_corpus``,
``read_document``, ``get_document_toc``) with their evidence text, and ``explain`` (why a document ranks
where it does). Built on ``index/``; knows nothing of agents, settings or widgets.
"""
