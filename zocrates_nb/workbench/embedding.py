"""Which model embeds the index: the offline MiniLM default, or an OpenAI-compatible ``/v1/embeddings``.

Why here, at the wiring: the index only sees an ``Embedder`` (protocols.py) with ``model_id`` and
``dim``; the ``openai`` client lives in agents/llm.py, above the index. So the workbench reads
``config["embedding"]`` and hands the index either the factory of the offline model or a
``RemoteEmbedder``, whose id and dimension come from the config (probed once by ``zocrates-nb index
model set``): opening the index never calls the endpoint. The vector store records the model and
dimension it was built with and refuses vectors of another (index/vectors/store.py); ``reembed``
replaces them, resumably (an interrupted run embeds only the chunks still missing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from zocrates_nb.errors import LLMError, ZocratesError
from zocrates_nb.index.embed.build import MODEL_DIM, MODEL_ID
from zocrates_nb.paths import DataPaths
from zocrates_nb.protocols import EventSink, NullEventSink
from zocrates_nb.settings.config import LLMSettings

COMMAND = "zocrates-nb index model"
PROBE_TEXT = "dimension probe"


def endpoint_settings(section: Mapping[str, Any], prices: Mapping[str, Any] | None = None) -> LLMSettings:
    """The ``embedding`` section as the settings an ``LLMClient`` takes (``llm.prices`` price it too)."""
    return LLMSettings(
        base_url=section.get("base_url"),
        model=section.get("model"),
        api_key_env=section.get("api_key_env") or "OPENAI_API_KEY",
        prices=dict(prices or {}),
        timeout_s=section.get("timeout_s") or 60,
        max_retries=int(section.get("max_retries", 3)),
    )


def as_embedding_error(error: LLMError) -> LLMError:
    """An ``LLMError`` of the chat client, reworded for the embedding endpoint and its command."""
    message = error.message.replace("LLM endpoint", "embedding endpoint").replace("The LLM call", "The embedding call")
    hint = (error.hint or "").replace("zocrates-nb llm", COMMAND).replace("llm.", "embedding.")
    return LLMError(message, hint or None)


class RemoteEmbedder:
    """Texts to unit vectors through an OpenAI-compatible ``/v1/embeddings`` (OpenAI, Ollama, vLLM, LM Studio).

    ``dim`` None (only while probing) accepts whatever dimension the endpoint returns; otherwise a
    reply of another dimension is refused. The client is made on the first call.
    """

    pads = False  # batches are sent as they come: no sorting by length

    def __init__(
        self,
        paths: DataPaths,
        section: Mapping[str, Any],
        events: EventSink | None = None,
        *,
        prices: Mapping[str, Any] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.paths = paths
        self.settings = endpoint_settings(section, prices)
        self.model_id = str(section.get("model") or "")
        self.dim: int | None = int(section["dim"]) if section.get("dim") else None
        self.batch_size = max(1, int(section.get("batch_size") or 64))
        self.events: EventSink = events if events is not None else NullEventSink()
        self._sleep = sleep
        self._client: Any = None
        if not self.settings.base_url or not self.model_id:
            raise ZocratesError(
                "The embedding endpoint needs a base URL and a model name.",
                hint=f"Set both: {COMMAND} set --base-url URL --model NAME",
            )

    def __repr__(self) -> str:  # never the key
        return f"RemoteEmbedder(base_url={self.settings.base_url!r}, model={self.model_id!r}, dim={self.dim})"

    def _llm(self) -> Any:
        if self._client is None:
            from zocrates_nb.agents.llm import LLMClient
            from zocrates_nb.settings.credentials import get_api_key

            key = get_api_key(self.paths, self.settings)
            try:
                if self._sleep is None:
                    self._client = LLMClient(self.settings, key, self.events)
                else:  # tests: retries without waiting
                    self._client = LLMClient(self.settings, key, self.events, sleep=self._sleep, backoff_base_s=0.0)
            except LLMError as exc:
                raise as_embedding_error(exc) from None
        return self._client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One unit row per text, ``batch_size`` texts per request."""
        rows: list[Any] = []
        for start in range(0, len(texts), self.batch_size):
            try:
                vectors, _ = self._llm().embed(self.model_id, list(texts[start : start + self.batch_size]))
            except LLMError as exc:
                raise as_embedding_error(exc) from None
            rows.extend(vectors)
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1) if rows else np.zeros((0, self.dim or 0))
        if rows and self.dim is not None and matrix.shape[1] != self.dim:
            raise ZocratesError(
                f"The embedding endpoint returned {matrix.shape[1]}-d vectors for {self.model_id}, "
                f"not the {self.dim}-d the index was set up with.",
                hint=f"Probe the model again: {COMMAND} set --base-url URL --model NAME",
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True) if rows else None
        return matrix / np.where(norms == 0, 1.0, norms) if norms is not None else matrix


