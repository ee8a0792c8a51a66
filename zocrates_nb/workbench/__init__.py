"""The wiring: ``Workbench`` (``core``) puts one library source, corpus, index, agents and diagnostics
together for one data directory; its read-only views, Save as Note (``saving``) and the warm engine
process live beside it. The only layer that reads settings and hands them to the pipeline.
"""
