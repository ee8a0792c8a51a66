"""The user's settings: ``zocrates_config.json`` (one declared schema, a file lock, atomic replace), the
API key (environment or ``secrets.json``), and the User Research Profile.

A side channel: settings are *fed* to the pipeline as plain values by the wiring (``workbench/``), so
nothing below the wiring imports this folder, and it imports nothing of the pipeline.
"""
