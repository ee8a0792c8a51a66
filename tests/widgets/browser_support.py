"""JupyterLab + headless chromium helpers for the browser tests (tests/widgets/test_browser.py).

Recipe from ../shared/docs/browser-testing.md: Debian's chromium driven by Playwright for Python
(never ``playwright install``), JupyterLab on 127.0.0.1 with a known token in a temporary working
directory, the zocrates_nb server extension enabled, ``ZOCRATES_HOME`` pointing at a temp dir.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.fakes.loopback import free_port

REPO = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def chromium_or_skip() -> str:
    """Path of Debian's chromium; skip when absent locally, fail when absent in CI (CI=true)."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    message = "chromium is not installed (install it with `apt-get install -y chromium`; make test does this)"
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{message} — required in CI")
    pytest.skip(message)


@dataclass
class JupyterLab:
    """A running JupyterLab server: ``url(path)`` adds the token; ``api(path)`` GETs JSON."""

    port: int
    token: str
    root_dir: Path
    data_dir: Path
    proc: subprocess.Popen
    log_path: Path
    env: dict = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str) -> dict:
        request = urllib.request.Request(
            f"{self.base}/{path.lstrip('/')}", headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read().decode("utf-8"))

    def request(self, method: str, path: str) -> int:
        """An authenticated REST call without a body; returns the HTTP status."""
        request = urllib.request.Request(
            f"{self.base}/{path.lstrip('/')}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status

    def shutdown_kernels(self) -> None:
        """Stop every kernel of this server (each notebook opened a workbench on the same data dir)."""
        for kernel in self.api("/api/kernels"):
            self.request("DELETE", f"/api/kernels/{kernel['id']}")

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def start_jupyterlab(work_dir: Path, data_dir: Path, *, timeout_s: float = 120) -> JupyterLab:
    """Start ``jupyter lab`` on loopback; wait until ``/api/status`` answers."""
    port, token = free_port(), secrets.token_hex(16)
    config_dir = work_dir.parent / "jupyter-config"
    config_dir.mkdir(parents=True, exist_ok=True)
    # Enable the REST extension whether or not the package is pip-installed (the installed
    # jupyter_server_config.d file does the same for users).
    (config_dir / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": {"zocrates_nb": True}}})
    )
    # No "news" / update toasts over the widgets in screenshots.
    settings_dir = work_dir.parent / "lab-user-settings"
    notification = settings_dir / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    notification.parent.mkdir(parents=True, exist_ok=True)
    notification.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = dict(os.environ)
    env.update(
        {
            "ZOCRATES_HOME": str(data_dir),
            "JUPYTER_CONFIG_DIR": str(config_dir),
            "JUPYTERLAB_SETTINGS_DIR": str(settings_dir),
            "JUPYTERLAB_WORKSPACES_DIR": str(work_dir.parent / "lab-workspaces"),
            "JUPYTER_RUNTIME_DIR": str(work_dir.parent / "jupyter-runtime"),
            "IPYTHONDIR": str(work_dir.parent / "ipython"),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])),
            "HF_HUB_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False",
        }
    )
    env.pop("OPENAI_API_KEY", None)
    log_path = work_dir.parent / "jupyterlab.log"
    log = open(log_path, "wb")
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        f"--ServerApp.token={token}",
        "--ServerApp.ip=127.0.0.1",
        "--allow-root",
        f"--ServerApp.root_dir={work_dir}",
        "--LabApp.news_url=",
        "--LabServerApp.notebook_starts_kernel=True",
        "--ServerApp.open_browser=False",
    ]
    proc = subprocess.Popen(cmd, cwd=work_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    lab = JupyterLab(port, token, work_dir, data_dir, proc, log_path, env)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{lab.log_tail()}")
        try:
            lab.api("/api/status")
            return lab
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.5)
    stop_jupyterlab(lab)
    raise RuntimeError(f"jupyter lab did not answer within {timeout_s}s:\n{lab.log_tail()}")


def stop_jupyterlab(lab: JupyterLab) -> None:
    """Stop the server this fixture started (by its process, never by name)."""
    if lab.proc.poll() is None:
        lab.proc.terminate()
        try:
            lab.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            lab.proc.kill()
            lab.proc.wait(timeout=10)


def launch_chromium(playwright, executable: str):
    return playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_ARGS)


# ---------------------------------------------------------------- page helpers


def open_notebook(page, lab: JupyterLab, name: str, *, timeout_ms: int = 120_000) -> None:
    """Open a notebook and wait until its kernel is idle."""
    page.goto(lab.url(f"lab/tree/{name}?reset"))  # ?reset: no tabs restored from an earlier test
    page.wait_for_selector(".jp-Notebook", timeout=timeout_ms)
    page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]:visible', timeout=timeout_ms)


def run_all_cells(page, *, attempts: int = 3) -> None:
    """Run every cell (Run → Run All Cells), after focusing the notebook so the command applies.

    Right after a notebook opens, JupyterLab sometimes drops the command (the kernel session is
    still being wired up); so check that a code cell started ([*] or [n]) and retry if not.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(attempts):
        page.locator(".jp-CodeCell .jp-InputArea-editor").first.click()
        page.keyboard.press("Escape")
        page.click('.lm-MenuBar-item:has-text("Run")')
        page.click('.lm-Menu-item:has-text("Run All Cells")')
        try:
            page.wait_for_function(
                r"""() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                        .some(p => /\[(\*|\d+)\]/.test(p.textContent))""",
                timeout=20_000,
            )
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")  # close a menu left open
    raise AssertionError(f"Run All Cells did not start the notebook after {attempts} attempts")


def wait_kernel_idle(page, *, timeout_ms: int = 300_000) -> None:
    """Wait until the kernel went busy and came back idle (or was idle all along)."""
    page.wait_for_function(
        """() => {
            const el = [...document.querySelectorAll('.jp-Notebook-ExecutionIndicator')]
                .find(e => e.offsetParent !== null);
            const pending = [...document.querySelectorAll('.jp-InputPrompt')]
                .some(p => p.textContent.includes('[*]'));
            return el && el.getAttribute('data-status') === 'idle' && !pending;
        }""",
        timeout=timeout_ms,
    )


def add_and_run_cell(page, code: str) -> None:
    """Append a code cell at the end of the notebook, type ``code`` and run it."""
    page.click(".jp-Notebook .jp-Cell:last-child .jp-InputArea-editor")
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")
    page.keyboard.insert_text(code)
    page.keyboard.press("Shift+Enter")


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A minimal notebook of code cells (what the browser tests open)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path
