"""What every CLI module shares: the data directory from the global options, the config store,
JSON output, the exit codes and the workbench opener.

The one place the command modules meet: they import from here, never from each other, so each
reads (and changes) alone.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from zocrates_nb.paths import DataPaths

if TYPE_CHECKING:
    from zocrates_nb.settings.config import ConfigStore
    from zocrates_nb.workbench.core import Workbench

#: 0 success; 1 any other ``ZocratesError``; 2 a refused value or bad usage (the file is left as it was).
EXIT_OK, EXIT_ERROR, EXIT_REFUSED = 0, 1, 2

#: ``builder(sub, common)``: declares one command on the subparsers, with the global options as parent parser.
ParserBuilder = Callable[[Any, argparse.ArgumentParser], None]


def paths_from_args(args: argparse.Namespace) -> DataPaths:
    """The data directory chosen by ``--data-dir`` / ``--zotero-data-dir`` / the environment."""
    return DataPaths.resolve(getattr(args, "data_dir", None), getattr(args, "zotero_data_dir", None))


def config_store(args: argparse.Namespace) -> ConfigStore:
    """The config file of the chosen data directory (imported late: ``--help`` stays cold)."""
    from zocrates_nb.settings.config import ConfigStore

    return ConfigStore.for_paths(paths_from_args(args))


def print_json(payload: object) -> None:
    """One indented JSON document on stdout (``--json``); values JSON cannot hold print as text."""
    print(json.dumps(payload, indent=2, ensure_ascii=False, default=str))


def open_workbench(args: argparse.Namespace, **kwargs: Any) -> Workbench:
    """The workbench of the chosen data directory; the caller closes it."""
    from zocrates_nb.workbench.core import Workbench

    return Workbench(paths_from_args(args).root, **kwargs)
