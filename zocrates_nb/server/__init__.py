"""The zocrates_nb Jupyter server extension (REST: /zocrates/status, /zocrates/llm/config).

Enabled by ``jupyter-config/jupyter_server_config.d/zocrates_nb.json`` when the
package is installed. The data directory is ``c.ZocratesNB.data_dir`` when set in
the Jupyter config, else the usual resolution (``ZOTERO_DATA_DIR``,
``ZOCRATES_HOME``, the per-user data directory) — see ``zocrates_nb.paths``.
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "zocrates_nb.server"}]


def _data_dir_setting(serverapp: Any) -> str | None:
    """``c.ZocratesNB.data_dir`` from the server's traitlets config, if any."""
    section = serverapp.config.get("ZocratesNB") if hasattr(serverapp.config, "get") else None
    value = section.get("data_dir") if section is not None and hasattr(section, "get") else None
    return str(value) if value else None


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the handlers under the server's base_url."""
    from jupyter_server.utils import url_path_join

    from zocrates_nb.paths import DataPaths
    from zocrates_nb.server.handlers import LLMConfigHandler, StatusHandler

    paths = DataPaths.resolve(_data_dir_setting(serverapp))
    web_app = serverapp.web_app
    web_app.settings["zocrates_paths"] = paths
    base_url = web_app.settings.get("base_url", "/")
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base_url, "zocrates", "status"), StatusHandler),
            (url_path_join(base_url, "zocrates", "llm", "config"), LLMConfigHandler),
        ],
    )
    serverapp.log.info("zocrates_nb: REST handlers at %szocrates/ (data directory %s)", base_url, paths.root)


# Older jupyter_server / notebook-style names.
load_jupyter_server_extension = _load_jupyter_server_extension
