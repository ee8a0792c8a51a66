"""CLI commands that maintain the search index: ``index rebuild`` and ``index model show|set|reset|reembed``.

``index model`` chooses the embedding model: the offline MiniLM default, or any OpenAI-compatible
``/v1/embeddings`` endpoint (OpenAI, Ollama, vLLM, LM Studio). ``set`` probes the endpoint once for
the dimension, saves ``config["embedding"]`` and re-embeds the index with progress; a stopped
re-embed continues where it stopped (``index model reembed``). The API key comes from the
environment variable named by ``--api-key-env`` (or secrets.json) and is never printed.
"""

from __future__ import annotations

import argparse
import json
import sys

from zocrates_nb.cli.common import EXIT_OK, config_store, paths_from_args, print_json
from zocrates_nb.cli.common import open_workbench as _workbench
from zocrates_nb.errors import ValidationError


def cmd_index_rebuild(args: argparse.Namespace) -> int:
    wb = _workbench(args, auto_sync=False)
    try:
        stats = wb.rebuild_index()
        print(json.dumps(stats, default=str) if args.json else f"rebuilt the index from the corpus: {stats}")
        return EXIT_OK
    finally:
        wb.close()


def cmd_model_show(args: argparse.Namespace) -> int:
    from zocrates_nb.workbench.embedding import model_summary

    summary = model_summary(config_store(args).read())
    if args.json:
        print_json(summary)
    else:
        where = f" at {summary['base_url']}" if summary["base_url"] else ""
        print(f"embedding model: {summary['model']} ({summary['dim']}-d) · {summary['backend']}{where}")
    return EXIT_OK


def _progress(args: argparse.Namespace):
    if args.json:
        return None

    def report(done: int, total: int) -> None:
        print(f"re-embedding: {done:,} / {total:,} chunks", file=sys.stderr, flush=True)

    return report


def _reembed(args: argparse.Namespace) -> int:
    from zocrates_nb.workbench.embedding import reembed

    wb = _workbench(args, auto_sync=False)
    try:
        result = reembed(wb, _progress(args))
    finally:
        wb.close()
    if args.json:
        print_json(result)
    else:
        print(
            f"the index now holds {result['model']} vectors ({result['dim']}-d): "
            f"{result['embedded']:,} chunks embedded now, {result['kept']:,} kept from before"
        )
    return EXIT_OK


def cmd_model_set(args: argparse.Namespace) -> int:
    from zocrates_nb.workbench.embedding import probe_dimension

    store = config_store(args)
    current = store.read().get("embedding") or {}
    section = {**current, "base_url": args.base_url, "model": args.model}
    for name in ("api_key_env", "batch_size", "timeout_s", "max_retries"):
        if getattr(args, name) is not None:
            section[name] = getattr(args, name)
    dim = probe_dimension(paths_from_args(args), section)  # proves the URL, key and model work
    if args.dim is not None and args.dim != dim:
        raise ValidationError(
            f"{args.model} at {args.base_url} returns {dim}-d vectors, not {args.dim}.",
            hint="Leave out --dim (it is probed), or choose the model that has that dimension.",
        )
    store.update({"embedding": {**section, "dim": dim}})
    print(f"embedding model set to {args.model} ({dim}-d) in {store.path}.", file=sys.stderr)
    return _reembed(args)


def cmd_model_reset(args: argparse.Namespace) -> int:
    from zocrates_nb.settings.config import DEFAULT_CONFIG

    store = config_store(args)
    store.update(lambda config: {**config, "embedding": dict(DEFAULT_CONFIG["embedding"])})
    print(f"embedding model reset to the offline default in {store.path}.", file=sys.stderr)
    return _reembed(args)


def _add_model_parser(actions, common) -> None:
    p = actions.add_parser("model", parents=[common], help="show or change the embedding model (re-embeds)")
    model = p.add_subparsers(dest="model_action", metavar="{show,set,reset,reembed}", required=True)
    show = model.add_parser("show", parents=[common], help="the embedding model, its dimension and endpoint")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_model_show)
    set_ = model.add_parser("set", parents=[common], help="embed through an OpenAI-compatible /v1/embeddings")
    set_.add_argument("--base-url", metavar="URL", required=True, help="e.g. https://api.openai.com/v1")
    set_.add_argument("--model", metavar="NAME", required=True, help="e.g. text-embedding-3-small")
    set_.add_argument("--dim", type=int, metavar="N", help="expected dimension (checked against the probe)")
    set_.add_argument("--api-key-env", metavar="NAME", help="environment variable holding the API key")
    set_.add_argument("--batch-size", type=int, metavar="N", help="texts per request (default 64)")
    set_.add_argument("--timeout-s", type=float, metavar="S", help="request timeout in seconds")
    set_.add_argument("--max-retries", type=int, metavar="N", help="retries on 429, 5xx and timeouts")
    set_.add_argument("--json", action="store_true")
    set_.set_defaults(func=cmd_model_set)
    reset = model.add_parser("reset", parents=[common], help="back to the offline MiniLM model (re-embeds)")
    reset.add_argument("--json", action="store_true")
    reset.set_defaults(func=cmd_model_reset)
    again = model.add_parser("reembed", parents=[common], help="embed what a stopped re-embed left (resumable)")
    again.add_argument("--json", action="store_true")
    again.set_defaults(func=_reembed)


def _add_index_parser(sub, common) -> None:
    p = sub.add_parser("index", parents=[common], help="maintain the search index")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = actions.add_parser(
        "rebuild", parents=[common], help="re-create FTS and vectors from the corpus (no Zotero needed)"
    )
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_index_rebuild)
    _add_model_parser(actions, common)


INDEX_COMMANDS = [_add_index_parser]
