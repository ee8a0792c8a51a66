"""Find every ``zocrates-nb …`` command line in README.md and docs/*.md (used by test_doc_commands.py).

Two kinds of command lines appear in the docs:

* **commands** ("run this"): lines of fenced shell blocks and inline code spans that start
  with ``zocrates-nb``; the test runs them (after placeholder substitution);
* **synopses** ("this is the syntax"): command lines with ``[optional]`` parts, ``a | b``
  alternatives or ``…``; the test checks that their command words exist in the parser.

Pure functions over text, so the extraction itself is testable and fast.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

PROGRAM = "zocrates-nb"
_FENCE_RE = re.compile(r"^\s*(```|~~~)\s*([\w+-]*)")
_SHELL_LANGS = {"", "bash", "sh", "shell", "console", "zsh", "text"}
_INLINE_RE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_BARE_WORD_RE = re.compile(r"[a-z][a-z-]*")
_SYNOPSIS_RE = re.compile(r"\[|\]|\\\||\s\|\s|…|\.\.\.|\|")


@dataclass(frozen=True)
class DocCommand:
    """One command line as written in a doc, with where it was found."""

    file: str
    line: int
    text: str
    block: int | None  # fenced block number (commands of one block share a data dir), None = inline

    @property
    def is_synopsis(self) -> bool:
        return bool(_SYNOPSIS_RE.search(self.text))

    @property
    def is_mention(self) -> bool:
        """A command named inline in prose, without its arguments (`zocrates-nb profile set`)."""
        return self.block is None and all(_BARE_WORD_RE.fullmatch(w) for w in self.text.split()[1:])

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _strip_prompt(line: str) -> str | None:
    """The command if ``line`` runs zocrates-nb (``$ `` prompts and ``.venv/bin/`` prefixes allowed)."""
    text = line.strip()
    if text.startswith("$ "):
        text = text[2:].lstrip()
    match = re.match(r"^(?:\S*/)?" + re.escape(PROGRAM) + r"(\s|$)", text)
    if not match:
        return None
    return PROGRAM + text[match.end() - len(match.group(1)) :]


def strip_comment(command: str) -> str:
    """``cmd --x  # why`` → ``cmd --x`` (a ``#`` inside quotes, or inside a word, is kept)."""
    quote = None
    for index, char in enumerate(command):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or command[index - 1].isspace()):
            return command[:index].strip()
    return command.strip()


def extract_commands(text: str, file: str) -> list[DocCommand]:
    """Every zocrates-nb command line in one Markdown text, in order."""
    commands: list[DocCommand] = []
    fence, lang, block_no = None, "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE_RE.match(line)
        if opened and fence is None:
            fence, lang, block_no = opened.group(1), opened.group(2).lower(), block_no + 1
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
                continue
            if lang in _SHELL_LANGS:
                command = _strip_prompt(line)
                if command:
                    commands.append(DocCommand(file, number, strip_comment(command), block_no))
            continue
        for span in _INLINE_RE.findall(line):
            command = _strip_prompt(span)
            if command and command.strip() != PROGRAM:
                commands.append(DocCommand(file, number, command.strip(), None))
    return commands


def doc_files(repo: Path) -> list[Path]:
    """README.md and every docs/*.md (docs other engineers add are picked up automatically)."""
    return [repo / "README.md", *sorted((repo / "docs").glob("*.md"))]


def all_commands(repo: Path) -> list[DocCommand]:
    found: list[DocCommand] = []
    for path in doc_files(repo):
        if path.is_file():
            found += extract_commands(path.read_text(encoding="utf-8"), str(path.relative_to(repo)))
    return found
