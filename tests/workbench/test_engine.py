"""The warm engine (issue 13): `zocrates-nb search` goes through it when one runs, gives the same
results as the in-process path, carries errors back as ZocratesErrors, and falls back to the
in-process search when none runs. A real engine process on a real Unix socket."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

from zocrates_nb.cli import main
from zocrates_nb.paths import DataPaths
from zocrates_nb.workbench.engine import ask_engine, socket_path


@pytest.fixture
def runtime_dir(monkeypatch):
    folder = tempfile.mkdtemp(prefix="zr")  # short: AF_UNIX socket paths are limited to 107 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", folder)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _search(capsys, home, *extra) -> dict:
    assert main(["--data-dir", str(home), "search", "cell-type deconvolution", "--k", "5", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_search_goes_through_a_running_engine_and_falls_back_without_one(demo_home, runtime_dir, capsys):
    paths = DataPaths(demo_home)
    in_process = _search(capsys, demo_home)
    assert "engine" not in in_process  # none runs yet
    assert main(["--data-dir", str(demo_home), "engine", "start", "--wait", "--idle", "300"]) == 0
    try:
        assert "ready" in capsys.readouterr().out
        assert oct(os.stat(socket_path(paths)).st_mode & 0o777) == "0o600"
        served = _search(capsys, demo_home)
        assert served["engine"] is True
        assert [h["key"] for h in served["hits"]] == [h["key"] for h in in_process["hits"]]
        assert not served["notice"] and any(h["ranks"]["dense"] for h in served["hits"])
        assert "engine" not in _search(capsys, demo_home, "--no-engine")
        # a refused query comes back as the same error the in-process path gives
        assert main(["--data-dir", str(demo_home), "search", "   "]) == 1
        assert "empty" in capsys.readouterr().err.lower()
        assert main(["--data-dir", str(demo_home), "engine", "status", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["running"] is True
    finally:
        main(["--data-dir", str(demo_home), "engine", "stop"])
    capsys.readouterr()
    for _ in range(100):  # the engine removes its socket
        if ask_engine(paths, {"op": "ping"}, timeout=1.0) is None:
            break
        import time

        time.sleep(0.1)
    assert "engine" not in _search(capsys, demo_home)


def test_a_stale_socket_file_means_no_engine(demo_home, runtime_dir):
    path = socket_path(DataPaths(demo_home))
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:  # bound, never listening, then closed
        s.bind(str(path))
    assert path.exists() and ask_engine(DataPaths(demo_home), {"op": "ping"}) is None


def test_a_shared_engine_folder_is_refused(data_dir, runtime_dir):
    from zocrates_nb.errors import ZocratesError

    folder = os.path.join(runtime_dir, f"zocrates-{os.getuid()}")
    os.makedirs(folder, mode=0o777, exist_ok=True)
    os.chmod(folder, 0o777)
    with pytest.raises(ZocratesError, match="not private"):
        socket_path(DataPaths(data_dir))


def test_search_never_needs_the_engine_folder(demo_home, tmp_path, monkeypatch, capsys):
    """No runtime folder, or one others may write: no engine is asked, and the search runs here."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "missing" / "run"))
    assert "engine" not in _search(capsys, demo_home)
    assert not (tmp_path / "missing").exists()  # a client makes nothing
    shared = tmp_path / "shared"
    (shared / f"zocrates-{os.getuid()}").mkdir(parents=True)
    os.chmod(shared / f"zocrates-{os.getuid()}", 0o777)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    assert "engine" not in _search(capsys, demo_home)


def test_an_engine_that_does_not_answer_is_reported_and_search_goes_on_without_it(demo_home, runtime_dir, capsys):
    import socket

    from zocrates_nb.workbench.engine import EngineNotAnswering

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as hung:  # accepts connections, never answers
        hung.bind(str(socket_path(DataPaths(demo_home))))
        hung.listen(8)
        with pytest.raises(EngineNotAnswering, match="did not answer") as caught:
            ask_engine(DataPaths(demo_home), {"op": "ping"}, timeout=0.5)
        assert "pkill -f" in caught.value.hint and "--no-engine" in caught.value.hint
        assert "engine" not in _search(capsys, demo_home)  # after a 5 s ping, not a 120 s wait
        assert main(["--data-dir", str(demo_home), "engine", "status"]) == 1
        assert "did not answer" in capsys.readouterr().err


def test_an_engine_is_not_started_for_a_data_directory_that_does_not_exist(tmp_path, runtime_dir, capsys):
    assert main(["--data-dir", str(tmp_path / "new"), "engine", "start"]) == 1
    err = capsys.readouterr().err
    assert "no data directory" in err and f"zocrates-nb sync --data-dir {tmp_path / 'new'}" in err
    assert not (tmp_path / "new").exists()
