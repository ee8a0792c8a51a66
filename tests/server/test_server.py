"""The REST extension against a REAL Jupyter server on 127.0.0.1 (started by a fixture)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.fakes.loopback import free_port
from zocrates_nb.paths import DataPaths
from zocrates_nb.settings.config import ConfigStore

REPO = Path(__file__).resolve().parents[2]
TOKEN = "zocrates-test-token-0123456789"
FAKE_KEY = "sk-test-never-show-me-42"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A jupyter_server process with the zocrates_nb.server extension, its own data dir and an API key in env."""
    root = tmp_path_factory.mktemp("jupyter")
    data_dir = root / "zocrates-home"
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ZOCRATES_HOME": str(data_dir),
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTER_DATA_DIR": str(root / "data"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
        "OPENAI_API_KEY": FAKE_KEY,
    }
    env.pop("ZOTERO_DATA_DIR", None)
    log = open(root / "server.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter_server",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.port_retries=0",
            "--ServerApp.jpserver_extensions={'zocrates_nb.server': True}",
        ]
        + (["--allow-root"] if os.geteuid() == 0 else []),
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    try:
        while True:
            assert proc.poll() is None, (root / "server.log").read_text()
            try:
                if httpx.get(f"{base}/api/status", headers={"Authorization": f"token {TOKEN}"}).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, (root / "server.log").read_text()
            time.sleep(0.3)
        yield {"base": base, "data_dir": data_dir, "log": root / "server.log"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def api(server):
    with httpx.Client(base_url=server["base"], headers={"Authorization": f"token {TOKEN}"}, timeout=30) as client:
        yield client


@pytest.fixture(autouse=True)
def _fresh_config(server):
    ConfigStore.for_paths(DataPaths(server["data_dir"])).reset()


def test_status_reports_the_data_dir_and_defaults(api, server):
    r = api.get("/zocrates/status")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    status = r.json()
    assert status["data_dir"] == str(server["data_dir"].resolve())
    assert status["profile_configured"] is False and status["profile_limit"] == 1000
    assert status["llm"]["configured"] is False
    assert status["llm"]["api_key_set"] is True  # from OPENAI_API_KEY in the server's environment
    assert status["library"]["source"] == "demo"
    assert status["corpus"] == {"notes": 0, "papers": 0, "documents": 0} and status["index"]["chunks"] == 0
    assert status["index"]["embedding"]["base_url"] is None  # the offline default model
    assert FAKE_KEY not in r.text


def test_post_llm_config_writes_through_the_config_store(api, server):
    body = {
        "base_url": "http://127.0.0.1:9/v1",
        "model": "small",
        "models": {"coordinator": "big"},
        "user_research_profile": "I study MERFISH data.",
    }
    r = api.post("/zocrates/llm/config", json=body)
    assert r.status_code == 200, r.text
    status = r.json()
    assert status["llm"]["configured"] is True and status["llm"]["models"] == {"coordinator": "big"}
    assert status["profile_configured"] is True and status["profile_chars"] == len("I study MERFISH data.")
    assert status["profile_tokens"] > 20
    assert FAKE_KEY not in r.text
    store = ConfigStore.for_paths(DataPaths(server["data_dir"]))
    assert store.profile() == "I study MERFISH data." and store.llm().model_for("coordinator") == "big"
    assert api.get("/zocrates/status").json()["llm"]["base_url"] == "http://127.0.0.1:9/v1"


def test_python_api_saves_are_seen_by_the_server(api, server):
    ConfigStore.for_paths(DataPaths(server["data_dir"])).set_profile("Set from a kernel.")
    assert api.get("/zocrates/status").json()["profile_chars"] == len("Set from a kernel.")


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"user_research_profile": "x" * 1001}, "1000"),
        ({"bogus_field": 1}, "bogus_field"),
        ({"api_key": FAKE_KEY}, "api_key"),
        ({"model": 5}, "model"),
        ({"models": ["a"]}, "models"),
        ({"timeout_s": "soon"}, "timeout_s"),
        ({"user_research_profile": None}, "string"),
        ({}, "non-empty"),
    ],
)
def test_bad_posts_are_400_with_a_json_error_and_change_nothing(api, server, body, match):
    store = ConfigStore.for_paths(DataPaths(server["data_dir"]))
    store.set_profile("keep")
    before = store.path.read_bytes()
    r = api.post("/zocrates/llm/config", json=body)
    assert r.status_code == 400
    problem = r.json()
    assert match in problem["message"] and problem["hint"] and problem["profile_limit"] == 1000
    assert FAKE_KEY not in r.text
    assert store.path.read_bytes() == before


