"""The one config schema: validation, the CLI, ``open_source`` and the docs agree (issue 9 §2, issue 10 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakes.zotero_sqlite import ZoteroDB
from zocrates_nb.cli import build_parser, main
from zocrates_nb.errors import ConfigError, ValidationError
from zocrates_nb.settings.config import DEFAULT_CONFIG, ConfigStore, validate_config
from zocrates_nb.settings.schema import LIBRARY_SOURCES, SCHEMA, SOURCE_ALIASES, schema_markdown

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path) -> ConfigStore:
    return ConfigStore(tmp_path / "zocrates_config.json")


@pytest.fixture
def zotero_dir(tmp_path) -> Path:
    folder = tmp_path / "Zotero"
    folder.mkdir()
    with ZoteroDB(folder / "zotero.sqlite", "9") as db:
        db.add_paper(
            "PAPER333",
            "Spatially resolved transcriptomics",
            creators=[("Ana", "Lee", "author")],
            date="2020-01-01 2020-01-01",
        )
        db.add_note("NOTE3333", "<p>Spot deconvolution works best with a matched reference.</p>", parent="PAPER333")
    return folder


# ----------------------------------------------------------------------------- one declaration


def test_every_source_the_schema_declares_is_opened_by_open_source():
    from zocrates_nb import library

    assert library.SOURCES == LIBRARY_SOURCES
    assert set(SOURCE_ALIASES.values()) <= set(LIBRARY_SOURCES)
    for source in LIBRARY_SOURCES:
        validate_config({"library": {"source": source}})  # every declared source validates


def test_library_use_choices_come_from_the_schema():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    library = sub.choices["library"]
    use = next(a for a in library._actions if a.dest == "action").choices["use"]
    source = next(a for a in use._actions if a.dest == "source")
    assert tuple(source.choices) == tuple(SOURCE_ALIASES)


def test_defaults_come_from_the_schema_and_validate():
    for section, settings in SCHEMA.items():
        assert set(DEFAULT_CONFIG[section]) == {s.name for s in settings}
    validate_config(DEFAULT_CONFIG)


def test_docs_carry_the_generated_settings_table():
    doc = (REPO / "docs" / "zotero.md").read_text(encoding="utf-8")
    assert schema_markdown() in doc, (
        "docs/zotero.md's settings table differs from config_schema.schema_markdown(); paste its output "
        "into the docs (python -c 'from zocrates_nb.settings.schema import schema_markdown as s; print(s())')"
    )


_RANGED = [(section, s) for section, settings in SCHEMA.items() for s in settings if s.low is not None]


@pytest.mark.parametrize(("section", "setting"), _RANGED, ids=[f"{sec}.{s.name}" for sec, s in _RANGED])
def test_the_docs_range_of_every_setting_is_what_the_validator_accepts(section, setting):
    """The "allowed" cell is read back literally: ``a..b`` admits a and b; ``> a and ≤ b`` refuses a."""
    from zocrates_nb.settings.schema import _allowed_text, check_setting

    cell = _allowed_text(setting)
    row = next(line for line in schema_markdown().splitlines() if f"`{section}.{setting.name}`" in line)
    assert row.endswith(f"| {cell} |")

    def accepted(value) -> bool:
        try:
            check_setting(section, setting, value)
        except ValidationError:
            return False
        return True

    if cell.startswith("> "):
        low, high = (float(part) for part in cell[2:].split(" and ≤ "))
        assert not accepted(low) and accepted(low + 0.5) and accepted(high) and not accepted(high + 1)
    else:
        low, high = (int(part) for part in cell.split(".."))
        assert accepted(low) and accepted(high) and not accepted(low - 1) and not accepted(high + 1)


def test_llm_timeout_docs_do_not_promise_zero():
    row = next(line for line in schema_markdown().splitlines() if "`llm.timeout_s`" in line)
    assert "0..3600" not in row and "> 0" in row


@pytest.mark.parametrize("section", ["library", "vectors", "writer"])
def test_unknown_keys_are_refused_in_every_section(store, section):
    with pytest.raises(ValidationError, match=f"Unknown {section} field"):
        store.update({section: {"sorce": "x"}})


# ----------------------------------------------------------------------------- --zotero-dir, library use dir


def test_sync_zotero_dir_works_and_is_remembered(capsys, tmp_path, zotero_dir):
    data = tmp_path / "data"
    code = main(["sync", "--zotero-dir", str(zotero_dir), "--json", "--data-dir", str(data)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["counts"]["new"] == 2
    assert ConfigStore(data / "zocrates_config.json").read()["library"]["source"] == "zotero-dir"


def test_library_use_dir_then_sync(capsys, tmp_path, zotero_dir):
    data = tmp_path / "data"
    assert main(["library", "use", "dir", str(zotero_dir), "--data-dir", str(data)]) == 0
    capsys.readouterr()
    assert main(["sync", "--json", "--data-dir", str(data)]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["counts"]["new"] == 2


# ----------------------------------------------------------------------------- issue 10 item 4: LLM settings


@pytest.mark.parametrize(
    ("patch", "match"),
    [
        ({"llm": {"timeout_s": float("nan")}}, "timeout_s"),
        ({"llm": {"timeout_s": float("inf")}}, "timeout_s"),
        ({"llm": {"timeout_s": -float("inf")}}, "timeout_s"),
        ({"llm": {"base_url": "http://"}}, "no host"),
        ({"llm": {"base_url": "https://"}}, "no host"),
        ({"llm": {"base_url": "http://host/v1\nX-Injected: 1"}}, "control character"),
        ({"llm": {"base_url": "http://ho st/v1"}}, "control character"),
        ({"llm": {"base_url": "http://host:99999/v1"}}, "not a valid URL"),
        ({"llm": {"base_url": "javascript:alert(1)"}}, "http"),
        ({"llm": {"base_url": "http://user:sk-secret-value@host/v1"}}, "password"),
        ({"llm": {"base_url": "http://sk-secret-value@host/v1"}}, "password"),
        ({"llm": {"base_url": "https://example.org/" + "a" * 3000}}, "limit"),
        ({"llm": {"model": "m" * 10_000_000}}, "limit"),
        ({"llm": {"model": "\ud800"}}, "invalid character"),
        ({"llm": {"models": {"coordinator": "m" * 1000}}}, "limit"),
        ({"llm": {"api_key_env": "A" * 500}}, "NAME of an environment variable"),
        ({"llm": {"prices": {"m": {"prompt": float("nan")}}}}, "prices"),
        ({"library": {"sqlite_path": "p" * 5000}}, "limit"),
        ({"library": {"library_id": "12; rm"}}, "numeric"),
        ({"vectors": {"host": "h" * 1000}}, "limit"),
        ({"writer": {"kind": "fax"}}, "writer.kind"),
    ],
)
def test_bad_settings_are_refused_and_the_file_untouched(store, patch, match):
    store.set_profile("keep me")
    before = store.path.read_bytes()
    with pytest.raises(ValidationError, match=match) as err:
        store.update(patch)
    assert err.value.hint
    assert "sk-secret-value" not in str(err.value) and "sk-secret-value" not in err.value.hint
    assert store.path.read_bytes() == before


def test_good_urls_are_accepted(store):
    for url in (
        "https://api.openai.com/v1",
        "http://localhost:11434/v1",
        "http://127.0.0.1:8080",
        "http://[::1]:8000/v1",
    ):
        store.update({"llm": {"base_url": url}})
        assert store.llm().base_url == url


def test_a_file_with_nan_or_infinity_is_damaged_not_loaded(store):
    store.path.write_text('{"llm": {"timeout_s": NaN}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="damaged"):
        store.read()
    store.path.write_text('{"llm": {"timeout_s": Infinity}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="damaged"):
        store.read()


def test_non_finite_numbers_are_never_written(store):
    with pytest.raises(ValidationError):
        store.update({"extra_top_level": float("inf")})  # unknown top-level keys are kept, but must be JSON
    assert not store.path.exists()


def test_cli_llm_set_refuses_nan_timeout_with_exit_2(capsys, tmp_path):
    code = main(["llm", "set", "--timeout-s", "nan", "--data-dir", str(tmp_path / "d")])
    _, err = capsys.readouterr()
    assert code == 2 and "timeout_s" in err and "Traceback" not in err
