"""Shared fixtures. Shared helpers live in tests/fakes/: the loopback servers that stand in for remote
services (OpenAI, OpenAlex/arXiv, the Zotero Web API) and the small pieces every area reuses
(``scripted_model.ScriptedModel``/``role_of``, ``agent_stack.Stack``, ``loopback.free_port``,
``embeddings.vec``)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"


def pytest_configure(config):
    """Draw the fault-injection seed once per run, before pytest-xdist starts its workers.

    Why: the fault tests pick their cases from the seed at collection, and every xdist worker must collect
    the same tests; workers inherit the controller's environment, so one seed set here reaches them all.
    A seed given by the user (to replay a failure) is kept.
    """
    if not hasattr(config, "workerinput"):
        os.environ.setdefault("ZOCRATES_FAULT_SEED", str(random.SystemRandom().randrange(1, 2**31)))


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path, monkeypatch):
    """Every test gets its own data directory and no ambient LLM key or Zotero dir."""
    home = tmp_path / "zocrates-home"
    monkeypatch.setenv("ZOCRATES_HOME", str(home))
    monkeypatch.delenv("ZOTERO_DATA_DIR", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")
    yield


@pytest.fixture
def data_dir(tmp_path) -> Path:
    d = Path(os.environ["ZOCRATES_HOME"])
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory) -> Path:
    """A data directory with the demo library synced once per test session (embedding is the slow part)."""
    import shutil

    from zocrates_nb.workbench.core import Workbench

    root = tmp_path_factory.mktemp("demo-template") / "data"
    cached = os.environ.get("ZOCRATES_TEST_DEMO_CACHE")
    if cached and (Path(cached) / "conversion_meta.db").exists():
        shutil.copytree(cached, root)
        return root
    wb = Workbench(root, auto_sync=False)
    report = wb.sync(progress=False)
    assert report.counts["failed"] == 0, report.summary()
    wb.close()
    return root


@pytest.fixture
def demo_home(demo_template, tmp_path, monkeypatch) -> Path:
    """A private copy of the synced demo data directory, set as ZOCRATES_HOME."""
    import shutil

    home = tmp_path / "demo-home"
    shutil.copytree(demo_template, home)
    monkeypatch.setenv("ZOCRATES_HOME", str(home))
    return home


@pytest.fixture
def demo_workbench(demo_home):
    """A Workbench on a private copy of the synced demo library."""
    from zocrates_nb.workbench.core import Workbench

    wb = Workbench(demo_home)
    yield wb
    wb.close()


@pytest.fixture
def scholarly():
    """OpenAlex/arXiv on loopback; a library question must leave it untouched (``requests == []``)."""
    from tests.fakes.scholarly_server import FakeScholarly

    with FakeScholarly() as fake:
        yield fake


@pytest.fixture(scope="session")
def count_tokens():
    """The embedder's word-piece counter (the tokenizer only), for the chunking tests."""
    from zocrates_nb.index.embed.model import token_counter

    counter = token_counter()
    if counter is None:
        pytest.skip("the MiniLM tokenizer files are not installed")
    return counter
