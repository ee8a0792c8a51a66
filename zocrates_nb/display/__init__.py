"""Pure HTML for what the notebook shows: search results, answers, note bundles, saved-note messages.
Every untrusted fragment is sanitized (``zocrates_nb.sanitize``); nothing here imports a UI library or
touches a file, so the engine's ``_repr_html_`` and the widgets share one renderer.
"""