def configured_section(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """``config["embedding"]`` when it names an endpoint, else None (the offline default)."""
    section = dict(config.get("embedding") or {})
    return section if section.get("base_url") else None


def embedder_wiring(paths: DataPaths, config: Mapping[str, Any], events: EventSink | None) -> dict[str, Any]:
    """The index's embedder arguments: the offline model's factory, or the configured endpoint's embedder."""
    section = configured_section(config)
    if section is None:
        from zocrates_nb.index.core import load_default_embedder

        return {"make_embedder": load_default_embedder}
    if not section.get("dim"):
        raise ZocratesError(
            f"config embedding names {section.get('model')!r} but not its dimension.",
            hint=f"Set it up again (one probe call): {COMMAND} set --base-url URL --model NAME",
        )
    prices = (config.get("llm") or {}).get("prices")
    return {"embedder": RemoteEmbedder(paths, section, events, prices=prices)}


def probe_dimension(paths: DataPaths, section: Mapping[str, Any], events: EventSink | None = None) -> int:
    """One call to the endpoint: the dimension of its vectors (and proof that the URL, key and model work)."""
    probe = RemoteEmbedder(paths, {**section, "dim": None}, events)
    vectors = probe.embed([PROBE_TEXT])
    return int(vectors.shape[1])


def model_summary(config: Mapping[str, Any]) -> dict[str, Any]:
    """What ``index model show`` and status print: the model, its dimension and endpoint (never a key)."""
    section = configured_section(config)
    if section is None:
        return {"model": MODEL_ID, "dim": MODEL_DIM, "backend": "offline (ONNX MiniLM)", "base_url": None}
    return {
        "model": section.get("model"),
        "dim": section.get("dim"),
        "backend": "OpenAI-compatible /v1/embeddings",
        "base_url": section.get("base_url"),
        "api_key_env": section.get("api_key_env"),
        "batch_size": section.get("batch_size"),
    }


def reembed(workbench: Any, progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Give every chunk a vector from the configured model; resumable.

    Vectors of another model are never mixed with the configured one's: a store built by another
    model is emptied and re-created for this one (index/vectors/store.py records which), then every
    chunk without a vector is embedded in batches, each stored as it is done. A run that is stopped
    leaves the store with this model's vectors so far, so running it again embeds only the rest.
    Holds the data directory's writer lock, so no sync lands in between.
    """
    from zocrates_nb.errors import IndexCorruptError
    from zocrates_nb.storage.locks import corpus_lock

    index = workbench.index
    with corpus_lock(workbench.paths.locks):
        store = index.vector_store()
        try:
            kept = store.count()
        except IndexCorruptError:  # built by another model (or damaged): derived data, started afresh
            store.reset()
            kept = 0
        result = index.reconcile(progress=progress)
    return {**model_summary(workbench.config.read()), "kept": kept, **result, "chunks": index.chunk_count()}
