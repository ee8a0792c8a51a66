"""ConfigStore: validation, cross-process safety (real processes, real SIGKILL), corruption, secrets."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from zocrates_nb.errors import ConfigError, ValidationError
from zocrates_nb.paths import DataPaths
from zocrates_nb.settings.config import DEFAULT_CONFIG, ConfigStore, LLMSettings
from zocrates_nb.settings.credentials import get_api_key, redact, store_api_key

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(data_dir) -> ConfigStore:
    return ConfigStore.for_paths(DataPaths(data_dir))


def _python(code: str, *args: str, **kw) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


# ----------------------------------------------------------------------------- basics and validation


def test_missing_file_reads_as_defaults_and_is_not_created(store):
    assert store.read() == DEFAULT_CONFIG
    assert not store.path.exists()
    assert store.llm() == LLMSettings() and not store.llm().configured


def test_round_trip_and_unknown_top_level_keys_preserved(store):
    store.path.write_text(json.dumps({"user_research_profile": "old", "future_feature": {"x": 1}}))
    store.set_profile("I study spatial transcriptomics.")
    on_disk = json.loads(store.path.read_text())
    assert on_disk["future_feature"] == {"x": 1}
    assert on_disk["user_research_profile"] == "I study spatial transcriptomics."
    assert store.profile() == "I study spatial transcriptomics."
    store.clear_profile()
    assert store.profile() == ""


def test_llm_settings(store):
    store.set_llm(base_url="http://127.0.0.1:1/v1", model="small", models={"coordinator": "big"})
    settings = store.llm()
    assert (
        settings.configured and settings.model_for("coordinator") == "big" and settings.model_for("reader") == "small"
    )
    store.set_llm(model="other")  # other fields stay
    assert store.llm().base_url == "http://127.0.0.1:1/v1" and store.llm().model == "other"
    store.clear_llm()
    assert store.llm() == LLMSettings()


def test_read_returns_a_copy(store):
    store.set_llm(models={"a": "m"})
    config = store.read()
    config["llm"]["models"]["a"] = "changed"
    assert store.read()["llm"]["models"] == {"a": "m"}


def test_profile_too_long_names_limit_and_length_and_leaves_file(store):
    store.set_profile("short")
    before = store.path.read_bytes()
    with pytest.raises(ValidationError) as err:
        store.set_profile("x" * 1001)
    assert "1001" in err.value.message and "1000" in err.value.message
    assert store.path.read_bytes() == before
    store.update({"max_research_profile_chars": 10})
    with pytest.raises(ValidationError, match=r"11 characters.*limit is 10"):
        store.set_profile("x" * 11)
    store.set_profile("x" * 10)  # exactly the limit is fine


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"max_research_profile_chars": 0}, "1..1000"),
        ({"max_research_profile_chars": 1001}, "1..1000"),
        ({"max_research_profile_chars": "500"}, "1..1000"),
        ({"max_research_profile_chars": True}, "1..1000"),
        ({"user_research_profile": 42}, "must be a string"),
        ({"user_research_profile": None}, "must be a string"),
        ({"llm": {"base_url": 5}}, "base_url must be a string"),
        ({"llm": {"base_url": "ftp://example.org"}}, "http"),
        ({"llm": {"model": ["a"]}}, "model must be a string"),
        ({"llm": {"models": {"coordinator": 3}}}, "llm.models"),
        ({"llm": {"api_key_env": "sk-live key"}}, "NAME of an environment variable"),
        ({"llm": {"timeout_s": 0}}, "timeout_s"),
        ({"llm": {"max_retries": -1}}, "max_retries"),
        ({"llm": {"prices": {"m": {"prompt": -1}}}}, "prices"),
        ({"llm": {"prices": {"m": {"prompt_per_1m": 0.15}}}}, "no other rate names"),  # a typo never prices at 0
        ({"llm": {"api_key": "sk-secret-value"}}, "Unknown llm field"),
        ({"llm": "gpt"}, "llm must be an object"),
        ({"library": {"source": "mendeley"}}, "library.source"),
        ({"library": {"local": "yes"}}, "library.local"),
        ({"vectors": {"mode": "cloud"}}, "vectors.mode"),
        ({"vectors": {"port": 70000}}, "vectors.port"),
    ],
)
def test_invalid_values_are_refused_and_file_untouched(store, patch, match):
    store.set_profile("keep me")
    before = store.path.read_bytes()
    with pytest.raises(ValidationError, match=match) as err:
        store.update(patch)
    assert err.value.hint
    assert "sk-secret-value" not in str(err.value)
    assert store.path.read_bytes() == before


def test_set_llm_refuses_unknown_fields(store):
    with pytest.raises(ValidationError, match="Unknown llm field"):
        store.set_llm(api_key="sk-nope")
    assert not store.path.exists()


def test_update_with_a_function(store):
    store.update(lambda c: {**c, "user_research_profile": c["user_research_profile"] + "a"})
    store.update(lambda c: {**c, "user_research_profile": c["user_research_profile"] + "b"})
    assert store.profile() == "ab"


def test_atomic_write_leaves_no_temp_files(store):
    for i in range(3):
        store.set_profile(f"p{i}")
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["zocrates_config.json", "zocrates_config.json.lock"]


# ----------------------------------------------------------------------------- caching across processes


def test_another_processs_save_is_seen_on_next_read(store):
    store.set_profile("aaaa")
    other = ConfigStore(store.path)
    assert other.profile() == "aaaa"
    proc = _python(
        """
        import sys
        from pathlib import Path
        from zocrates_nb.settings.config import ConfigStore
        ConfigStore(Path(sys.argv[1])).set_profile("bbbb")   # same size: only inode/mtime differ
    """,
        str(store.path),
    )
    assert proc.wait(timeout=60) == 0, proc.stderr.read()
    assert other.profile() == "bbbb"
    assert store.profile() == "bbbb"


def test_cached_read_is_reused_when_file_is_old(store):
    store.set_profile("cached")
    old = time.time() - 60
    os.utime(store.path, (old, old))
    first = ConfigStore(store.path)
    assert first.profile() == "cached"
    cached = first._cached
    assert first.profile() == "cached" and first._cached is cached  # no reload: same cache entry


# ----------------------------------------------------------------------------- concurrency

WRITER = """
    import sys
    from pathlib import Path
    from zocrates_nb.settings.config import ConfigStore
    store, name, n = ConfigStore(Path(sys.argv[1])), sys.argv[2], int(sys.argv[3])
    for i in range(n):
        store.update(lambda c: {**c, name: i, "user_research_profile": f"{name} wrote {i}"})
    print("done", flush=True)
