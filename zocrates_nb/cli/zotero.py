"""CLI commands for the user's own Zotero: ``library show|use|detect|writer`` and ``outbox``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from zocrates_nb.cli.common import EXIT_OK, config_store, open_workbench, paths_from_args, print_json
from zocrates_nb.errors import LibraryError, ZocratesError

if TYPE_CHECKING:
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.settings.config import ConfigStore


def _paths(args: argparse.Namespace) -> DataPaths:
    return paths_from_args(args).ensure()


def _store(args: argparse.Namespace) -> ConfigStore:
    return config_store(args)


# ----------------------------------------------------------------------------- library


def cmd_library_show(args: argparse.Namespace) -> int:
    library = {**(config_store(args).read().get("library") or {})}
    library.update(library_show_extras(args, library))
    print_json(library) if args.json else print("\n".join(f"{k}: {v}" for k, v in library.items()))
    return EXIT_OK


def cmd_library_list(args: argparse.Namespace) -> int:
    """The libraries the index holds (the user's own, each group), as the last sync recorded them."""
    wb = open_workbench(args)
    try:
        found = wb.libraries()
    finally:
        wb.close()
    if args.json:
        print_json(found)
    elif not found:
        print("No libraries recorded yet: run `zocrates-nb sync`.")
    for lib in [] if args.json else found:
        group = f", zotero.org group {lib['group_id']}" if lib["group_id"] else ""
        print(f"{lib['library_id']:>6}  {lib['name']} ({lib['kind']}{group}): {lib['documents']:,} documents")
    return EXIT_OK


def cmd_library_use(args: argparse.Namespace) -> int:
    """Choose the library source of this data directory (the next sync reads it)."""
    library: dict[str, object]
    if args.source == "demo":
        library = {"source": "demo"}
    elif args.source == "sqlite":
        if not args.path or not Path(args.path).is_file():
            raise ZocratesError(f"No zotero.sqlite at {args.path!r}.", "Give the path of Zotero's zotero.sqlite.")
        library = {"source": "zotero-sqlite", "sqlite_path": str(Path(args.path).resolve())}
    elif args.source == "dir":
        if not args.path or not (Path(args.path) / "zotero.sqlite").is_file():
            raise ZocratesError(
                f"No zotero.sqlite inside {args.path!r}.",
                "Give Zotero's data directory (Settings → Advanced → Files and Folders).",
            )
        library = {"source": "zotero-dir", "zotero_dir": str(Path(args.path).resolve())}
    else:  # web
        if not args.library_id:
            raise ZocratesError(
                "A Web API library needs --library-id.",
                "Your user ID is at zotero.org/settings/keys; a group's ID is in its URL.",
            )
        library = {
            "source": "zotero-web",
            "library_id": args.library_id,
            "library_type": args.library_type,
            "api_key_env": args.api_key_env,
            "local": bool(args.local),
        }
    library.update(_desktop_files(args) if args.source in ("sqlite", "dir") else {})
    config_store(args).update(lambda cfg: {**cfg, "library": library})
    print(f"library source set to {library['source']}; run `zocrates-nb sync` to read it")
    return EXIT_OK


def _desktop_files(args: argparse.Namespace) -> dict[str, object]:
    """A desktop library's PDF settings: read the PDFs per page (unless ``--no-pdf-pages``), and the
    linked-attachment base directory when given."""
    files: dict[str, object] = {"pdf_pages": not args.no_pdf_pages}
    if args.attachment_base_dir:
        files["attachment_base_dir"] = str(Path(args.attachment_base_dir).expanduser().resolve())
    return files


def _add_library_parser(sub, common) -> None:
    p = sub.add_parser("library", parents=[common], help="show or choose the library source (demo, Zotero)")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = actions.add_parser("show", parents=[common], help="the configured library source")
    show.add_argument("--json", action="store_true")
    show.set_defaults(func=cmd_library_show)
    listing = actions.add_parser("list", parents=[common], help="the libraries searched, with their ids")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_library_list)
    use = actions.add_parser("use", parents=[common], help="choose: demo | sqlite PATH | dir DIR | web --library-id ID")
    from zocrates_nb.settings.schema import LIBRARY_TYPES, SOURCE_ALIASES

    use.add_argument("source", choices=tuple(SOURCE_ALIASES))
    use.add_argument("path", nargs="?", help="zotero.sqlite (sqlite) or the Zotero data directory (dir)")
    use.add_argument("--library-id", help="Web API user or group ID")
    use.add_argument("--library-type", choices=LIBRARY_TYPES, default="user")
    use.add_argument(
        "--api-key-env",
        default="ZOTERO_API_KEY",
        help="environment variable holding the Zotero API key (never stored in the config)",
    )
    use.add_argument("--local", action="store_true", help="Zotero 10's local API on localhost:23119")
    use.add_argument(
        "--no-pdf-pages", action="store_true", help="sqlite/dir: index Zotero's full-text cache, not the PDFs' pages"
    )
    use.add_argument(
        "--attachment-base-dir",
        metavar="DIR",
        help="sqlite/dir: the base of linked files' relative paths (default: Zotero's own setting)",
    )
    use.set_defaults(func=cmd_library_use)
    add_library_actions(actions, common)


# ----------------------------------------------------------------------------- library detect


