"""REST handlers: ``GET /zocrates/status`` and ``POST /zocrates/llm/config``.

Both are ``APIHandler`` subclasses with ``@tornado.web.authenticated`` on every
verb, so they need the server token (or a browser session plus the XSRF token,
which ``APIHandler`` checks on POST; we never disable that). Writes go through
``ConfigStore``, i.e. the same lock and atomic replace as the Python API, the CLI
and the widgets. Request bodies are never logged (they may hold the profile, or
a key pasted by mistake) and responses never contain an API key.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import tornado.web
from jupyter_server.base.handlers import APIHandler

from zocrates_nb.errors import StorageUnavailableError, ValidationError, ZocratesError
from zocrates_nb.health.status import collect_status
from zocrates_nb.paths import DataPaths
from zocrates_nb.settings.config import LLM_FIELDS, ConfigStore

ACCEPTED_FIELDS = (*LLM_FIELDS, "user_research_profile")
#: the largest body accepted: a profile is at most a few thousand characters, settings are short
MAX_BODY_BYTES = 256 * 1024
_MAX_DEPTH = 32


def _refuse_unsafe_values(value: Any, depth: int = 0) -> None:
    """Refuse nesting deeper than any setting has, and text that cannot be written as UTF-8."""
    if depth > _MAX_DEPTH:
        raise ValidationError(
            "The request body is nested too deeply.", hint='Send a flat JSON object such as {"model": "..."}.'
        )
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError(
                "A value contains invalid Unicode (a lone surrogate such as \\ud800).",
                hint="Send text made of valid Unicode characters.",
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_unsafe_values(key, depth + 1)
            _refuse_unsafe_values(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _refuse_unsafe_values(item, depth + 1)


def parse_llm_config_body(body: bytes) -> dict[str, Any]:
    """The POST body as ``{field: value}``; ValidationError for non-JSON, non-objects or unknown fields.

    Messages name fields, never values: a value could be a secret.
    """
    if len(body) > MAX_BODY_BYTES:
        raise ValidationError(
            f"The request body is {len(body):,} bytes; at most {MAX_BODY_BYTES:,} are accepted.",
            hint="Send only the settings to change.",
        )
    try:
        payload = json.loads(body.decode("utf-8")) if body.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ValidationError(
            "The request body is not valid JSON.",
            hint='Send a JSON object such as {"base_url": "...", "model": "..."}.',
        ) from None
    except RecursionError:
        raise ValidationError(
            "The request body is nested too deeply.", hint='Send a flat JSON object such as {"model": "..."}.'
        ) from None
    _refuse_unsafe_values(payload)
    if not isinstance(payload, dict) or not payload:
        raise ValidationError(
            "The request body must be a non-empty JSON object.", hint=f"Accepted fields: {', '.join(ACCEPTED_FIELDS)}."
        )
    unknown = sorted(set(payload) - set(ACCEPTED_FIELDS))
    if unknown:
        shown = ", ".join(name[:40] for name in unknown[:10])
        raise ValidationError(
            f"Unknown field(s): {shown}.",
            hint=f"Accepted fields: {', '.join(ACCEPTED_FIELDS)}. API keys are not accepted "
            "over REST: set the environment variable named by api_key_env.",
        )
    return payload


def apply_llm_config(store: ConfigStore, payload: dict[str, Any]) -> None:
    """Write the accepted fields in ONE locked, validated update (all or nothing)."""
    patch: dict[str, Any] = {}
    llm = {name: payload[name] for name in LLM_FIELDS if name in payload}
    if llm:
        patch["llm"] = llm
    if "user_research_profile" in payload:
        patch["user_research_profile"] = payload["user_research_profile"]
    store.update(patch)


class _ZocratesHandler(APIHandler):
    @property
    def zocrates_paths(self) -> DataPaths:
        return self.settings["zocrates_paths"]

    def _write_json(self, status: int, payload: dict[str, Any]) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(payload))

    def _write_problem(self, status: int, exc: ZocratesError) -> None:
        problem: dict[str, Any] = {"error": exc.__class__.__name__, "message": exc.message, "hint": exc.hint}
        self._write_json(status, problem)


class StatusHandler(_ZocratesHandler):
    @tornado.web.authenticated
    async def get(self) -> None:
        status = await asyncio.get_running_loop().run_in_executor(None, collect_status, self.zocrates_paths)
        self._write_json(200, status)


class LLMConfigHandler(_ZocratesHandler):
    @tornado.web.authenticated
    async def post(self) -> None:
        paths = self.zocrates_paths
        store = ConfigStore.for_paths(paths)
        loop = asyncio.get_running_loop()
        try:
            limit = store.profile_limit()
            payload = parse_llm_config_body(self.request.body)
            await loop.run_in_executor(None, apply_llm_config, store, payload)
        except ValidationError as exc:
            # profile_limit lets the editor show "n / limit" next to the error.
            self._write_json(
                400, {"error": "ValidationError", "message": exc.message, "hint": exc.hint, "profile_limit": limit}
            )
            return
        except StorageUnavailableError as exc:  # a full disk or a read-only directory: not a server bug
            self._write_problem(507 if "disk is full" in exc.message else 503, exc)
            return
        except ZocratesError as exc:
            self._write_problem(500, exc)
            return
        self._write_json(200, await loop.run_in_executor(None, collect_status, paths))