"""

READER = """
    import json, sys
    from pathlib import Path
    from zocrates_nb.settings.config import ConfigStore
    path, stop = Path(sys.argv[1]), Path(sys.argv[2])
    store = ConfigStore(path)
    reads, bad, backwards, last = 0, [], 0, {}
    while not stop.exists():
        raw = path.read_bytes()
        try:
            json.loads(raw)
        except ValueError as exc:
            bad.append(repr(raw[:80]))
        config = store.read()
        for name in ("writer_a", "writer_b"):
            value = config.get(name, -1)
            backwards += value < last.get(name, -1)
            last[name] = value
        reads += 1
    print(json.dumps({"reads": reads, "bad": bad, "backwards": backwards}), flush=True)
"""


def test_two_writer_processes_and_a_reader(store, tmp_path):
    store.set_profile("start")
    stop = tmp_path / "stop"
    reader = _python(READER, str(store.path), str(stop))
    writers = [_python(WRITER, str(store.path), name, "200") for name in ("writer_a", "writer_b")]
    for w in writers:
        out, err = w.communicate(timeout=300)
        assert w.returncode == 0 and out.strip() == "done", err
    stop.touch()
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    result = json.loads(out)
    assert result["reads"] > 10 and result["bad"] == [] and result["backwards"] == 0
    final = json.loads(store.path.read_text())
    assert final["writer_a"] == 199 and final["writer_b"] == 199
    assert final["user_research_profile"] in ("writer_a wrote 199", "writer_b wrote 199")
    assert not list(store.path.parent.glob(".*.tmp"))


KILLED_WRITER = """
    import os, sys, time
    from pathlib import Path
    from zocrates_nb.settings.config import ConfigStore
    path, point = Path(sys.argv[1]), sys.argv[2]
    store = ConfigStore(path)
    real_replace, real_fsync, i = os.replace, os.fsync, 0
    def signal_and_hang():
        print(f"writing {i}", flush=True)   # the handshake: the parent kills us now
        time.sleep(120)
    def replace(src, dst):
        if point == "before-replace" and i == 5:
            signal_and_hang()
        return real_replace(src, dst)
    def fsync(fd):
        if point == "after-data-before-fsync" and i == 5 and str(os.readlink(f"/proc/self/fd/{fd}")).endswith(".tmp"):
            signal_and_hang()
        return real_fsync(fd)
    os.replace, os.fsync = replace, fsync
    while True:
        if point == "loop":
            print(f"writing {i}", flush=True)
        store.update({"user_research_profile": f"write {i} " + "x" * 300, "counter": i})
        i += 1
