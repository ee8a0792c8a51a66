"""``zocrates-nb``: the command line.

Layout (so that more commands slot in cleanly): one ``cmd_<name>(args) -> int``
function per command, one ``_add_<name>_parser(sub, common)`` that declares its
arguments, and ``build_parser()`` that calls them. Every (sub)command accepts the
global options (``--data-dir``, ``--zotero-data-dir``) before OR after the command
name: they are declared on the top-level parser and, through a parent parser, on
every subparser with ``default=SUPPRESS`` so that a value given after the command
wins and one given before is not overwritten.

Exit codes: 0 success; 2 a refused value or bad usage (the file is left as it
was); 1 any other ``ZocratesError`` (message and hint on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from zocrates_nb.errors import ValidationError, ZocratesError
from zocrates_nb.paths import DataPaths

EXIT_OK, EXIT_ERROR, EXIT_REFUSED = 0, 1, 2


# ----------------------------------------------------------------------------- shared helpers

def paths_from_args(args: argparse.Namespace) -> DataPaths:
    """The data directory chosen by ``--data-dir`` / ``--zotero-data-dir`` / the environment."""
    return DataPaths.resolve(getattr(args, "data_dir", None), getattr(args, "zotero_data_dir", None))


def config_store(args: argparse.Namespace):
    from zocrates_nb.config import ConfigStore

    return ConfigStore.for_paths(paths_from_args(args))


def _print_json(payload: object) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False))


# ----------------------------------------------------------------------------- status

def cmd_status(args: argparse.Namespace) -> int:
    from zocrates_nb.status import collect_status, format_status

    status = collect_status(paths_from_args(args))
    if args.json:
        _print_json(status)
    else:
        print(format_status(status))
    return EXIT_ERROR if "config_error" in status else EXIT_OK


def _add_status_parser(sub, common) -> None:
    p = sub.add_parser("status", parents=[common], help="show the data directory, library, corpus, profile and LLM")
    p.add_argument("--json", action="store_true", help="print JSON (the same document as GET /zocrates/status)")
    p.set_defaults(func=cmd_status)


# ----------------------------------------------------------------------------- profile

def cmd_profile_show(args: argparse.Namespace) -> int:
    from zocrates_nb.profile import format_user_research_profile_context, profile_token_report

    store = config_store(args)
    config = store.read()
    text = config["user_research_profile"]
    report = profile_token_report(text, config["max_research_profile_chars"])
    if args.json:
        _print_json({"user_research_profile": text, **report})
        return EXIT_OK
    if not text.strip():
        print("No research profile set. Set one with `zocrates-nb profile set --text '...'` "
              "or `--file profile.txt`.", file=sys.stderr)
        return EXIT_OK
    print(format_user_research_profile_context(text) if args.formatted else text)
    print(f"-- {report['chars']} / {report['limit']} characters · {report['tokens']} tokens "
          f"({report['share_of_128k']:.2%} of a 128k context)", file=sys.stderr)
    return EXIT_OK


def cmd_profile_set(args: argparse.Namespace) -> int:
    if args.file is not None:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            try:
                text = Path(args.file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ZocratesError(f"Cannot read the profile file {args.file}: {exc}",
                                    hint="Give a UTF-8 text file, or use --text.") from exc
        # editors end files with a newline; it is not part of the profile (nor of its 1,000 characters)
        text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    else:
        text = args.text
    store = config_store(args)
    store.set_profile(text)
    print(f"Research profile saved ({len(text)} / {store.profile_limit()} characters) in {store.path}.")
    return EXIT_OK


def cmd_profile_clear(args: argparse.Namespace) -> int:
    store = config_store(args)
    store.clear_profile()
    print(f"Research profile cleared in {store.path}.")
    return EXIT_OK


def _add_profile_parser(sub, common) -> None:
    p = sub.add_parser("profile", parents=[common], help="show, set or clear the User Research Profile")
    actions = p.add_subparsers(dest="profile_action", metavar="{show,set,clear}", required=True)
    show = actions.add_parser("show", parents=[common], help="print the profile and its size in tokens")
    show.add_argument("--formatted", action="store_true", help="print the section exactly as sent to the model")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_profile_show)
    set_ = actions.add_parser("set", parents=[common], help="replace the profile")
    source = set_.add_mutually_exclusive_group(required=True)
    source.add_argument("--file", metavar="F", help="read the profile from a UTF-8 file ('-' for stdin)")
    source.add_argument("--text", metavar="T", help="the profile text")
    set_.set_defaults(func=cmd_profile_set)
    clear = actions.add_parser("clear", parents=[common], help="remove the profile")
    clear.set_defaults(func=cmd_profile_clear)


# ----------------------------------------------------------------------------- llm

def cmd_llm_show(args: argparse.Namespace) -> int:
    from zocrates_nb.status import collect_status

    status = collect_status(paths_from_args(args))
    llm = dict(status["llm"])
    llm.update({k: v for k, v in config_store(args).read()["llm"].items() if k in ("prices", "timeout_s", "max_retries")})
    if args.json:
        _print_json(llm)
        return EXIT_OK
    for name in ("configured", "base_url", "model", "models", "api_key_env", "api_key_set", "api_key_source",
                 "timeout_s", "max_retries", "prices"):
        print(f"{name:15}: {llm.get(name)}")
    return EXIT_OK


def cmd_llm_set(args: argparse.Namespace) -> int:
    from zocrates_nb.credentials import store_api_key

    store = config_store(args)
    if args.role and args.model is None:
        raise ValidationError("--role needs --model: the model to use for that role.",
                              hint="e.g. `zocrates-nb llm set --role coordinator --model gpt-4o-mini`.")
    fields: dict = {}
    if args.base_url is not None:
        fields["base_url"] = args.base_url or None
    if args.model is not None and args.role:
        models = dict(store.llm().models)
        if args.model:
            models[args.role] = args.model
        else:
            models.pop(args.role, None)
        fields["models"] = models
    elif args.model is not None:
        fields["model"] = args.model or None
    if args.api_key_env is not None:
        fields["api_key_env"] = args.api_key_env
    if args.timeout_s is not None:
        fields["timeout_s"] = args.timeout_s
    if args.max_retries is not None:
        fields["max_retries"] = args.max_retries
    key = None
    if args.api_key_stdin:
        key = sys.stdin.readline().strip()
        if not key:
            raise ValidationError("No API key on stdin.", hint="Pipe the key in: `... --api-key-stdin < keyfile`.")
    if not fields and key is None:
        raise ValidationError("Nothing to set.", hint="Give --base-url, --model [--role], --api-key-env, "
                                                      "--timeout-s, --max-retries or --api-key-stdin.")
    if fields:
        store.set_llm(**fields)
        print(f"LLM settings saved in {store.path}.")
    if key is not None:
        store_api_key(paths_from_args(args), key)
        print(f"API key stored in {paths_from_args(args).secrets} (mode 0600).")
    return EXIT_OK


def cmd_llm_clear(args: argparse.Namespace) -> int:
    store = config_store(args)
    store.clear_llm()
    print(f"LLM settings reset in {store.path} (no LLM configured; secrets.json, if any, is kept).")
    return EXIT_OK


def _add_llm_parser(sub, common) -> None:
    p = sub.add_parser("llm", parents=[common], help="show, set or clear the LLM endpoint and models")
    actions = p.add_subparsers(dest="llm_action", metavar="{show,set,clear}", required=True)
    show = actions.add_parser("show", parents=[common], help="print the LLM settings (never the key)")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_llm_show)
    set_ = actions.add_parser("set", parents=[common], help="change LLM settings")
    set_.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint, e.g. https://api.openai.com/v1"
                                                        " ('' to unset)")
    set_.add_argument("--model", metavar="NAME", help="default model for every role (with --role: for that role)")
    set_.add_argument("--role", metavar="ROLE", help="agent role the --model applies to (e.g. coordinator)")
    set_.add_argument("--api-key-env", metavar="NAME", help="environment variable holding the API key")
    set_.add_argument("--timeout-s", type=float, metavar="S", help="request timeout in seconds")
    set_.add_argument("--max-retries", type=int, metavar="N", help="retries on transient errors")
    set_.add_argument("--api-key-stdin", action="store_true",
                      help="read an API key from stdin into secrets.json (mode 0600); never pass keys as arguments")
    set_.set_defaults(func=cmd_llm_set)
    clear = actions.add_parser("clear", parents=[common], help="remove the LLM settings (no LLM configured)")
    clear.set_defaults(func=cmd_llm_clear)


# ----------------------------------------------------------------------------- config

def cmd_config_show(args: argparse.Namespace) -> int:
    _print_json(config_store(args).read())
    return EXIT_OK


def cmd_config_path(args: argparse.Namespace) -> int:
    print(config_store(args).path)
    return EXIT_OK


def cmd_config_reset(args: argparse.Namespace) -> int:
    store = config_store(args)
    store.reset()
    print(f"{store.path} reset to the defaults (a damaged file, if any, was kept as "
          f"{store.path.name}.corrupt-<timestamp>).")
    return EXIT_OK


def _add_config_parser(sub, common) -> None:
    p = sub.add_parser("config", parents=[common], help="the whole zocrates_config.json")
    actions = p.add_subparsers(dest="config_action", metavar="{show,path,reset}", required=True)
    for name, func, text in (("show", cmd_config_show, "print the config (defaults filled in)"),
                             ("path", cmd_config_path, "print the config file's path"),
                             ("reset", cmd_config_reset, "write the defaults (recovery from a damaged file)")):
        actions.add_parser(name, parents=[common], help=text).set_defaults(func=func)


# ----------------------------------------------------------------------------- parser

def _add_global_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--data-dir", metavar="DIR", default=default,
                        help="data directory (default: ZOTERO_DATA_DIR/zocrates-data, ZOCRATES_HOME, "
                             "or the per-user data directory)")
    parser.add_argument("--zotero-data-dir", metavar="DIR", default=default,
                        help="Zotero data directory; the data directory becomes DIR/zocrates-data")


def _common_parser() -> argparse.ArgumentParser:
    """Global options repeated on every subparser; SUPPRESS keeps a value given before the command.

    (The top-level parser declares its own copies with default None: parent parsers share
    their action objects, so changing a default there would change it everywhere.)
    """
    common = argparse.ArgumentParser(add_help=False)
    _add_global_options(common, argparse.SUPPRESS)
    return common


#: Parser builders in help order; each calls sub.add_parser(..., parents=[common]) and set_defaults(func=cmd_...).
#: Library commands (sync, search, ask, convert, eval, index, demo) live in cli_library.py.
COMMANDS: list[Callable] = [_add_status_parser, _add_profile_parser, _add_llm_parser, _add_config_parser]


def build_parser() -> argparse.ArgumentParser:
    from zocrates_nb import __version__

    common = _common_parser()
    parser = argparse.ArgumentParser(prog="zocrates-nb",
                                     description="A notebook-first research workbench over your Zotero library.")
    _add_global_options(parser, None)
    parser.add_argument("--version", action="version", version=f"zocrates-nb {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from zocrates_nb.cli_doctor import add_parser as add_doctor_parser
    from zocrates_nb import cli_engine
    from zocrates_nb.cli_library import LIBRARY_COMMANDS
    from zocrates_nb.cli_retrieval import RETRIEVAL_COMMANDS

    for add in [*LIBRARY_COMMANDS, *RETRIEVAL_COMMANDS, cli_engine.add_parser, *COMMANDS, add_doctor_parser]:
        add(sub, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (``python -m zocrates_nb`` and the console script)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ValidationError as exc:
        print(f"zocrates-nb: refused: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return EXIT_REFUSED
    except ZocratesError as exc:
        print(f"zocrates-nb: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  hint: {exc.hint}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("zocrates-nb: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:                   # `zocrates-nb search … --json | head`: stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
