"""Every hint that names a command names one that exists (issue 10: "every error message that
suggests a fix names a command that actually fixes it")."""

from __future__ import annotations

import argparse
import functools
import re
from pathlib import Path

from zocrates_nb.cli import build_parser

PACKAGE = Path(__file__).resolve().parents[1] / "zocrates_nb"
COMMAND_RE = re.compile(r"`zocrates-nb ([^`]*)`")


@functools.lru_cache(maxsize=1)
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _check(command: str) -> str | None:
    """None when ``zocrates-nb <command>`` names an existing (sub)command and options; else why not."""
    tokens = command.split("|")[0].replace("[", " ").replace("]", " ").split()
    parser = _parser()
    path = []
    while tokens and _subparsers(parser):
        name = tokens.pop(0)
        if name.startswith("-"):
            if name not in parser._option_string_actions:
                return f"unknown option {name} before {' '.join(path) or 'the command'}"
            continue
        choices = _subparsers(parser)
        if name not in choices:
            return f"no command {' '.join(path + [name])!r}"
        parser = choices[name]
        path.append(name)
    for token in tokens:
        option = token.split("=")[0]
        if option.startswith("--") and option not in parser._option_string_actions:
            return f"{' '.join(path)} has no option {option}"
    return None


def test_every_hinted_command_exists():
    found = []
    for source in sorted(PACKAGE.rglob("*.py")):
        for match in COMMAND_RE.finditer(source.read_text(encoding="utf-8")):
            found.append((source.relative_to(PACKAGE.parent), match.group(1)))
    assert len(found) > 20, "the walk found too few hints: the pattern is broken"
    problems = [f"{where}: `zocrates-nb {cmd}`: {why}" for where, cmd in found if (why := _check(cmd))]
    assert not problems, "\n".join(problems)


def test_the_checker_rejects_made_up_commands():
    assert _check("index rebuild --json") is None
    assert _check("sync --verify") is None and _check("doctor --repair") is None
    assert _check("index repair") and _check("sync --frobnicate") and _check("rebuild")
