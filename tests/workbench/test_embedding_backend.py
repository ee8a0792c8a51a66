"""The opt-in embedding backend: any OpenAI-compatible ``/v1/embeddings`` (workbench/embedding.py).

Through the real ``openai`` client, real Chroma and FTS5, against a loopback endpoint that speaks
the wire format (tests/fakes/embeddings_server.py). The offline MiniLM model stays the default.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.cli.test_cli_library import run
from tests.fakes.embeddings_server import FakeEmbeddings, bag_vector
from tests.fakes.openai_server import rate_limited, server_error
from zocrates_nb.errors import IndexCorruptError, LLMError
from zocrates_nb.paths import DataPaths
from zocrates_nb.workbench.core import Workbench
from zocrates_nb.workbench.embedding import RemoteEmbedder

MODEL = "fake-embed-small"


@pytest.fixture
def endpoint():
    with FakeEmbeddings(dim=48) as fake:
        yield fake


def _section(fake: FakeEmbeddings, **extra) -> dict:
    return {"base_url": fake.base_url, "model": MODEL, "dim": fake.dim, "batch_size": 3, **extra}


@pytest.mark.parametrize("encoding", ["base64", "float"])
def test_vectors_arrive_in_order_and_unit_length_in_either_encoding(tmp_path, endpoint, encoding, monkeypatch):
    texts = ["spot deconvolution", "cell types in Visium", "batch effects", "UMI counts", "scVI latent"]
    embedder = RemoteEmbedder(DataPaths.resolve(tmp_path), _section(endpoint))
    if encoding == "float":  # what a server that ignores encoding_format sends back: plain floats
        create = embedder._llm()._client.embeddings.create
        monkeypatch.setattr(
            embedder._llm()._client.embeddings, "create", lambda **kw: create(**kw, encoding_format="float")
        )
    vectors = embedder.embed(texts)
    assert vectors.shape == (5, 48)
    np.testing.assert_allclose(vectors, np.array([bag_vector(t, 48) for t in texts]), atol=1e-6)
    assert [len(b["input"]) for b in endpoint.bodies()] == [3, 2]  # batch_size texts per request
    assert {b.get("encoding_format") for b in endpoint.bodies()} == {encoding}


def test_rate_limit_and_server_error_are_retried_and_usage_is_an_llm_event(tmp_path, endpoint):
    events: list[tuple[str, dict]] = []

    class Sink:
        def emit(self, kind, **fields):
            events.append((kind, fields))

    section = _section(endpoint)
    embedder = RemoteEmbedder(DataPaths.resolve(tmp_path), section, Sink(), sleep=lambda s: None, prices={})
    endpoint.queue(rate_limited("0"), server_error())
    assert embedder.embed(["one two three"]).shape == (1, 48)
    assert len(endpoint.requests) == 3
    ((kind, record),) = events
    assert kind == "llm" and record["role"] == "embedding" and record["model"] == MODEL
    assert record["prompt_tokens"] == 3 and record["retries"] == 2 and record["usage_source"] == "api"


def test_embedding_cost_reaches_the_token_costs_view(tmp_path, endpoint):
    from zocrates_nb.diagnostics.events import EventLog
    from zocrates_nb.diagnostics.views import Diagnostics

    paths = DataPaths.resolve(tmp_path)
    log = EventLog(paths.diagnostics)
    prices = {MODEL: {"prompt": 0.02}}
    RemoteEmbedder(paths, _section(endpoint), log, prices=prices).embed(["a b c d"] * 5)  # 2 requests, 20 tokens
    costs = Diagnostics(paths.diagnostics).token_costs()
    row = costs[costs["role"] == "embedding"].iloc[0]
    assert int(row["prompt_tokens"]) == 20
    assert float(row["cost_usd"]) == pytest.approx(20 * 0.02 / 1e6)


def test_a_wrong_key_is_refused_with_the_command_to_fix_it_and_never_shown(tmp_path, monkeypatch):
    key = "sk-test-" + "x" * 40
    monkeypatch.setenv("EMBED_KEY", key)
    with FakeEmbeddings(api_key="sk-the-right-one") as fake:
        embedder = RemoteEmbedder(DataPaths.resolve(tmp_path), _section(fake, api_key_env="EMBED_KEY"))
        with pytest.raises(LLMError) as caught:
            embedder.embed(["text"])
    text = str(caught.value)
    assert "embedding endpoint" in text and "(401)" in text
    assert "zocrates-nb index model set --api-key-env NAME" in text
    assert key not in text and key[-12:] not in text


def test_a_remote_key_is_required(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    section = {"base_url": "https://embeddings.invalid/v1", "model": MODEL, "dim": 8, "api_key_env": "NO_SUCH_KEY"}
    with pytest.raises(LLMError, match=r"\$NO_SUCH_KEY") as caught:
        RemoteEmbedder(DataPaths.resolve(tmp_path), section).embed(["x"])
    assert "zocrates-nb index model set" in str(caught.value)


def test_model_set_probes_reembeds_searches_and_reset_returns_to_offline(capsys, demo_home, endpoint):
    data = str(demo_home)
    code, out, err = run(capsys, "index", "model", "set", "--base-url", endpoint.base_url, "--model", MODEL,
                         "--batch-size", "16", "--data-dir", data, "--json")  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert (result["model"], result["dim"]) == (MODEL, 48)
    assert result["embedded"] == result["chunks"] > 0 and result["kept"] == 0
    config = json.loads((demo_home / "zocrates_config.json").read_text())
    assert config["embedding"]["dim"] == 48 and config["embedding"]["base_url"] == endpoint.base_url

    code, out, _ = run(capsys, "status", "--data-dir", data)
    assert f"embeddings {MODEL} (48-d) via {endpoint.base_url}" in out

    sent = endpoint.texts_embedded()
    wb = Workbench(demo_home, auto_sync=False)
    try:
        assert wb.index.vector_store().count() == result["chunks"]
        hits = wb.index.search("cell type deconvolution of Visium spots", k=3, mode="dense")
        assert hits and endpoint.texts_embedded() == sent + 1  # the query went to the endpoint
    finally:
        wb.close()

    code, out, err = run(capsys, "index", "model", "reset", "--data-dir", data, "--json")
    assert code == 0, err
    back = json.loads(out)
    assert back["model"] == "sentence-transformers/all-MiniLM-L6-v2" and back["embedded"] == back["chunks"]


def test_vectors_of_two_models_are_refused_and_a_stopped_reembed_resumes(capsys, demo_home, endpoint):
    data = str(demo_home)
    config_path = demo_home / "zocrates_config.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    config["embedding"] = _section(endpoint)  # edited by hand: the index still holds MiniLM vectors
    config_path.write_text(json.dumps(config))

    wb = Workbench(demo_home, auto_sync=False)
    try:
        with pytest.raises(IndexCorruptError) as caught:
            wb.index.vector_store().count()
    finally:
        wb.close()
    text = str(caught.value)
    assert "all-MiniLM-L6-v2 (384-d" in text and f"not {MODEL} (48-d)" in text
    assert "zocrates-nb index model reembed" in text

    # the endpoint fails for good from its fourth request: the first part of 128 chunks (two requests
    # of 64) is stored, the second part fails, so the re-embed stops half-way
    class Failing(FakeEmbeddings):
        served = 0

        def answer(self, body, headers):
            self.served += 1
            if self.served > 3:
                return 400, {"error": {"message": "quota exhausted", "type": "invalid_request_error"}}, {}
            return super().answer(body, headers)

    with Failing(dim=48) as flaky:
        config["embedding"] = _section(flaky, batch_size=64)
        config_path.write_text(json.dumps(config))
        code, _, err = run(capsys, "index", "model", "reembed", "--data-dir", data)
        assert code != 0 and "quota exhausted" in err
        assert "re-embedding: 128 / " in err  # progress, as each part is stored
        config["embedding"] = _section(endpoint, batch_size=64)  # the same model, served again
        config_path.write_text(json.dumps(config))
    code, out, err = run(capsys, "index", "model", "reembed", "--data-dir", data, "--json")
    assert code == 0, err
    result = json.loads(out)
    assert result["kept"] > 0 and result["embedded"] == result["chunks"] - result["kept"]
    assert "re-embedding" not in err  # --json: no progress lines
    assert result["kept"] == 128
    code, out, _ = run(capsys, "index", "model", "reembed", "--data-dir", data)
    assert code == 0 and "0 chunks embedded now" in out
