"""`zocrates-nb` status / profile / llm / config: round trips, --data-dir placement, refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zocrates_nb.cli import build_parser, main
from zocrates_nb.paths import DataPaths
from zocrates_nb.settings.config import ConfigStore
from zocrates_nb.settings.profile import SAMPLE_RESEARCH_PROFILE

REPO = Path(__file__).resolve().parents[2]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def other_dir(tmp_path) -> Path:
    return tmp_path / "elsewhere"


@pytest.mark.parametrize("before", [True, False])
def test_data_dir_before_or_after_the_command(capsys, other_dir, before):
    args = ["profile", "set", "--text", "placed"]
    argv = ["--data-dir", str(other_dir), *args] if before else [*args, "--data-dir", str(other_dir)]
    assert run(capsys, *argv)[0] == 0
    assert ConfigStore.for_paths(DataPaths(other_dir)).profile() == "placed"
    assert not (Path(os.environ["ZOCRATES_HOME"]) / "zocrates_config.json").exists()
    # and the same for reads, in the middle position too
    for argv in (
        ["--data-dir", str(other_dir), "status", "--json"],
        ["status", "--json", "--data-dir", str(other_dir)],
        ["profile", "--data-dir", str(other_dir), "show", "--json"],
    ):
        code, out, _ = run(capsys, *argv)
        assert code == 0
        doc = json.loads(out)
        assert doc.get("data_dir", str(other_dir.resolve())) == str(other_dir.resolve())
        assert doc.get("profile_chars", doc.get("chars")) == len("placed")


def test_after_wins_over_before(capsys, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    assert run(capsys, "--data-dir", str(first), "profile", "set", "--text", "x", "--data-dir", str(second))[0] == 0
    assert ConfigStore.for_paths(DataPaths(second)).profile() == "x"
    assert not first.exists()


def test_zotero_data_dir_puts_data_under_zocrates_data(capsys, tmp_path):
    zotero = tmp_path / "Zotero"
    code, out, _ = run(capsys, "status", "--json", "--zotero-data-dir", str(zotero))
    assert code == 0 and json.loads(out)["data_dir"] == str((zotero / "zocrates-data").resolve())


def test_profile_round_trip(capsys, data_dir, tmp_path):
    profile_file = tmp_path / "profile.txt"
    profile_file.write_text(SAMPLE_RESEARCH_PROFILE, encoding="utf-8")
    assert run(capsys, "profile", "set", "--file", str(profile_file))[0] == 0
    code, out, err = run(capsys, "profile", "show")
    assert code == 0 and out.strip() == SAMPLE_RESEARCH_PROFILE.strip()
    assert f"{len(SAMPLE_RESEARCH_PROFILE)} / 1000 characters" in err
    code, out, _ = run(capsys, "profile", "show", "--formatted")
    assert out.startswith("# User Research Profile & Directives\n")
    code, out, _ = run(capsys, "profile", "show", "--json")
    report = json.loads(out)
    assert report["user_research_profile"] == SAMPLE_RESEARCH_PROFILE and 180 <= report["tokens"] <= 240
    assert run(capsys, "profile", "clear")[0] == 0
    assert ConfigStore.for_paths(DataPaths(data_dir)).profile() == ""
    code, out, err = run(capsys, "profile", "show")
    assert code == 0 and out == "" and "No research profile set" in err


def test_refused_profile_exits_2_and_leaves_the_file(capsys, data_dir):
    assert run(capsys, "profile", "set", "--text", "good")[0] == 0
    config = DataPaths(data_dir).config
    before = config.read_bytes()
    code, out, err = run(capsys, "profile", "set", "--text", "z" * 1001)
    assert code == 2 and "1001" in err and "1000" in err and "hint" in err
    assert config.read_bytes() == before


def test_profile_set_requires_a_source(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["profile", "set"])
    assert exc.value.code == 2


def test_llm_round_trip_and_refusals(capsys, data_dir, monkeypatch):
    assert run(capsys, "llm", "set", "--base-url", "http://127.0.0.1:9/v1", "--model", "small")[0] == 0
    assert run(capsys, "llm", "set", "--role", "coordinator", "--model", "big")[0] == 0
    assert run(capsys, "llm", "set", "--api-key-env", "MY_LLM_KEY")[0] == 0
    monkeypatch.setenv("MY_LLM_KEY", "sk-cli-secret-999")
    code, out, _ = run(capsys, "llm", "show", "--json")
    shown = json.loads(out)
    assert shown["configured"] and shown["base_url"] == "http://127.0.0.1:9/v1" and shown["model"] == "small"
    assert shown["models"] == {"coordinator": "big"} and shown["api_key_set"] is True
    for argv in (["llm", "show"], ["status"], ["status", "--json"], ["config", "show"]):
        code, out, err = run(capsys, *argv)
        assert code == 0 and "sk-cli-secret-999" not in out + err
    config = DataPaths(data_dir).config
    before = config.read_bytes()
    for argv in (
        ["llm", "set", "--base-url", "not-a-url"],
        ["llm", "set", "--role", "x"],
        ["llm", "set", "--api-key-env", "has space"],
        ["llm", "set", "--timeout-s", "-1"],
        ["llm", "set"],
    ):
        code, _, err = run(capsys, *argv)
        assert code == 2 and "refused" in err
        assert config.read_bytes() == before
    assert run(capsys, "llm", "clear")[0] == 0
    assert not ConfigStore.for_paths(DataPaths(data_dir)).llm().configured


def test_api_key_from_stdin_goes_to_the_0600_secrets_file(data_dir):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-m", "zocrates_nb", "llm", "set", "--api-key-stdin"],
        input="sk-stdin-1\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and "sk-stdin-1" not in proc.stdout + proc.stderr
    secrets = DataPaths(data_dir).secrets
    assert json.loads(secrets.read_text()) == {"api_key": "sk-stdin-1"} and (secrets.stat().st_mode & 0o777) == 0o600
    status = subprocess.run(
        [sys.executable, "-m", "zocrates_nb", "status", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert json.loads(status.stdout)["llm"]["api_key_source"] == "secrets.json" and "sk-stdin-1" not in status.stdout


def test_corrupted_config_cli_reports_and_reset_recovers(capsys, data_dir):
    config = DataPaths(data_dir).config
    config.write_text("{oops")
    code, out, err = run(capsys, "profile", "set", "--text", "new")
    assert code == 1 and str(config) in err and "config reset" in err
    assert config.read_text() == "{oops"
    code, out, _ = run(capsys, "status")
    assert code == 1 and "PROBLEM" in out
    assert run(capsys, "config", "reset")[0] == 0
    assert run(capsys, "profile", "set", "--text", "new")[0] == 0
    assert [p.read_text() for p in data_dir.glob("zocrates_config.json.corrupt-*")] == ["{oops"]


def test_python_dash_m_and_global_option_after_command(tmp_path):
    target = tmp_path / "via-subprocess"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for argv in (["--data-dir", str(target), "status"], ["status", "--data-dir", str(target)]):
        proc = subprocess.run(
            [sys.executable, "-m", "zocrates_nb", *argv], env=env, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode == 0, proc.stderr
        assert f"data directory : {target.resolve()}" in proc.stdout


def test_every_subcommand_accepts_data_dir():
    parser = build_parser()
    for argv in (
        ["status"],
        ["profile", "show"],
        ["profile", "clear"],
        ["profile", "set", "--text", "t"],
        ["llm", "show"],
        ["llm", "clear"],
        ["llm", "set", "--model", "m"],
        ["config", "show"],
        ["config", "reset"],
        ["config", "path"],
    ):
        assert parser.parse_args([*argv, "--data-dir", "D"]).data_dir == "D"
        assert parser.parse_args(["--data-dir", "D", *argv]).data_dir == "D"
        assert parser.parse_args(argv).data_dir is None


def test_profile_file_with_a_trailing_newline_counts_only_its_text(tmp_path, capsys):
    from zocrates_nb.cli import main

    profile = tmp_path / "profile.txt"
    profile.write_text("x" * 1000 + "\n", encoding="utf-8")  # exactly at the limit, plus the editor's newline
    assert main(["profile", "set", "--file", str(profile), "--data-dir", str(tmp_path / "d")]) == 0
    capsys.readouterr()
    assert main(["profile", "show", "--data-dir", str(tmp_path / "d"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["chars"] == 1000 and shown["user_research_profile"] == "x" * 1000