"""


@pytest.mark.parametrize("point", ["before-replace", "after-data-before-fsync", "loop"])
def test_sigkill_while_writing_leaves_a_valid_file(store, point):
    store.set_profile("before the writer")
    proc = _python(KILLED_WRITER, str(store.path), point)
    target = 5 if point != "loop" else 40
    seen = -1
    while seen < target:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        seen = int(line.split()[1])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    config = json.loads(store.path.read_text())  # valid JSON, and valid config:
    assert ConfigStore(store.path).read()["counter"] == config["counter"]
    if point == "loop":
        assert config["counter"] >= seen - 1  # the child may have run ahead of the pipe
    else:
        assert config["counter"] == 4  # the write in flight (5) never became visible
        assert list(store.path.parent.glob(".zocrates_config.json.*.tmp"))  # its temp file is left behind
    store.set_profile("after the crash")  # the kernel released the dead writer's lock
    assert store.profile() == "after the crash"
    assert not list(store.path.parent.glob(".zocrates_config.json.*.tmp"))  # stale temps swept under the lock


# ----------------------------------------------------------------------------- corruption


@pytest.mark.parametrize(
    "content",
    [
        b'{"user_research_profile": "trunc',
        b"\xff\xfe not utf8",
        b'{"user_research_profile": 5}',
        b'["a list"]',
        b'{"llm": {"base_url": "http://x", "apikey": "y"}}',
    ],
)
def test_corrupted_file_is_a_clear_error_and_kept_aside(store, content):
    store.path.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        store.read()
    assert str(store.path) in err.value.message
    assert "config reset" in err.value.hint
    copies = list(store.path.parent.glob("zocrates_config.json.corrupt-*"))
    assert len(copies) == 1 and copies[0].read_bytes() == content
    assert str(copies[0]) in err.value.message
    with pytest.raises(ConfigError):  # a second read does not pile up copies
        ConfigStore(store.path).read()
    assert len(list(store.path.parent.glob("zocrates_config.json.corrupt-*"))) == 1
    with pytest.raises(ConfigError):  # writes refuse too: nothing silently overwrites the damaged file
        store.set_profile("new")
    assert store.path.read_bytes() == content
    store.reset()  # the explicit recovery path
    assert store.read() == DEFAULT_CONFIG
    assert copies[0].read_bytes() == content


# ----------------------------------------------------------------------------- secrets


def test_api_key_from_env_or_secrets_file(data_dir, monkeypatch):
    paths = DataPaths(data_dir)
    settings = LLMSettings(api_key_env="MY_TEST_KEY")
    assert get_api_key(paths, settings) is None
    store_api_key(paths, "sk-from-file-123")
    assert stat.S_IMODE(os.stat(paths.secrets).st_mode) == 0o600
    assert get_api_key(paths, settings) == "sk-from-file-123"
    monkeypatch.setenv("MY_TEST_KEY", "sk-from-env-456")
    assert get_api_key(paths, settings) == "sk-from-env-456"
    config_text = ConfigStore.for_paths(paths).path.read_text() if paths.config.exists() else ""
    assert "sk-" not in config_text


def test_secrets_file_is_created_0600_from_the_start(data_dir, monkeypatch):
    """No chmod after the fact: the file is opened with mode 0600 (even with a permissive umask)."""
    paths = DataPaths(data_dir)
    calls = []
    real_chmod = os.chmod
    monkeypatch.setattr(os, "chmod", lambda *a, **k: calls.append(a) or real_chmod(*a, **k))
    old_umask = os.umask(0)
    try:
        store_api_key(paths, "sk-abc")
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(os.stat(paths.secrets).st_mode) == 0o600 and calls == []


def test_redact_and_no_key_in_reprs():
    assert redact("auth failed for sk-abc123 at host", "sk-abc123") == "auth failed for [redacted] at host"
    assert redact("text", None) == "text"
    assert "sk" not in repr(LLMSettings(base_url="http://x"))
    with pytest.raises(ValidationError):
        store_api_key(DataPaths(Path("/nonexistent")), "two words")


def test_a_config_path_that_is_a_folder_is_named(tmp_path):
    from tests.system.faults import cli

    home = tmp_path / "data"
    (home / "zocrates_config.json").mkdir(parents=True)
    code, _, err = cli(home, "search", "anything", "--mode", "lexical")
    assert code == 1 and "is a folder, not the config file" in err and "Move the folder away" in err
