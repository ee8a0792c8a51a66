"""Zotero desktop: find its data directories, copy ``zotero.sqlite`` to a private snapshot (Zotero keeps
the live file locked), and read notes, papers and collections from the copy by schema name, never by
position (userdata schemas 102 to 129). May import ``library.base`` and the shared helpers.
"""
