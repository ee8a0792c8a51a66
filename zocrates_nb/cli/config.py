"""CLI commands about the data directory's settings: status, profile, llm, config."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zocrates_nb.cli.common import EXIT_ERROR, EXIT_OK, config_store, paths_from_args, print_json
from zocrates_nb.errors import ValidationError, ZocratesError

if TYPE_CHECKING:
    from zocrates_nb.settings.config import ConfigStore


# ----------------------------------------------------------------------------- status


def cmd_status(args: argparse.Namespace) -> int:
    from zocrates_nb.health.status import collect_status, format_status

    status = collect_status(paths_from_args(args))
    if args.json:
        print_json(status)
    else:
        print(format_status(status))
    return EXIT_ERROR if "config_error" in status else EXIT_OK


def _add_status_parser(sub, common) -> None:
    p = sub.add_parser("status", parents=[common], help="show the data directory, library, corpus, profile and LLM")
    p.add_argument("--json", action="store_true", help="print JSON (the same document as GET /zocrates/status)")
    p.set_defaults(func=cmd_status)


# ----------------------------------------------------------------------------- profile


def cmd_profile_show(args: argparse.Namespace) -> int:
    from zocrates_nb.settings.profile import format_user_research_profile_context, profile_token_report

    store = config_store(args)
    config = store.read()
    text = config["user_research_profile"]
    report = profile_token_report(text, config["max_research_profile_chars"])
    if args.json:
        print_json({"user_research_profile": text, **report})
        return EXIT_OK
    if not text.strip():
        print(
            "No research profile set. Set one with `zocrates-nb profile set --text '...'` or `--file profile.txt`.",
            file=sys.stderr,
        )
        return EXIT_OK
    print(format_user_research_profile_context(text) if args.formatted else text)
    print(
        f"-- {report['chars']} / {report['limit']} characters · {report['tokens']} tokens "
        f"({report['share_of_128k']:.2%} of a 128k context)",
        file=sys.stderr,
    )
    return EXIT_OK


def cmd_profile_set(args: argparse.Namespace) -> int:
    if args.file is not None:
        if args.file == "-":
            text = sys.stdin.read()
        else:
            try:
                text = Path(args.file).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ZocratesError(
                    f"Cannot read the profile file {args.file}: {exc}", hint="Give a UTF-8 text file, or use --text."
                ) from exc
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
    from zocrates_nb.health.status import collect_status

    status = collect_status(paths_from_args(args))
    llm = dict(status["llm"])
    llm.update(
        {k: v for k, v in config_store(args).read()["llm"].items() if k in ("prices", "timeout_s", "max_retries")}
    )
    if args.json:
        print_json(llm)
        return EXIT_OK
    for name in (
        "configured",
        "base_url",
        "model",
        "models",
        "api_key_env",
        "api_key_set",
        "api_key_source",
        "timeout_s",
        "max_retries",
        "prices",
    ):
        print(f"{name:15}: {llm.get(name)}")
    return EXIT_OK


def _llm_fields(args: argparse.Namespace, store: ConfigStore) -> dict[str, Any]:
    """The LLM settings ``llm set`` was given (``''`` unsets the base URL or a model)."""
    fields: dict[str, Any] = {}
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
    for name in ("api_key_env", "timeout_s", "max_retries"):
        if getattr(args, name) is not None:
            fields[name] = getattr(args, name)
    return fields


def _key_from_stdin(args: argparse.Namespace) -> str | None:
    """The API key piped in with ``--api-key-stdin`` (refused when empty); None without the flag."""
    if not args.api_key_stdin:
        return None
    key = sys.stdin.readline().strip()
    if not key:
        raise ValidationError("No API key on stdin.", hint="Pipe the key in: `... --api-key-stdin < keyfile`.")
    return key


def cmd_llm_set(args: argparse.Namespace) -> int:
    from zocrates_nb.settings.credentials import store_api_key

    store = config_store(args)
    if args.role and args.model is None:
        raise ValidationError(
            "--role needs --model: the model to use for that role.",
            hint="e.g. `zocrates-nb llm set --role coordinator --model gpt-4o-mini`.",
        )
    fields = _llm_fields(args, store)
    key = _key_from_stdin(args)
    if not fields and key is None:
        raise ValidationError(
            "Nothing to set.",
            hint="Give --base-url, --model [--role], --api-key-env, --timeout-s, --max-retries or --api-key-stdin.",
        )
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
    set_.add_argument(
        "--base-url", metavar="URL", help="OpenAI-compatible endpoint, e.g. https://api.openai.com/v1 ('' to unset)"
    )
    set_.add_argument("--model", metavar="NAME", help="default model for every role (with --role: for that role)")
    set_.add_argument("--role", metavar="ROLE", help="agent role the --model applies to (e.g. coordinator)")
    set_.add_argument("--api-key-env", metavar="NAME", help="environment variable holding the API key")
    set_.add_argument("--timeout-s", type=float, metavar="S", help="request timeout in seconds")
    set_.add_argument("--max-retries", type=int, metavar="N", help="retries on transient errors")
    set_.add_argument(
        "--api-key-stdin",
        action="store_true",
        help="read an API key from stdin into secrets.json (mode 0600); never pass keys as arguments",
    )
    set_.set_defaults(func=cmd_llm_set)
    clear = actions.add_parser("clear", parents=[common], help="remove the LLM settings (no LLM configured)")
    clear.set_defaults(func=cmd_llm_clear)


# ----------------------------------------------------------------------------- config


def cmd_config_show(args: argparse.Namespace) -> int:
    print_json(config_store(args).read())
    return EXIT_OK


def cmd_config_path(args: argparse.Namespace) -> int:
    print(config_store(args).path)
    return EXIT_OK


def cmd_config_reset(args: argparse.Namespace) -> int:
    store = config_store(args)
    store.reset()
    print(
        f"{store.path} reset to the defaults (a damaged file, if any, was kept as "
        f"{store.path.name}.corrupt-<timestamp>)."
    )
    return EXIT_OK


def _add_config_parser(sub, common) -> None:
    p = sub.add_parser("config", parents=[common], help="the whole zocrates_config.json")
    actions = p.add_subparsers(dest="config_action", metavar="{show,path,reset}", required=True)
    for name, func, text in (
        ("show", cmd_config_show, "print the config (defaults filled in)"),
        ("path", cmd_config_path, "print the config file's path"),
        ("reset", cmd_config_reset, "write the defaults (recovery from a damaged file)"),
    ):
        actions.add_parser(name, parents=[common], help=text).set_defaults(func=func)


CONFIG_COMMANDS = [_add_status_parser, _add_profile_parser, _add_llm_parser, _add_config_parser]
