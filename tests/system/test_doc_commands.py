"""Every ``zocrates-nb …`` command shown in README.md and docs/*.md runs (issue 9 §2).

How it works (so that a new doc page needs no change here):

* ``tests/system/doc_commands.py`` finds the command lines: lines of fenced shell blocks and inline
  code spans that start with ``zocrates-nb``.
* **Synopses** (``[--json]``, ``a | b``, ``…``): their command words and every ``--option``
  they name must exist in the real parser.
* **Commands** run in-process through ``zocrates_nb.cli.main`` on a scratch copy of the synced
  demo data directory; the commands of one fenced block share one copy, in order. Placeholders
  (``DIR``, ``~/Zotero``, ``PATH``, ``KEY``, ``QUESTION``, …) are replaced by fixtures: see
  ``_placeholders``. ``KEY`` after ``--parent`` is a paper of the library in use at that moment.
  ``library writer web|local`` without ``--base-url`` get the URL of a loopback fake Zotero
  (Web API / local API, ``tests/fakes/zotero_web_api.py``); ``$ZOTERO_API_KEY`` holds its key.
  ``HOME`` is an empty tmp dir (so ``library detect`` finds nothing of the machine's).
  Each must exit 0, unless ``EXPECTED_NONZERO`` names it with a reason.

A failure names the file and line of the doc, the command as written and as run, and its output.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from tests.fakes.zotero_web_api import FakeZoteroAPI
from tests.system.doc_commands import DocCommand, all_commands

REPO = Path(__file__).resolve().parents[2]
SHARED_PROFILE = REPO.parent / "shared" / "data" / "zotero" / "zotero9-profile.sqlite"
ZOTERO_USER_ID = 8230813  # account.userID of the shared profile (and of the built fallback)
API_KEY = "doc-test-key-123"

#: Commands that are allowed a nonzero exit, with the reason (keyed by the command as written).
EXPECTED_NONZERO: dict[str, tuple[int, str]] = {}
#: Commands that are not run, with the reason.
NOT_RUN: dict[str, str] = {
    "zocrates-nb llm set --api-key-stdin < keyfile": "shell redirection from a user's file; "
    "tests/cli/test_cli_config.py runs --api-key-stdin",
}


def _placeholders(fx: dict[str, str]) -> list[tuple[str | None, str, str, str]]:
    """(previous token or None, token regex, replacement, why). The first match wins."""
    return [
        ("--zotero-dir", r"DIR|~/Zotero", fx["zotero_dir"], "a Zotero data directory built by the test"),
        ("dir", r"DIR|~/Zotero", fx["zotero_dir"], "a Zotero data directory built by the test"),
        ("--zotero-sqlite", r"PATH|.*zotero\.sqlite", fx["zotero_sqlite"], "its zotero.sqlite"),
        ("sqlite", r"PATH|.*zotero\.sqlite", fx["zotero_sqlite"], "its zotero.sqlite"),
        ("--dataset", r"DIR|.*scifact", fx["beir"], "a three-document BEIR folder"),
        ("export", r"DIR", fx["export_dir"], "an empty folder"),
        ("--export-to", r"PATH|[\w./-]+\.(?:md|bib|json)", fx["writing_file"], "a file in a scratch folder"),
        ("--data-dir", r"D|DIR", fx["data_dir"], "the scratch data directory"),
        ("--file", r"F|FILE", fx["profile_file"], "a profile text file"),
        ("--text", r"T|TEXT", "spatial transcriptomics", "profile text"),
        ("--parent", r"KEY", fx["paper_key"], "a paper of the library in use"),
        ("--collection", r"KEY|C", fx["collection_key"], "a collection of the library in use"),
        ("--model", r"NAME", "gpt-4o-mini", "a model name"),
        ("--api-key-env", r"NAME|ENV", "ZOTERO_API_KEY", "an environment variable name"),
        ("--base-url", r"URL", "http://127.0.0.1:9/v1", "a URL (not contacted by these commands)"),
        ("--library-id", r"ID", "1234567", "a numeric id"),
        ("--library", r"NAME|ID", "Demo library", "the name of a library the index holds (the demo's)"),
        ("--k", r"N", "3", "a count"),
        (None, r"QUESTION|QUERY", "Which methods deconvolve cell types in Visium spots?", "a question"),
        (None, r"NOTE\.html", fx["note_html"], "a note's HTML file"),
    ]


def substitute(command: str, fx: dict[str, str]) -> list[str]:
    """The argv (without the program name) with every placeholder replaced."""
    words = shlex.split(command)[1:]
    out: list[str] = []
    for index, word in enumerate(words):
        previous = words[index - 1] if index else None
        for context, pattern, replacement, _why in _placeholders(fx):
            if (context is None or context == previous) and re.fullmatch(pattern, word):
                word = replacement
                break
        out.append(os.path.expanduser(word) if word.startswith("~") else word)
    return out


# ----------------------------------------------------------------------------- fixtures


def _build_zotero_dir(folder: Path) -> None:
    folder.mkdir(parents=True)
    if SHARED_PROFILE.is_file():
        shutil.copy2(SHARED_PROFILE, folder / "zotero.sqlite")
        return
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.add_collection("COLL2345", "Spatial")
        db.add_paper(
            "PAPER234",
            "Spatially resolved transcriptomics",
            creators=[("Ana", "Lee", "author")],
            date="2020-01-01 2020-01-01",
            collections=["COLL2345"],
        )
        db.add_note("NOTE2345", "<p>Deconvolution needs a matched reference.</p>", parent="PAPER234")
        db.set_setting("account", "userID", ZOTERO_USER_ID)


@pytest.fixture(scope="module")
def zotero_fakes():
    """A loopback Web API (the desktop profile's account) and a Zotero 10 local API."""
    with (
        FakeZoteroAPI(library_id=ZOTERO_USER_ID, api_key=API_KEY) as web,
        FakeZoteroAPI(library_id=0, api_key=API_KEY, local=True) as local,
    ):
        yield {"web": web.base_url, "local": local.base_url}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory, demo_template, zotero_fakes) -> dict[str, str]:
    from tests.quality.test_evaluate import write_beir

    root = tmp_path_factory.mktemp("doc-fixtures")
    _build_zotero_dir(root / "Zotero")
    beir = write_beir(root / "beir")
    shutil.copy2(beir / "qrels" / "test.tsv", beir / "qrels" / "train.tsv")
    (root / "profile.txt").write_text("I study spatial transcriptomics.\n", encoding="utf-8")
    (root / "note.html").write_text("<h1>A note</h1><p>Some text.</p>", encoding="utf-8")
    from zocrates_nb.library.local import DemoLibrary

    demo = (
        DemoLibrary(demo_template / "demo_library.sqlite") if (demo_template / "demo_library.sqlite").exists() else None
    )
    snapshot = demo.snapshot() if demo else None
    from zocrates_nb.library.desktop.snapshot import ZoteroDesktopLibrary

    zotero = ZoteroDesktopLibrary(zotero_dir=root / "Zotero")
    zotero_paper = zotero.snapshot().papers[0].key
    zotero.close()
    return {
        "zotero_paper_key": zotero_paper,
        "web_api": zotero_fakes["web"],
        "local_api": zotero_fakes["local"],
        "zotero_dir": str(root / "Zotero"),
        "zotero_sqlite": str(root / "Zotero" / "zotero.sqlite"),
        "beir": str(beir),
        "profile_file": str(root / "profile.txt"),
        "note_html": str(root / "note.html"),
        "export_dir": str(root / "export"),
        "writing_file": str(root / "writing" / "draft.md"),
        "data_dir": "",
        "paper_key": snapshot.papers[0].key if snapshot else "PAPER234",
        "collection_key": snapshot.collections[0].key if snapshot else "COLL2345",
        "demo_template": str(demo_template),
    }


