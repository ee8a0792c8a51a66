"""Atomic bundles: a reader (thread or process) during 50 rewrites always sees a whole old or new bundle."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from zocrates_nb.corpus.bundle import BundleError, read_bundle, remove_bundle, sweep_temporary, write_bundle
from zocrates_nb.errors import NotFoundError

REPO = Path(__file__).resolve().parents[2]
REWRITES = 50


def generation(i: int) -> tuple[dict, str]:
    """Bundle i: its content differs in size and text; the manifest carries the content's hash."""
    markdown = f"# Generation {i}\n\n" + ("lorem ipsum " * (50 + 40 * (i % 7))) + f"\n\nend {i}\n"
    return {"title": f"Generation {i}", "source_hash": hashlib.sha256(markdown.encode()).hexdigest()}, markdown


def check(manifest: dict, markdown: str) -> int:
    assert manifest["source_hash"] == hashlib.sha256(markdown.encode()).hexdigest()
    assert manifest["title"] == markdown.split("\n", 1)[0][2:]
    return int(manifest["title"].split()[-1])


def test_reader_thread_sees_old_or_new_never_half(tmp_path):
    corpus = tmp_path / "corpus"
    write_bundle(corpus, "ATOMIC22", *generation(0))
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                seen.append(check(*read_bundle(corpus / "ATOMIC22")))
            except BaseException as err:  # noqa: BLE001 - collected and asserted below
                errors.append(err)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(1, REWRITES + 1):
            write_bundle(corpus, "ATOMIC22", *generation(i), durable=False)
            time.sleep(0.002)  # let the reader run between rewrites
    finally:
        stop.set()
        thread.join(30)
    assert errors == []
    assert len(seen) > REWRITES // 2 and seen == sorted(seen)  # generations only move forward
    assert len(set(seen)) > 5
    assert check(*read_bundle(corpus / "ATOMIC22")) == REWRITES
    assert sorted(p.name for p in corpus.iterdir()) == ["ATOMIC22"]  # no temp or aside dirs left


READER = r"""
import hashlib, json, sys, time
from pathlib import Path
from zocrates_nb.corpus.bundle import read_bundle
bundle, stop, ready = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
reads, bad, titles = 0, [], set()
while not stop.exists():
    try:
        manifest, markdown = read_bundle(bundle)
    except Exception as err:
        bad.append(repr(err)); break
    if manifest["source_hash"] != hashlib.sha256(markdown.encode()).hexdigest():
        bad.append("mismatch " + manifest["title"])
    titles.add(manifest["title"])
    reads += 1
    if reads == 1:
        ready.touch()
print(json.dumps({"reads": reads, "bad": bad[:5], "generations": len(titles)}))
"""


def test_reader_process_sees_old_or_new_never_half(tmp_path):
    corpus = tmp_path / "corpus"
    write_bundle(corpus, "ATOMIC33", *generation(0))
    stop, ready = tmp_path / "stop", tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", READER, str(corpus / "ATOMIC33"), str(stop), str(ready)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)  # wait until the reader is in its loop
        assert ready.exists(), "reader process did not start"
        for i in range(1, REWRITES + 1):
            write_bundle(corpus, "ATOMIC33", *generation(i))
            time.sleep(0.002)
    finally:
        stop.touch()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert result["bad"] == [] and result["reads"] > REWRITES
    assert result["generations"] > 2  # it really read while the bundle was being rewritten


def test_interleaved_swap_is_retried_by_readers(tmp_path, monkeypatch):
    """Force the gap between 'old aside' and 'new in' to be observed: the reader retries and wins."""
    import zocrates_nb.corpus.bundle as bundle_module

    corpus = tmp_path / "corpus"
    write_bundle(corpus, "ATOMIC44", *generation(0))
    real_rename = os.rename
    observed: list[int] = []

    def slow_rename(src, dst):
        real_rename(src, dst)
        if Path(src).name == "ATOMIC44":  # the old bundle was just moved aside
            with pytest.raises((FileNotFoundError, NotADirectoryError)):
                bundle_module._read_pair(corpus / "ATOMIC44")
            done = threading.Event()

            def read_now():
                observed.append(check(*read_bundle(corpus / "ATOMIC44")))
                done.set()

            threading.Thread(target=read_now).start()
            time.sleep(0.003)  # the reader hits the gap, sleeps, retries

    monkeypatch.setattr(bundle_module.os, "rename", slow_rename)
    write_bundle(corpus, "ATOMIC44", *generation(1))
    monkeypatch.setattr(bundle_module.os, "rename", real_rename)
    deadline = time.monotonic() + 5
    while not observed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert observed == [1]


def test_tampered_content_is_detected(tmp_path):
    corpus = tmp_path / "corpus"
    path = write_bundle(corpus, "TAMPER22", *generation(3))
    (path / "content.md").write_text("half written")
    with pytest.raises(BundleError):
        read_bundle(path)
    with pytest.raises(NotFoundError):
        read_bundle(corpus / "MISSING2")


def test_remove_and_sweep(tmp_path):
    corpus = tmp_path / "corpus"
    write_bundle(corpus, "REMOVE22", *generation(1))
    assert remove_bundle(corpus, "REMOVE22") is True and not (corpus / "REMOVE22").exists()
    assert remove_bundle(corpus, "REMOVE22") is False
    stale = corpus / ".tmp-CRASHED2-deadbeef"
    stale.mkdir()
    (stale / "okf.json").write_text(json.dumps({}))
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    fresh = corpus / ".tmp-RUNNING2-cafebabe"
    fresh.mkdir()
    assert sweep_temporary(corpus) == 1 and not stale.exists() and fresh.exists()
    with pytest.raises(ValueError):
        write_bundle(corpus, "../escape", *generation(1))
