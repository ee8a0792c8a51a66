"""CLI commands for the user's own Zotero: ``library detect``, ``library writer``, ``outbox``, ``ask --save``.

Registered from ``cli_library`` with a few lines, so the hot CLI files stay small.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from zocrates_nb.errors import LibraryError, ZocratesError

EXIT_OK = 0


def _print_json(payload: object) -> None:
    print(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def _paths(args):
    from zocrates_nb.cli import paths_from_args

    return paths_from_args(args).ensure()


def _store(args):
    from zocrates_nb.cli import config_store

    return config_store(args)


# ----------------------------------------------------------------------------- library detect

def cmd_library_detect(args: argparse.Namespace) -> int:
    from zocrates_nb.library.detect import detect

    found = detect()
    if args.json:
        _print_json([lib.to_dict() for lib in found])
        return EXIT_OK
    if not found:
        print("No Zotero data directory found (looked in Zotero's profiles and ~/Zotero).")
        return EXIT_OK
    for lib in found:
        version = f"Zotero {lib.zotero_version}" if lib.zotero_version else "Zotero"
        account = f"syncs with zotero.org user {lib.user_id}" if lib.user_id else "not synced to zotero.org"
        state = "running" + (", local API on" if lib.local_api else "") if lib.running else "not running"
        print(f"{lib.path}  ({lib.how_found})\n  {version} · {lib.items:,} items, {lib.notes:,} notes, "
              f"{lib.collections:,} collections · {account} · {state}\n"
              f"  use it: zocrates-nb sync --zotero-dir {lib.path}")
    return EXIT_OK


# ----------------------------------------------------------------------------- library writer

def _desktop_account(library: dict) -> tuple[bool, int | None, int | None]:
    """(is the source a desktop db, its account.userID, the groupID of ``desktop_library_id`` if a group)."""
    from zocrates_nb.library.detect import read_zotero_db

    if library.get("source") == "zotero-dir" and library.get("zotero_dir"):
        db = Path(library["zotero_dir"]) / "zotero.sqlite"
    elif library.get("source") == "zotero-sqlite" and library.get("sqlite_path"):
        db = Path(library["sqlite_path"])
    else:
        return False, None, None
    info = read_zotero_db(db.expanduser())
    user_id = info.get("user_id")
    group_id = info["groups"].get(library.get("desktop_library_id"))
    return True, int(user_id) if str(user_id or "").isdigit() else None, group_id


def _writer_web(args: argparse.Namespace) -> dict:
    from zocrates_nb.library.note_writer import WEB_API, check_web_key, key_info

    key = os.environ.get(args.api_key_env, "").strip()
    if not key:
        raise LibraryError(f"The environment variable {args.api_key_env} is empty.",
                           f"Create a key at zotero.org/settings/keys (notes + write access), export it as "
                           f"{args.api_key_env}, and run `zocrates-nb library writer web --api-key-env "
                           f"{args.api_key_env}` again.")
    base_url = args.base_url or WEB_API
    info = key_info(base_url, key)
    desktop, user_id, group_id = _desktop_account(_store(args).read().get("library") or {})
    library_type = "group" if group_id and not args.library_id else args.library_type   # a desktop group library
    library_id = args.library_id or (str(group_id) if group_id else
                                     str(info.user_id) if library_type == "user" else None)
    if not library_id:
        raise LibraryError("A group library needs --library-id.", "The group's id is in its zotero.org URL.")
    check_web_key(info, library_type=library_type, library_id=library_id, desktop_user_id=user_id,
                  desktop=desktop and library_type == "user")
    return {"kind": "web", "api_key_env": args.api_key_env, "library_id": str(library_id),
            "library_type": library_type, "base_url": args.base_url}


def _writer_local(args: argparse.Namespace) -> dict:
    from zocrates_nb.library.zotero_web import authorize_local_key
    from zocrates_nb.saving import store_local_key

    granted = authorize_local_key(args.base_url, "zocrates-nb")
    store_local_key(_paths(args), granted["key"])
    if not granted["remember"]:
        print("Zotero allowed one write only (“Allow”); choose “Always Allow” next time.")
    return {"kind": "local", "local_base_url": args.base_url, "server_id": granted["server_id"]}


def cmd_library_writer(args: argparse.Namespace) -> int:
    """Choose who saves notes for a desktop library: local (Zotero 10), web (zotero.org), none, auto."""
    if args.kind == "web":
        writer = _writer_web(args)
    elif args.kind == "local":
        writer = _writer_local(args)
    else:
        writer = {"kind": args.kind}
    _store(args).update(lambda cfg: {**cfg, "writer": {**cfg.get("writer", {}), **writer}})
    from zocrates_nb.saving import push_outbox

    report = push_outbox(_paths(args), _store(args).read())
    print(f"writer set to {writer['kind']}" + (f"; sent {len(report.written)} note(s) from the outbox"
                                               if report.written else ""))
    return EXIT_OK


def add_library_actions(actions, common) -> None:
    """``library detect`` and ``library writer`` (called from cli_library's ``library`` parser)."""
    from zocrates_nb.config_schema import LIBRARY_TYPES, WRITER_KINDS

    det = actions.add_parser("detect", parents=[common], help="find Zotero data directories on this computer")
    det.add_argument("--json", action="store_true", help="[{path, how_found, items, notes, user_id, ...}]")
    det.set_defaults(func=cmd_library_detect)
    w = actions.add_parser("writer", parents=[common], help="who saves notes: local (Zotero 10) | web | none | auto")
    w.add_argument("kind", choices=WRITER_KINDS)
    w.add_argument("--api-key-env", metavar="ENV", default="ZOTERO_API_KEY",
                   help="web: environment variable holding the zotero.org API key (never stored)")
    w.add_argument("--library-id", metavar="ID", help="web: user or group id (default: the key's user)")
    w.add_argument("--library-type", choices=LIBRARY_TYPES, default="user")
    w.add_argument("--base-url", metavar="URL", help="web: a self-hosted dataserver; local: the local API URL")
    w.set_defaults(func=cmd_library_writer)


def library_show_extras(args: argparse.Namespace, library: dict) -> dict:
    """What ``library show --json`` adds: the writer that would save now, and the outbox size."""
    from zocrates_nb.outbox import Outbox
    from zocrates_nb.saving import writer_summary

    paths = _paths(args)
    source = library.get("source", "demo")
    writer = {"kind": "none", "reason": "the demo library saves notes itself"} if source == "demo" \
        else writer_summary(paths, _store(args).read())
    return {"writer": writer, "outbox": Outbox.for_paths(paths).counts()["outbox"]}


# ----------------------------------------------------------------------------- outbox

def cmd_outbox(args: argparse.Namespace) -> int:
    from zocrates_nb.outbox import Outbox, format_age
    from zocrates_nb.saving import push_outbox

    paths = _paths(args)
    outbox = Outbox.for_paths(paths)
    if args.action == "push":
        report = push_outbox(paths, _store(args).read())
        if args.json:
            _print_json(report.to_dict())
        else:
            print(f"sent {len(report.written)} note(s); {len(report.kept)} still waiting")
            for key, reason in report.kept:
                print(f"  {key}: {reason}")
        return EXIT_OK
    if args.action == "drop":
        if not outbox.drop(args.key):
            raise ZocratesError(f"No outbox entry {args.key!r}.", "`zocrates-nb outbox list` shows the entries.")
        print(f"dropped {args.key} from the outbox; `zocrates-nb sync` removes it from search")
        return EXIT_OK
    if args.action == "export":
        files = outbox.export(Path(args.dir))
        print(f"wrote {len(files)} .html file(s) to {args.dir}; paste each into a Zotero note")
        return EXIT_OK
    entries, waiting = outbox.entries(), outbox.waiting()
    if args.json:
        _print_json({"outbox": [e.to_dict() for e in entries],
                     "waiting_for_zotero_sync": [w.waiting_dict() for w in waiting]})
        return EXIT_OK
    if not entries and not waiting:
        print("The outbox is empty: every saved note is in Zotero.")
    for e in entries:
        print(f"{e.key}  {e.title}  — not yet in Zotero: {e.reason}")
    for w in waiting:
        print(f"{w.key}  {w.title}  — written to {w.written_to}, waiting for Zotero to sync for "
              f"{format_age(w.waiting_dict()['waiting_s'])}")
    return EXIT_OK


def add_outbox_parser(sub, common) -> None:
    p = sub.add_parser("outbox", parents=[common], help="saved notes not yet in Zotero: list | push | export DIR | drop KEY")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (("list", "notes waiting, with the reason"), ("push", "send them to Zotero now")):
        a = actions.add_parser(name, parents=[common], help=text)
        a.add_argument("--json", action="store_true")
        a.set_defaults(func=cmd_outbox)
    e = actions.add_parser("export", parents=[common], help="write each as DIR/KEY.html to paste into Zotero")
    e.add_argument("dir", metavar="DIR")
    e.set_defaults(func=cmd_outbox)
    d = actions.add_parser("drop", parents=[common], help="give up on one entry (export it first)")
    d.add_argument("key", metavar="KEY")
    d.set_defaults(func=cmd_outbox)


# ----------------------------------------------------------------------------- ask --save

def add_save_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--save", action="store_true", help="save the answer as a note (Zotero, or the outbox)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--parent", metavar="KEY", help="with --save: a child note of this paper")
    where.add_argument("--collection", metavar="KEY", help="with --save: a standalone note in this collection")


def save_answer_from_cli(wb, answer, args: argparse.Namespace) -> dict | None:
    """``ask --save``: the "saved" record, or None without --save."""
    if not getattr(args, "save", False):
        if getattr(args, "parent", None) or getattr(args, "collection", None):
            raise ZocratesError("--parent and --collection only apply with --save.", "Add --save.")
        return None
    return wb.save_answer(answer, parent_key=args.parent, collection_key=args.collection).to_dict()
