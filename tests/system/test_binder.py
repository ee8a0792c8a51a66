"""Binder: install from binder/ into a fresh venv, run postBuild, execute the quickstart there.

Slow (a full dependency install; pip may use its local cache, and reaches nothing but PyPI).
The repository is copied first so that ``pip install .`` does not write build files into the
checkout, and the model is built into a temporary model directory so the test proves the
postBuild step builds it rather than finding one already there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
COPY = ("pyproject.toml", "README.md", "zocrates_nb", "jupyter-config", "binder", "notebooks")


def run(cmd: list, *, env: dict, cwd: Path, timeout: int) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def test_binder_environment_builds_and_runs_the_quickstart(tmp_path, data_dir):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in COPY:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif source.exists():
            shutil.copy2(source, repo / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "OPENAI_API_KEY")}
    env.update(
        {
            "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "VIRTUAL_ENV": str(venv),
            "ZOCRATES_HOME": str(data_dir),
            "ZOCRATES_MODEL_DIR": str(tmp_path / "models"),
            "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
    )

    run(
        [venv / "bin" / "python", "-m", "pip", "install", "-q", "-r", "binder/requirements.txt"],
        env=env,
        cwd=repo,
        timeout=2400,
    )
    run(["bash", "binder/postBuild"], env=env, cwd=repo, timeout=1800)

    # postBuild built the model, installed the package into the venv and prebuilt the demo index
    assert any((tmp_path / "models").rglob("*.onnx"))
    status = json.loads(run(["zocrates-nb", "status", "--json"], env=env, cwd=tmp_path, timeout=300).stdout)
    assert status["corpus"]["documents"] > 0
    extensions = run(["jupyter", "server", "extension", "list"], env=env, cwd=tmp_path, timeout=300)
    assert "zocrates_nb" in extensions.stdout + extensions.stderr

    # the quickstart runs in that environment (its own kernel, from the venv)
    out = tmp_path / "executed.ipynb"
    run(
        [
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--ExecutePreprocessor.timeout=900",
            "--output",
            out,
            repo / "notebooks" / "01-quickstart.ipynb",
        ],
        env=env,
        cwd=tmp_path,
        timeout=1200,
    )
    nb = nbformat.read(out, as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in outputs)
    text = json.dumps([o.get("data", {}) for o in outputs])
    assert "My summary: estimating cell-type proportions per Visium spot" in text
