"""``zocrates-nb doctor``: finds each kind of damage, ``--repair`` fixes it, status shows one line."""

from __future__ import annotations

import json
import os
import time

from tests.system.faults import assert_same_ranking
from zocrates_nb.cli import main


def _doctor(home, capsys, *extra) -> tuple[int, dict]:
    code = main(["--data-dir", str(home), "doctor", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_doctor_finds_and_repairs_every_kind_of_damage(demo_home, capsys):
    from zocrates_nb.workbench.core import Workbench

    code, clean = _doctor(demo_home, capsys)
    assert code == 0 and clean["ok"], clean
    wb = Workbench(demo_home, auto_sync=False)
    keys = wb.corpus.keys("note")
    expected = wb.search("cell type deconvolution", k=5).keys()
    with wb.corpus.meta.write() as conn:  # index lost a document
        wb.index.unstage(conn, keys[1])
    wb.close()
    (demo_home / "corpus" / keys[0] / "content.md").write_bytes(os.urandom(500))  # bundle damaged
    leftover = demo_home / "corpus" / ".tmp-ABCD1234-deadbeef"
    leftover.mkdir()
    old = time.time() - 3600
    os.utime(leftover, (old, old))
    secrets = demo_home / "secrets.json"
    secrets.write_text('{"api_key": "sk-test"}')
    os.chmod(secrets, 0o644)

    code, found = _doctor(demo_home, capsys)
    bad = {f["check"] for f in found["findings"] if not f["ok"]}
    assert code == 1 and {"bundles", "index", "leftovers", "file_modes"} <= bad, found
    assert "sk-test" not in json.dumps(found)
    assert main(["--data-dir", str(demo_home), "status"]) == 0
    assert "health         : " in capsys.readouterr().out

    code, repaired = _doctor(demo_home, capsys, "--repair")
    assert code == 0 and repaired["ok"], repaired
    code, after = _doctor(demo_home, capsys)
    assert code == 0 and all(f["ok"] for f in after["findings"]), after
    assert not leftover.exists() and (secrets.stat().st_mode & 0o077) == 0
    wb = Workbench(demo_home, auto_sync=False)
    try:
        assert wb.search("cell type deconvolution", k=5).keys() == expected
        assert sorted(wb.corpus.keys("note")) == sorted(keys)
    finally:
        wb.close()


def test_doctor_without_repair_leaves_a_damaged_meta_db_in_place(demo_home, capsys):
    db = demo_home / "conversion_meta.db"
    data = bytearray(db.read_bytes())
    data[:100] = os.urandom(100)
    db.write_bytes(bytes(data))
    code, found = _doctor(demo_home, capsys)
    assert code == 1 and db.read_bytes() == bytes(data)
    assert not found["findings"][0]["ok"]
    code, repaired = _doctor(demo_home, capsys, "--repair")
    assert code == 0, repaired
    assert list(demo_home.glob("conversion_meta.db.damaged-*"))
    code, after = _doctor(demo_home, capsys)
    assert code == 0, after


QUERIES = ("cell type deconvolution of Visium spots", "batch integration of single-cell data")
MODES = ("lexical", "dense", "hybrid")


def _searches(home) -> dict[str, list[str]]:
    """Each query's ranked keys in every mode; hybrid without fallback, so a broken dense side fails."""
    from zocrates_nb.workbench.core import Workbench

    wb = Workbench(home, auto_sync=False)
    try:
        results = {f"{m}:{q}": [h.key for h in wb.index.search(q, k=8, mode=m)] for q in QUERIES for m in MODES}
        _, notices = wb.index.search_with_notices(QUERIES[0], k=8, mode="hybrid")
        assert not notices, notices  # no "answered lexically" fallback
    finally:
        wb.close()
    return results


def test_doctor_reports_and_repairs_a_damaged_vector_store(demo_home, capsys):
    expected = _searches(demo_home)
    store = demo_home / "chroma" / "chroma.sqlite3"
    data = bytearray(store.read_bytes())
    data[:100] = os.urandom(100)
    store.write_bytes(bytes(data))

    code, found = _doctor(demo_home, capsys)  # valid JSON on stdout, not an error on stderr
    vectors = next(f for f in found["findings"] if f["check"] == "vectors")
    assert code == 1 and not found["ok"] and not vectors["ok"], found
    assert vectors["detail"].startswith("vector store damaged: ") and vectors["repair"], vectors
    assert main(["--data-dir", str(demo_home), "doctor"]) == 1
    text = capsys.readouterr().out
    assert "PROBLEM vectors    vector store damaged: " in text and "→ --repair would: re-create it" in text
    assert "Run `zocrates-nb doctor --repair` to fix these." in text

    code, repaired = _doctor(demo_home, capsys, "--repair")
    vectors = next(f for f in repaired["findings"] if f["check"] == "vectors")
    assert code == 0 and repaired["ok"] and "re-created" in vectors["done"], repaired
    code, after = _doctor(demo_home, capsys)
    assert code == 0 and all(f["ok"] for f in after["findings"]), after
    _assert_same_searches(_searches(demo_home), expected)  # hybrid again, the same results as before


def _assert_same_searches(after: dict[str, list[str]], before: dict[str, list[str]]) -> None:
    """Lexical lists exactly; dense and hybrid by ``assert_same_ranking`` (the store was re-created)."""
    assert after.keys() == before.keys()
    for name, keys in before.items():
        if name.startswith("lexical:"):
            assert after[name] == keys, name
        else:
            assert_same_ranking(after[name], keys, name)


def test_doctor_plain_text_on_a_clean_data_dir_says_ok_for_every_check(demo_home, capsys):
    assert main(["--data-dir", str(demo_home), "doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    checks = [line.split()[1] for line in lines]
    assert checks == [
        "meta_db",
        "config",
        "leftovers",
        "locks",
        "file_modes",
        "model",
        "space",
        "bundles",
        "index",
        "vectors",
    ]
    assert all(line.startswith("ok      ") for line in lines), lines
    assert "--repair" not in "\n".join(lines)


def test_doctor_finds_and_fixes_loose_config_and_secrets_modes(data_dir, capsys):
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.settings.config import ConfigStore

    paths = DataPaths.resolve(data_dir)
    ConfigStore.for_paths(paths).update({"profile": {"text": "spatial omics"}})
    paths.secrets.write_text('{"api_key": "sk-test"}')
    os.chmod(paths.config, 0o666)
    os.chmod(paths.secrets, 0o640)
    assert main(["--data-dir", str(data_dir), "doctor"]) == 1
    text = capsys.readouterr().out
    assert "PROBLEM file_modes secrets.json is mode 640; zocrates_config.json is mode 666" in text, text
    assert "→ --repair would: chmod 600 secrets.json" in text and "sk-test" not in text
    main(["--data-dir", str(data_dir), "doctor", "--repair"])
    text = capsys.readouterr().out
    assert "FIXED   file_modes" in text and "→ modes fixed" in text, text
    assert os.stat(paths.secrets).st_mode & 0o777 == 0o600
    assert os.stat(paths.config).st_mode & 0o777 == 0o644
    code, after = _doctor(data_dir, capsys)
    assert next(f for f in after["findings"] if f["check"] == "file_modes")["ok"], after
