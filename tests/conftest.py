"""Shared fixtures. Area-specific fakes live in tests/fakes/ (loopback servers only)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "test-artifacts"


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
