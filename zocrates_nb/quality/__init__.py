"""Measuring retrieval: the BEIR harness and its cached evaluation index, the demo notes' question set,
the known-item findability test of a user's own notes, and the IR metrics. Reads the index through its
public search; never changes ranking.
"""
