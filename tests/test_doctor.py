"""``zocrates-nb doctor``: finds each kind of damage, ``--repair`` fixes it, status shows one line."""

from __future__ import annotations

import json
import os
import time

from zocrates_nb.cli import main


def _doctor(home, capsys, *extra) -> tuple[int, dict]:
    code = main(["--data-dir", str(home), "doctor", "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def test_doctor_finds_and_repairs_every_kind_of_damage(demo_home, capsys):
    from zocrates_nb.workbench import Workbench

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
