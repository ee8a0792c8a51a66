"""Ranking that needs no store: per-term plans, reciprocal-rank fusion with the note lane, and the
assembly of fused ranks into search hits. Pure functions over plain data (strictly typed).
"""
