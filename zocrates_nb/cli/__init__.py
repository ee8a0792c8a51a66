"""``zocrates-nb``: the command line.

Layout (so that more commands slot in cleanly): one module per area — ``config`` (status, profile,
llm, config), ``library`` (sync, search, ask, convert, eval, index, library, demo), ``zotero``
(library detect/writer, outbox, ask --save), ``retrieval`` (explain), ``engine`` and ``doctor`` —
each with one ``cmd_<name>(args) -> int`` function per command and one ``_add_<name>_parser(sub,
common)`` that declares its arguments. They share only ``common`` (data directory, config store,
JSON output, exit codes); ``build_parser()`` here calls every builder.

Every (sub)command accepts the global options (``--data-dir``, ``--zotero-data-dir``) before OR
after the command name: they are declared on the top-level parser and, through a parent parser, on
every subparser with ``default=SUPPRESS`` so that a value given after the command wins and one
given before is not overwritten.

Exit codes: 0 success; 2 a refused value or bad usage (the file is left as it was); 1 any other
``ZocratesError`` (message and hint on stderr).
"""

from __future__ import annotations

import argparse
import errno
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

from zocrates_nb.cli.common import EXIT_ERROR, EXIT_OK, EXIT_REFUSED, ParserBuilder
from zocrates_nb.errors import ValidationError, ZocratesError

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_REFUSED", "build_parser", "main"]


def _add_global_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--data-dir",
        metavar="DIR",
        default=default,
        help="data directory (default: ZOTERO_DATA_DIR/zocrates-data, ZOCRATES_HOME, or the per-user data directory)",
    )
    parser.add_argument(
        "--zotero-data-dir",
        metavar="DIR",
        default=default,
        help="Zotero data directory; the data directory becomes DIR/zocrates-data",
    )


def _common_parser() -> argparse.ArgumentParser:
    """Global options repeated on every subparser; SUPPRESS keeps a value given before the command.

    (The top-level parser declares its own copies with default None: parent parsers share
    their action objects, so changing a default there would change it everywhere.)
    """
    common = argparse.ArgumentParser(add_help=False)
    _add_global_options(common, argparse.SUPPRESS)
    return common


def _commands() -> list[ParserBuilder]:
    """Parser builders in help order (each calls ``sub.add_parser(..., parents=[common])``)."""
    from zocrates_nb.cli import config, doctor, engine, index, library, retrieval, zotero

    return [
        *library.LIBRARY_COMMANDS,
        *index.INDEX_COMMANDS,
        *zotero.ZOTERO_COMMANDS,
        *library.DEMO_COMMANDS,
        *retrieval.RETRIEVAL_COMMANDS,
        engine.add_parser,
        *config.CONFIG_COMMANDS,
        doctor.add_parser,
    ]


def build_parser() -> argparse.ArgumentParser:
    """The whole ``zocrates-nb`` parser: global options, ``--version`` and every command."""
    from zocrates_nb import __version__

    common = _common_parser()
    parser = argparse.ArgumentParser(
        prog="zocrates-nb", description="A notebook-first research workbench over your Zotero library."
    )
    _add_global_options(parser, None)
    parser.add_argument("--version", action="version", version=f"zocrates-nb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in _commands():
        add(sub, common)
    return parser


def _report(kind: str, exc: ZocratesError) -> None:
    print(f"zocrates-nb: {kind}: {exc.message}", file=sys.stderr)
    if exc.hint:
        print(f"  hint: {exc.hint}", file=sys.stderr)


#: the errors a write gets from a full disk, a read-only mount or missing permission
_WRITE_ERRNOS = {errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EACCES, errno.EPERM}
_SQLITE_WRITE = ("full", "readonly", "read-only", "disk i/o error", "unable to open database file")


def _unwritable(args: argparse.Namespace, exc: BaseException) -> ZocratesError | None:
    """The one clear error for a write that a full disk or a read-only directory refused, wherever it
    happened (a lock file, a log, a store): the net under every writer, so no such failure is ever a
    traceback (issue 26). None for any other error: that one is a bug and keeps its traceback."""
    from zocrates_nb.cli.common import paths_from_args
    from zocrates_nb.storage.space import elsewhere_hint, unavailable, write_problem

    text, code = str(exc).lower(), getattr(exc, "errno", None)
    if code not in _WRITE_ERRNOS and not (isinstance(exc, sqlite3.Error) and any(w in text for w in _SQLITE_WRITE)):
        return None  # not a refused write (a missing file, a closed pipe): never blamed on the disk
    root = paths_from_args(args).root
    name = getattr(exc, "filename", None)
    if isinstance(name, str):
        target, what = Path(name), "The file"
    else:  # SQLite does not say which database: the data directory is what cannot be written
        target, what = root, "The data directory"
    problem = write_problem(target, exc)
    if problem is None:
        return None
    error = unavailable(what, target, problem, exc)
    resolved, root = target.resolve(), root.resolve()
    if resolved != root and root not in resolved.parents:  # an export folder, a log elsewhere: not the data dir
        error.hint = elsewhere_hint(problem)
    return error


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (``python -m zocrates_nb`` and the console script)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except ValidationError as exc:
        _report("refused", exc)
        return EXIT_REFUSED
    except ZocratesError as exc:
        _report("error", exc)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("zocrates-nb: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `zocrates-nb search … --json | head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (OSError, sqlite3.Error) as exc:
        if (unwritable := _unwritable(args, exc)) is None:
            raise
        _report("error", unwritable)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
