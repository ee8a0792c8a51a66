"""Retrieval diagnostics: what happened, recorded as append-only events and read back with DuckDB.

It owns the per-process JSONL event segments (``events``, the sink every stage is handed), the DuckDB
views over all segments (``views``: staleness, hit rates, token costs, the only module that imports
duckdb) and their matplotlib plots (``plots``). It sits at the bottom of the house beside ``settings``: it
imports only the shared root vocabulary (``errors``), so any stage can be given an event sink.
"""