def test_too_long_profile_error_names_limit_and_length(api):
    problem = api.post("/zocrates/llm/config", json={"user_research_profile": "y" * 1200}).json()
    assert "1200" in problem["message"] and "limit is 1000" in problem["message"]


def test_invalid_json_body_is_400(api):
    r = api.post("/zocrates/llm/config", content=b"{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "not valid JSON" in r.json()["message"]


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (b"[" * 50_000 + b"]" * 50_000, "nested too deeply"),
        (b'{"model": "\\ud800"}', "invalid Unicode"),
        (b'{"model": "' + b"x" * 400_000 + b'"}', "at most"),
    ],
)
def test_hostile_bodies_are_400_not_500(api, server, body, match):
    """Issue 10 failure 6: a RecursionError and a UnicodeEncodeError used to surface as 500."""
    r = api.post("/zocrates/llm/config", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text[:300]
    assert match in r.json()["message"]
    assert api.get("/zocrates/status").status_code == 200


def test_unauthenticated_requests_are_refused(server):
    with httpx.Client(base_url=server["base"], timeout=30) as anon:
        assert anon.get("/zocrates/status").status_code in (401, 403)
        r = anon.post("/zocrates/llm/config", json={"model": "evil"})
        assert r.status_code in (401, 403)
        assert anon.get("/zocrates/status", headers={"Authorization": "token wrong"}).status_code in (401, 403)
    assert ConfigStore.for_paths(DataPaths(server["data_dir"])).llm().model is None


def test_browser_session_post_needs_the_xsrf_token(server):
    """A cookie-authenticated (browser) POST without the XSRF token is refused; with it, accepted."""
    with httpx.Client(base_url=server["base"], timeout=30) as browser:
        assert browser.get(f"/login?token={TOKEN}", follow_redirects=True).status_code == 200
        assert browser.get("/zocrates/status").status_code == 200  # the login cookie authenticates GETs
        r = browser.post("/zocrates/llm/config", json={"model": "via-browser"})
        assert r.status_code == 403
        xsrf = browser.cookies.get("_xsrf")
        assert xsrf
        r = browser.post("/zocrates/llm/config", json={"model": "via-browser"}, headers={"X-XSRFToken": xsrf})
        assert r.status_code == 200, r.text
    assert ConfigStore.for_paths(DataPaths(server["data_dir"])).llm().model == "via-browser"


def test_request_bodies_are_not_logged(api, server):
    marker = "PROFILE-MARKER-" + "z" * 20
    api.post("/zocrates/llm/config", json={"user_research_profile": marker + "q" * 1000})
    api.post("/zocrates/llm/config", content=b"{" + marker.encode(), headers={"Content-Type": "application/json"})
    api.post("/zocrates/llm/config", json={"api_key": FAKE_KEY})
    time.sleep(0.5)
    log = server["log"].read_text()
    assert "zocrates_nb: REST handlers" in log
    assert marker not in log and FAKE_KEY not in log


def test_fuzzed_bodies_never_get_a_500(api, server):
    """Random bodies (bytes, JSON of any shape, known fields with any values) against the real server."""
    import os as _os

    from hypothesis import HealthCheck, given, settings

    from tests.system.test_fuzz import rest_bodies

    store = ConfigStore.for_paths(DataPaths(server["data_dir"]))

    @given(body=rest_bodies())
    @settings(
        max_examples=int(_os.environ.get("ZOCRATES_FUZZ_EXAMPLES", 60)) // 2,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    def post(body):
        r = api.post("/zocrates/llm/config", content=body, headers={"Content-Type": "application/json"})
        assert r.status_code in (200, 400), (r.status_code, body[:200], r.text[:300])

    try:
        post()
    finally:
        store.reset()
