"""How a data directory is doing: ``status`` (cheap, read-only, called on every REST status request) and
``doctor`` (every store checked; ``--repair`` fixes what it found). Reads the stores directly, so it
works when the engine cannot open.
"""
