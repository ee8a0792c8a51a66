"""secrets.json that is not what it should be (issue 26): a folder, invalid JSON. Clear errors, true hints."""

from __future__ import annotations

import json

from tests.system.faults import cli

KEY = "sk-cred-test-0123456789"


def test_a_secrets_folder_is_named_and_nothing_raises(tmp_path):
    home = tmp_path / "data"
    (home / "secrets.json").mkdir(parents=True)
    for argv in (("llm", "show"), ("status",)):
        code, out, err = cli(home, *argv)  # cli() fails the test on any traceback
        assert code == 0, err
    code, out, _ = cli(home, "llm", "show")
    assert "api_key_set    : False" in out
    code, _, err = cli(home, "llm", "set", "--api-key-stdin", stdin=KEY + "\n")
    assert code == 1 and "is a folder" in err and "Move the folder away" in err and KEY not in err


def test_invalid_secrets_json_is_not_a_key_and_the_hint_replaces_it(tmp_path):
    home = tmp_path / "data"
    home.mkdir()
    (home / "secrets.json").write_text('{"api_key": "sk-trunc')
    code, out, _ = cli(home, "status", "--json")
    status = json.loads(out)
    assert code == 0 and status["llm"]["api_key_set"] is False
    assert "Delete" not in status["secrets_error"]["hint"] and "replaces the file" in status["secrets_error"]["hint"]
    code, _, err = cli(home, "llm", "set", "--api-key-stdin", stdin=KEY + "\n")
    assert code == 0, err
    code, out, _ = cli(home, "status", "--json")
    assert json.loads(out)["llm"]["api_key_set"] is True and "secrets_error" not in json.loads(out)
