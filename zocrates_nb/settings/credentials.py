"""The LLM API key: from the environment, or from ``<data-dir>/secrets.json`` (mode 0600).

The key is never written to ``zocrates_config.json`` (which notebooks, logs and the
REST status endpoint may show) and never appears in any message: code that might
echo text from an LLM endpoint passes it through ``redact`` first. The secrets
file is created owner-only from its first byte (``os.open(..., 0o600)``), not
chmod-ed afterwards, so there is no window in which another user could read it.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from typing import TYPE_CHECKING

from zocrates_nb.errors import ConfigError, ValidationError
from zocrates_nb.storage.atomic import write_atomically
from zocrates_nb.storage.locks import file_lock
from zocrates_nb.storage.space import unavailable, write_problem

if TYPE_CHECKING:
    from zocrates_nb.paths import DataPaths
    from zocrates_nb.settings.config import LLMSettings

log = logging.getLogger(__name__)
REDACTED = "[redacted]"


def _read_secrets(paths: DataPaths) -> dict:
    try:
        if paths.secrets.is_dir():
            raise IsADirectoryError(21, "it is a folder, not the key file")
        fd = os.open(paths.secrets, os.O_RDONLY)
    except FileNotFoundError:
        return {}
    except OSError as exc:  # a folder of that name, no permission
        raise ConfigError(
            f"{paths.secrets} cannot be read: {exc.strerror}.",
            hint="Move it away, then store the key again with `zocrates-nb llm set --api-key-stdin`, "
            "or use the environment variable instead.",
        ) from None
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning(
                "%s is readable by other users (mode %o); run `chmod 600 %s`.",
                paths.secrets,
                stat.S_IMODE(mode),
                paths.secrets,
            )
        raw = fh.read()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        # `from None`: the decoder error carries the document, i.e. possibly the key.
        raise ConfigError(
            f"{paths.secrets} is not valid JSON.",
            hint="Store the key again with `zocrates-nb llm set --api-key-stdin` (it replaces the file), "
            "or use the environment variable instead.",
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("api_key", ""), str):
        raise ConfigError(
            f'{paths.secrets} should hold {{"api_key": "..."}}.',
            hint="Delete it and store the key again with `zocrates-nb llm set --api-key-stdin`.",
        )
    return data


def get_api_key(paths: DataPaths, settings: LLMSettings) -> str | None:
    """The key from the env var named by ``settings.api_key_env``, else from secrets.json, else None."""
    from_env = os.environ.get(settings.api_key_env or "OPENAI_API_KEY", "").strip()
    if from_env:
        return from_env
    return _read_secrets(paths).get("api_key") or None


def api_key_source(paths: DataPaths, settings: LLMSettings) -> str | None:
    """Where the key would come from ("env:NAME" or "secrets.json"), for status displays. Never the key."""
    env_name = settings.api_key_env or "OPENAI_API_KEY"
    if os.environ.get(env_name, "").strip():
        return f"env:{env_name}"
    if _read_secrets(paths).get("api_key"):  # an unreadable file raises ConfigError: the caller reports it
        return "secrets.json"
    return None


def store_api_key(paths: DataPaths, key: str) -> None:
    """Write ``key`` to secrets.json atomically, owner-only from the first byte."""
    if not isinstance(key, str) or not key.strip() or any(c.isspace() for c in key.strip()):
        raise ValidationError("The API key must be a non-empty string without spaces.", hint="Paste the key alone.")
    if paths.secrets.is_dir():
        raise ConfigError(
            f"{paths.secrets} is a folder, so the key cannot be stored there.",
            hint="Move the folder away, then store the key again with `zocrates-nb llm set --api-key-stdin`.",
        )
    payload = json.dumps({"api_key": key.strip()}).encode("utf-8")
    try:
        paths.root.mkdir(parents=True, exist_ok=True)
        with file_lock(paths.locks / "secrets.lock"):
            write_atomically(paths.secrets, payload)  # mkstemp: 0600 from the first byte
    except OSError as exc:  # a full disk or a read-only directory: the old file (if any) is unchanged
        if problem := write_problem(paths.secrets, exc):
            raise unavailable("The key file", paths.secrets, problem, exc) from None  # never the key in a trace
        raise


def clear_api_key(paths: DataPaths) -> bool:
    """Delete secrets.json; True when there was one."""
    with file_lock(paths.locks / "secrets.lock"):
        try:
            paths.secrets.unlink()
            return True
        except FileNotFoundError:
            return False


def redact(text: str, key: str | None) -> str:
    """``text`` with every occurrence of ``key`` replaced by "[redacted]" (no-op without a key)."""
    if not key or not text:
        return text
    return text.replace(key, REDACTED)