def cmd_library_detect(args: argparse.Namespace) -> int:
    from zocrates_nb.library.writing.setup import detect_libraries

    found = detect_libraries()
    if args.json:
        print_json([lib.to_dict() for lib in found])
        return EXIT_OK
    if not found:
        print("No Zotero data directory found (looked in Zotero's profiles and ~/Zotero).")
        return EXIT_OK
    for lib in found:
        version = f"Zotero {lib.zotero_version}" if lib.zotero_version else "Zotero"
        account = f"syncs with zotero.org user {lib.user_id}" if lib.user_id else "not synced to zotero.org"
        state = "running" + (", local API on" if lib.local_api else "") if lib.running else "not running"
        print(
            f"{lib.path}  ({lib.how_found})\n  {version} · {lib.items:,} items, {lib.notes:,} notes, "
            f"{lib.collections:,} collections · {account} · {state}\n"
            f"  use it: zocrates-nb sync --zotero-dir {lib.path}"
        )
    return EXIT_OK


# ----------------------------------------------------------------------------- library writer


def _writer_web(args: argparse.Namespace) -> dict:
    from zocrates_nb.library.writing.setup import web_writer

    key = os.environ.get(args.api_key_env, "").strip()
    if not key:
        raise LibraryError(
            f"The environment variable {args.api_key_env} is empty.",
            f"Create a key at zotero.org/settings/keys (notes + write access), export it as "
            f"{args.api_key_env}, and run `zocrates-nb library writer web --api-key-env "
            f"{args.api_key_env}` again.",
        )
    library_type, library_id = web_writer(
        key,
        base_url=args.base_url,
        library_id=args.library_id,
        library_type=args.library_type,
        library=_store(args).read().get("library") or {},
    )
    return {
        "kind": "web",
        "api_key_env": args.api_key_env,
        "library_id": library_id,
        "library_type": library_type,
        "base_url": args.base_url,
    }


def _writer_local(args: argparse.Namespace) -> dict:
    from zocrates_nb.library.writing.setup import authorize_local_writer

    granted = authorize_local_writer(_paths(args), args.base_url)
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
    from zocrates_nb.workbench.saving import push_outbox

    report = push_outbox(_paths(args), _store(args).read())
    print(
        f"writer set to {writer['kind']}"
        + (f"; sent {len(report.written)} note(s) from the outbox" if report.written else "")
    )
    return EXIT_OK


def add_library_actions(actions, common) -> None:
    """``library detect`` and ``library writer`` (called from the ``library`` parser above)."""
    from zocrates_nb.settings.schema import LIBRARY_TYPES, WRITER_KINDS

    det = actions.add_parser("detect", parents=[common], help="find Zotero data directories on this computer")
    det.add_argument("--json", action="store_true", help="[{path, how_found, items, notes, user_id, ...}]")
    det.set_defaults(func=cmd_library_detect)
    w = actions.add_parser("writer", parents=[common], help="who saves notes: local (Zotero 10) | web | none | auto")
    w.add_argument("kind", choices=WRITER_KINDS)
    w.add_argument(
        "--api-key-env",
        metavar="ENV",
        default="ZOTERO_API_KEY",
        help="web: environment variable holding the zotero.org API key (never stored)",
    )
    w.add_argument("--library-id", metavar="ID", help="web: user or group id (default: the key's user)")
    w.add_argument("--library-type", choices=LIBRARY_TYPES, default="user")
    w.add_argument("--base-url", metavar="URL", help="web: a self-hosted dataserver; local: the local API URL")
    w.set_defaults(func=cmd_library_writer)


def library_show_extras(args: argparse.Namespace, library: dict) -> dict:
    """What ``library show --json`` adds: the writer that would save now, and the outbox size."""
    from zocrates_nb.library.writing.choice import writer_summary
    from zocrates_nb.library.writing.outbox import Outbox

    paths = _paths(args)
    source = library.get("source", "demo")
    writer = (
        {"kind": "none", "reason": "the demo library saves notes itself"}
        if source == "demo"
        else writer_summary(paths, _store(args).read())
    )
    return {"writer": writer, "outbox": Outbox.for_paths(paths).counts()["outbox"]}


# ----------------------------------------------------------------------------- outbox


def cmd_outbox(args: argparse.Namespace) -> int:
    from zocrates_nb.library.writing.outbox import Outbox, format_age
    from zocrates_nb.workbench.saving import push_outbox

    paths = _paths(args)
    outbox = Outbox.for_paths(paths)
    if args.action == "push":
        report = push_outbox(paths, _store(args).read())
        if args.json:
            print_json(report.to_dict())
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
        print_json(
            {
                "outbox": [e.to_dict() for e in entries],
                "waiting_for_zotero_sync": [w.waiting_dict() for w in waiting],
            }
        )
        return EXIT_OK
    if not entries and not waiting:
        print("The outbox is empty: every saved note is in Zotero.")
    for e in entries:
        print(f"{e.key}  {e.title}  — not yet in Zotero: {e.reason}")
    for w in waiting:
        print(
            f"{w.key}  {w.title}  — written to {w.written_to}, waiting for Zotero to sync for "
            f"{format_age(w.waiting_dict()['waiting_s'])}"
        )
    return EXIT_OK


def add_outbox_parser(sub, common) -> None:
    p = sub.add_parser(
        "outbox", parents=[common], help="saved notes not yet in Zotero: list | push | export DIR | drop KEY"
    )
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


ZOTERO_COMMANDS = [_add_library_parser, add_outbox_parser]
