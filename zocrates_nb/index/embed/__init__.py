"""The offline embedding model: all-MiniLM-L6-v2 run with ONNX Runtime (``model``), its one-time ONNX
build and identity (``build``), the child process a large sync embeds in (``worker``) and the pool that
streams parts across threads (``stream``). The only place that imports onnxruntime and tokenizers.

``python -m zocrates_nb.index.embed --build`` builds the model files.
"""
