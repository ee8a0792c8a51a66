"""Every hint that names a command names one that exists (issue 10: "every error message that
suggests a fix names a command that actually fixes it")."""

from __future__ import annotations

import argparse
import ast
import functools
import re
from pathlib import Path

from zocrates_nb.cli import build_parser

PACKAGE = Path(__file__).resolve().parents[2] / "zocrates_nb"
COMMAND_RE = re.compile(r"`zocrates-nb ([^`]*)`")
#: a command named in running text, backticks or not: up to a backtick, ")", ";", a newline or a sentence end
PLAIN_COMMAND_RE = re.compile(r"zocrates-nb ([a-z][^`\n);]*)")
SENTENCE_END = re.compile(r"\.(?:\s|$)")


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


def hints_in_source(text: str) -> list[tuple[int, str]]:
    """(line, command) for every ``zocrates-nb <command> ...`` inside a string literal of ``text``.

    Walks the AST's string constants (docstrings, messages, hints, the constant parts of
    f-strings), so a hint written without backticks — ``"zocrates-nb llm set --timeout-s N"`` — is
    checked as well as one in backticks.
    """
    found = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in PLAIN_COMMAND_RE.finditer(node.value):
                found.append((node.lineno, SENTENCE_END.split(match.group(1))[0].strip()))
    return found


def test_every_command_named_in_a_string_literal_exists():
    found = []
    for source in sorted(PACKAGE.rglob("*.py")):
        for line, command in hints_in_source(source.read_text(encoding="utf-8")):
            found.append((f"{source.relative_to(PACKAGE.parent)}:{line}", command))
    commands = {command for _, command in found}
    assert len(found) > 60 and "llm set --timeout-s N" in commands, "the walk found too few hints: it is broken"
    assert "sync --zotero-dir" in commands, "the constant part of an f-string was not walked"
    problems = [
        f"{where}: `zocrates-nb {cmd}`: {why} (name a command and options the CLI has, or rephrase)"
        for where, cmd in found
        if (why := _check(cmd))
    ]
    assert not problems, "\n".join(problems)


def test_the_string_walker_finds_unquoted_hints_in_f_strings_and_rejects_made_up_ones():
    source = 'def f(n):\n    raise E("x", f"raise it: zocrates-nb llm set --timeout {n} (seconds)")\n'
    assert hints_in_source(source) == [(2, "llm set --timeout")]
    assert _check("llm set --timeout") == "llm set has no option --timeout"
    assert hints_in_source('"""Run zocrates-nb index rebuild. Then search."""') == [(1, "index rebuild")]
    assert hints_in_source("# zocrates-nb frobnicate (a comment, not a string)") == []


def test_the_checker_rejects_made_up_commands():
    assert _check("index rebuild --json") is None
    assert _check("sync --verify") is None and _check("doctor --repair") is None
    assert _check("index repair") and _check("sync --frobnicate") and _check("rebuild")