def _groups() -> list[list[DocCommand]]:
    """Runnable commands: one group per fenced block (shared data dir), one per inline command."""
    groups: dict[tuple, list[DocCommand]] = {}
    for command in all_commands(REPO):
        if command.is_synopsis:
            continue
        key = (command.file, command.block) if command.block is not None else (command.file, command.line, command.text)
        groups.setdefault(key, []).append(command)
    return list(groups.values())


def _describe(command: DocCommand, argv: list[str], out: str, err: str, code) -> str:
    return (
        f"{command.where}: `{command.text}` failed (exit {code}).\n  run as: zocrates-nb {shlex.join(argv)}\n"
        f"  stdout: {out[-1500:]}\n  stderr: {err[-1500:]}\n"
        "Fix the command in the doc, add a placeholder to PLACEHOLDERS in tests/system/test_doc_commands.py, "
        "or (with a reason) add it to EXPECTED_NONZERO / NOT_RUN."
    )


@pytest.mark.parametrize("group", _groups(), ids=lambda g: f"{g[0].where}")
def test_doc_command_runs(group, fixtures, tmp_path, monkeypatch, capsys):
    from zocrates_nb.cli import main

    data = tmp_path / "data"
    shutil.copytree(fixtures["demo_template"], data)
    monkeypatch.setenv("ZOCRATES_HOME", str(data))
    from zocrates_nb.paths import model_cache_dir

    monkeypatch.setenv("ZOCRATES_MODEL_DIR", str(model_cache_dir()))  # the machine's built model, before HOME moves
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ZOCRATES_ZOTERO_PROFILE_ROOTS", "")
    monkeypatch.setenv("ZOCRATES_ZOTERO_LOCAL_PORT", "9")
    monkeypatch.setenv("ZOTERO_API_KEY", API_KEY)
    from zocrates_nb.settings.config import ConfigStore

    for command in group:
        if command.text in NOT_RUN:
            continue
        source = ConfigStore(data / "zocrates_config.json").read()["library"]["source"]
        fx = {
            **fixtures,
            "data_dir": str(data),
            "paper_key": fixtures["paper_key"] if source == "demo" else fixtures["zotero_paper_key"],
        }
        argv = substitute(command.text, fx)
        if argv[:2] == ["library", "writer"] and argv[2:3] in (["web"], ["local"]) and "--base-url" not in argv:
            argv += ["--base-url", fx["web_api"] if argv[2] == "web" else fx["local_api"]]
        # --api-key-stdin reads one line: give it a key that is not a real one
        monkeypatch.setattr("sys.stdin", io.StringIO("sk-doc-test-not-a-real-key\n"))
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse refusals
            code = exc.code
        out, err = capsys.readouterr()
        expected = EXPECTED_NONZERO.get(command.text, (0, ""))[0]
        if command.is_mention and code == 2 and "usage:" in err:
            continue  # the name of a command mentioned in prose; argparse knows it and asks for its arguments
        assert code == expected, _describe(command, argv, out, err, code)
        assert "Traceback" not in err, _describe(command, argv, out, err, code)


# ----------------------------------------------------------------------------- synopses


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    found = {opt for action in parser._actions for opt in action.option_strings}
    for child in _subparsers(parser).values():
        found |= _options(child)
    return found


@pytest.mark.parametrize("command", [c for c in all_commands(REPO) if c.is_synopsis], ids=lambda c: c.where)
def test_doc_synopsis_names_real_commands_and_options(command):
    from zocrates_nb.cli import build_parser

    words = command.text.replace("\\|", "|").split()[1:]
    commands = _subparsers(build_parser())
    name = next((w for w in words if not w.startswith("-")), None)
    assert name in commands, f"{command.where}: `{command.text}`: no command {name!r}"
    known = _options(commands[name]) | _options(build_parser())
    for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", command.text):
        assert option in known, f"{command.where}: `{command.text}`: `{name}` has no option {option}"


def test_extraction_finds_the_readme_commands():
    texts = {c.text for c in all_commands(REPO)}
    assert "zocrates-nb sync --zotero-dir ~/Zotero" in texts
    assert any(c.is_synopsis for c in all_commands(REPO))
