"""``library detect``, ``library writer local|web``, ``library show --json``, ``outbox …``, ``ask --save``."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from tests.fakes.zotero_web_api import FakeZoteroAPI
from zocrates_nb.cli import main

USER_ID = 475425
KEY = "s3cr3t-key-XYZ"
PAPER = "PAPER444"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _zotero_dir(folder: Path, user_id: int | None = USER_ID) -> Path:
    folder.mkdir(parents=True)
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.add_collection("COLL4444", "Spatial")
        db.add_paper(
            PAPER,
            "Mapping cell types in Visium spots",
            creators=[("Ana", "Lee", "author")],
            date="2021-01-01 2021-01-01",
        )
        db.add_note("NOTE4444", "<p>Cell2location needs a reference.</p>", parent=PAPER)
        db.set_setting("client", "lastVersion", "9.0.4")
        if user_id is not None:
            db.set_setting("account", "userID", user_id)
    return folder


@pytest.fixture
def desktop(tmp_path, capsys) -> Path:
    """A data dir synced from a desktop library."""
    data = tmp_path / "data"
    assert run(capsys, "sync", "--zotero-dir", str(_zotero_dir(tmp_path / "Zotero")), "--data-dir", str(data))[0] == 0
    return data


@pytest.fixture
def api():
    with FakeZoteroAPI(library_id=USER_ID, api_key=KEY) as fake:
        fake.add_item({"key": PAPER, "itemType": "journalArticle", "title": "Mapping cell types"})
        yield fake


# ----------------------------------------------------------------------------- detect


def test_detect_finds_prefs_js_and_home_zotero(tmp_path, monkeypatch, capsys):
    home, roots = tmp_path / "home", tmp_path / "profiles"
    custom = _zotero_dir(tmp_path / "elsewhere" / "ZoteroData")
    _zotero_dir(home / "Zotero", user_id=None)
    (roots / "abcd.default").mkdir(parents=True)
    (roots / "abcd.default" / "prefs.js").write_text(
        f'user_pref("extensions.zotero.dataDir", "{custom}");\nuser_pref("extensions.zotero.useDataDir", true);\n'
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", str(roots))
    monkeypatch.setenv("ZOCRATES_ZOTERO_LOCAL_PORT", "9")  # nothing listens: not running, never hangs
    code, out, _ = run(capsys, "library", "detect", "--json", "--data-dir", str(tmp_path / "d"))
    found = json.loads(out)
    assert code == 0 and [Path(f["path"]) for f in found] == [custom, home / "Zotero"]
    first = found[0]
    assert first["how_found"].startswith("prefs.js") and found[1]["how_found"].startswith("default")
    assert (first["items"], first["notes"], first["collections"]) == (1, 1, 1)
    assert first["user_id"] == USER_ID and found[1]["user_id"] is None
    assert first["zotero_version"] == "9.0.4" and first["userdata_schema"]
    assert first["running"] is False and first["local_api"] is False


def test_detect_sees_a_running_local_api(tmp_path, monkeypatch, capsys):
    with FakeZoteroAPI(library_id=0, local=True) as local:
        port = local.base_url.rsplit(":", 1)[1].split("/")[0]
        _zotero_dir(tmp_path / "home" / "Zotero")
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", "")
        monkeypatch.setenv("ZOCRATES_ZOTERO_LOCAL_PORT", port)
        code, out, _ = run(capsys, "library", "detect", "--json", "--data-dir", str(tmp_path / "d"))
        assert json.loads(out)[0]["running"] is True and json.loads(out)[0]["local_api"] is True


@pytest.mark.parametrize(
    ("literal", "expected"),
    [
        ('"/home/josé/Zotero"', "/home/josé/Zotero"),  # UTF-8 text, not bytes to unescape
        ('"C:\\\\Users\\\\José\\\\Zotero"', "C:\\Users\\José\\Zotero"),  # escaped backslashes
        ('"/home/jos\\u00e9/\\"quoted\\" \\ud83d\\ude00"', '/home/josé/"quoted" \U0001f600'),
        ("'/home/jos\\xe9/it\\'s'", "/home/josé/it's"),  # what JSON refuses, as Firefox's parser reads it
        ('"/home/a);b"', "/home/a);b"),  # a ");" inside the path does not end the value
    ],
)
def test_prefs_js_values_are_decoded_as_javascript_strings(literal, expected):
    from zocrates_nb.library.desktop.detect import parse_prefs

    text = f'user_pref("extensions.zotero.useDataDir", true);\nuser_pref("extensions.zotero.dataDir", {literal});\n'
    assert str(parse_prefs(text)) == expected


def test_detect_finds_a_non_ascii_custom_data_dir(tmp_path, monkeypatch, capsys):
    home, roots = tmp_path / "home", tmp_path / "profiles"
    custom = _zotero_dir(tmp_path / "josé" / "Zotéro 数据")
    (roots / "abcd.default").mkdir(parents=True)
    (roots / "abcd.default" / "prefs.js").write_text(
        f'user_pref("extensions.zotero.dataDir", {json.dumps(str(custom), ensure_ascii=False)});\n'
        'user_pref("extensions.zotero.useDataDir", true);\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", str(roots))
    monkeypatch.setenv("ZOCRATES_ZOTERO_LOCAL_PORT", "9")
    code, out, _ = run(capsys, "library", "detect", "--json", "--data-dir", str(tmp_path / "d"))
    assert code == 0 and [f["path"] for f in json.loads(out)] == [str(custom)]


def test_detect_counts_what_sync_reads_not_the_trash_attachments_or_groups(tmp_path):
    from zocrates_nb.library.desktop.detect import read_zotero_db
    from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary

    folder = _zotero_dir(tmp_path / "Zotero")  # 1 paper, 1 note, 1 collection
    with ZoteroDB.reopen(folder / "zotero.sqlite", "9") as db:
        db.add_attachment("ATTACH44", PAPER, note="<p>an attachment note</p>")
        db.add_paper("GONE4444", "Trashed paper")
        db.add_note("GONENOTE", "<p>child of a trashed paper</p>", parent="GONE4444")
        db.trash("GONE4444")
        db.add_note("TRASHNOT", "<p>trashed note</p>")
        db.trash("TRASHNOT")
        db.add_collection("GONECOLL", "Old")
        db.trash_collection("GONECOLL")
    info = read_zotero_db(folder / "zotero.sqlite")
    snap = ZoteroDesktopLibrary(zotero_dir=folder).snapshot()
    assert (info["items"], info["notes"], info["collections"]) == (1, 1, 1)
    assert (info["items"], info["notes"], info["collections"]) == (
        len(snap.papers),
        len(snap.notes),
        len(snap.collections),
    )


REAL_ZOTERO9 = Path("/work/shared/data/zotero/zotero9-profile.sqlite")


@pytest.mark.skipif(not REAL_ZOTERO9.is_file(), reason="the real Zotero 9 profile database is not on this machine")
def test_detect_counts_equal_what_the_reader_returns_on_a_real_zotero9_db():
    """Feed items, annotations, trashed and group notes are in this database; sync reads none of them."""
    from zocrates_nb.library.desktop.detect import read_zotero_db
    from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary

    info = read_zotero_db(REAL_ZOTERO9)
    snap = ZoteroDesktopLibrary(sqlite_path=REAL_ZOTERO9).snapshot()
    counts = (len(snap.papers), len(snap.notes), len(snap.collections))
    assert (info["items"], info["notes"], info["collections"]) == counts
    assert info["items"] < 55  # what the old count said: 5 feed items and an annotation included


def test_offer_line():
    from zocrates_nb.library.desktop.detect import DetectedLibrary

    lib = DetectedLibrary("/z", "default", 125, "9.0.4", 1234, 56, 3, None, False, False)
    assert lib.offer == "Use my Zotero library (1,234 items, 56 notes)"


# ----------------------------------------------------------------------------- writers


def test_writer_web_checks_the_key_and_library_show_reports_it(desktop, api, monkeypatch, capsys):
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    code, out, err = run(
        capsys,
        "library",
        "writer",
        "web",
        "--api-key-env",
        "ZOTERO_API_KEY",
        "--base-url",
        api.base_url,
        "--data-dir",
        str(desktop),
    )
    assert code == 0, err
    code, out, _ = run(capsys, "library", "show", "--json", "--data-dir", str(desktop))
    shown = json.loads(out)
    assert shown["source"] == "zotero-dir" and shown["writer"]["kind"] == "web" and shown["outbox"] == 0
    assert KEY not in out
    code, out, _ = run(
        capsys, "ask", "Which tool maps cell types?", "--save", "--parent", PAPER, "--json", "--data-dir", str(desktop)
    )
    saved = json.loads(out)["saved"]
    assert code == 0 and saved["where"] == "zotero-web" and saved["parent_key"] == PAPER and saved["reason"] is None
    assert api.items[saved["key"]]["parentItem"] == PAPER
    code, out, _ = run(capsys, "status", "--data-dir", str(desktop))
    assert "1 saved notes waiting for Zotero to sync" in out


def test_writer_web_refuses_a_key_of_another_account(desktop, api, monkeypatch, capsys):
    api.key_user_id = 999
    api.library_id = 999
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    code, _, err = run(
        capsys,
        "library",
        "writer",
        "web",
        "--api-key-env",
        "ZOTERO_API_KEY",
        "--base-url",
        api.base_url,
        "--data-dir",
        str(desktop),
    )
    assert code == 1 and "another library" in err and "Traceback" not in err


def test_writer_local_keeps_the_key_0600(desktop, monkeypatch, capsys):
    with FakeZoteroAPI(library_id=0, api_key="local-key", local=True, server_id="srv-9") as local:
        local.add_item({"key": PAPER, "itemType": "journalArticle", "title": "Mapping cell types"})
        code, out, err = run(
            capsys, "library", "writer", "local", "--base-url", local.base_url, "--data-dir", str(desktop)
        )
        assert code == 0, err
        key_file = desktop / "zotero_local_key.json"
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert "local-key" not in (desktop / "zocrates_config.json").read_text()
        code, out, _ = run(capsys, "library", "show", "--json", "--data-dir", str(desktop))
        assert json.loads(out)["writer"]["kind"] == "local" and "local-key" not in out
        code, out, _ = run(
            capsys, "ask", "cell types", "--save", "--parent", PAPER, "--json", "--data-dir", str(desktop)
        )
        assert json.loads(out)["saved"]["where"] == "zotero-local"


# ----------------------------------------------------------------------------- outbox


def test_outbox_list_push_export(desktop, api, monkeypatch, capsys, tmp_path):
    code, out, _ = run(
        capsys, "ask", "Which tool maps cell types?", "--save", "--parent", PAPER, "--json", "--data-dir", str(desktop)
    )
    saved = json.loads(out)["saved"]
    assert saved["where"] == "outbox" and "writer" in saved["reason"]
    code, out, _ = run(capsys, "outbox", "list", "--data-dir", str(desktop))
    assert saved["key"] in out and "not yet in Zotero" in out
    code, out, _ = run(capsys, "status", "--data-dir", str(desktop))
    assert "1 saved notes not yet in Zotero" in out
    code, out, _ = run(capsys, "library", "show", "--json", "--data-dir", str(desktop))
    assert json.loads(out)["outbox"] == 1
    code, _, err = run(capsys, "outbox", "drop", "ABCD2345", "--data-dir", str(desktop))
    assert code == 1 and "outbox list" in err
    code, out, _ = run(capsys, "outbox", "export", str(tmp_path / "export"), "--data-dir", str(desktop))
    assert (tmp_path / "export" / f"{saved['key']}.html").read_text().startswith("<")
    monkeypatch.setenv("ZOTERO_API_KEY", KEY)
    run(capsys, "library", "writer", "none", "--data-dir", str(desktop))
    code, out, _ = run(capsys, "outbox", "push", "--json", "--data-dir", str(desktop))
    assert json.loads(out)["written"] == []
    code, out, _ = run(capsys, "library", "writer", "web", "--base-url", api.base_url, "--data-dir", str(desktop))
    assert "sent 1 note" in out
    code, out, _ = run(capsys, "outbox", "list", "--json", "--data-dir", str(desktop))
    listing = json.loads(out)
    assert listing["outbox"] == [] and listing["waiting_for_zotero_sync"][0]["key"] == saved["key"]


def test_ask_save_on_the_demo(demo_home, capsys):
    code, out, _ = run(capsys, "ask", "Visium deconvolution", "--save", "--json")
    saved = json.loads(out)["saved"]
    assert code == 0 and saved["where"] == "demo" and saved["reason"] is None
    code, _, err = run(capsys, "ask", "x", "--parent", "ABCD2345")
    assert code == 1 and "--save" in err


def test_outbox_drop_then_sync_removes_it_from_search(desktop, capsys):
    code, out, _ = run(capsys, "ask", "Which tool maps cell types?", "--save", "--json", "--data-dir", str(desktop))
    key = json.loads(out)["saved"]["key"]
    assert run(capsys, "outbox", "drop", key, "--data-dir", str(desktop))[0] == 0
    code, out, _ = run(capsys, "sync", "--json", "--data-dir", str(desktop))
    assert json.loads(out)["counts"]["removed"] == 1
    code, out, _ = run(capsys, "outbox", "list", "--data-dir", str(desktop))
    assert key not in out


def test_writer_web_maps_a_desktop_group_library_to_its_group_id(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "Zotero"
    folder.mkdir()
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.conn.execute("INSERT INTO groups VALUES (777, 2, 'Lab group', '', 3)")
        db.add_paper("GPAPER22", "A group paper", library_id=2)
        db.set_setting("account", "userID", USER_ID)
    data = tmp_path / "data"
    assert run(capsys, "library", "use", "dir", str(folder), "--data-dir", str(data))[0] == 0
    from zocrates_nb.settings.config import ConfigStore

    ConfigStore(data / "zocrates_config.json").update({"library": {"desktop_library_id": 2}})
    with FakeZoteroAPI(library_id=777, library_type="group", api_key=KEY) as group_api:
        group_api.key_access = {"user": {"library": True}, "groups": {"777": {"library": True, "write": True}}}
        monkeypatch.setenv("ZOTERO_API_KEY", KEY)
        code, _, err = run(
            capsys, "library", "writer", "web", "--base-url", group_api.base_url, "--data-dir", str(data)
        )
        assert code == 0, err
        writer = ConfigStore(data / "zocrates_config.json").read()["writer"]
        assert (writer["library_type"], writer["library_id"]) == ("group", "777")
