"""The one declaration of ``zocrates_config.json``: sections, keys, types, allowed values, limits.

Why one table: config validation, ``library.open_source``, the CLI's choices and the docs (``schema_markdown``,
checked by a test against docs/zotero.md) used to spell these out apart and drifted (``sync --zotero-dir`` wrote
a source the validator refused); now all read this module. Each setting is a ``Setting`` row; ``check_setting``
is a pure function from a value to ``None`` or a ``ValidationError``: strings have length limits and must be
UTF-8, numbers must be finite (``NaN`` is not JSON), URLs are parsed, not prefix-matched.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from zocrates_nb.errors import ValidationError

#: Library sources, in the order the docs list them, and the short names ``library use`` takes.
LIBRARY_SOURCES = ("demo", "zotero-sqlite", "zotero-dir", "zotero-web")
SOURCE_ALIASES = {"demo": "demo", "sqlite": "zotero-sqlite", "dir": "zotero-dir", "web": "zotero-web"}
VECTOR_MODES = ("persistent", "http")
LIBRARY_TYPES = ("user", "group")
#: Who saves notes for a desktop (read-only) source: tried in this order by ``auto``.
WRITER_KINDS = ("auto", "local", "web", "none")
#: Rate names of ``llm.prices[model]``: US dollars per million prompt / completion tokens.
PRICE_RATES = ("prompt", "completion")

NAME_MAX = 200  # model names, role names, ids
PATH_MAX = 4096  # file-system paths (Linux PATH_MAX)
URL_MAX = 2048  # what browsers and proxies accept
ENV_NAME_MAX = 100
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CONTROL_RE = re.compile(r"[\x00-\x20\x7f-\x9f]")


@dataclass(frozen=True)
class Setting:
    """One key of one section: its kind, default, whether null is allowed, and its limits."""

    name: str
    kind: str  # str | int | number | bool | choice | url | env | id | map
    default: Any
    help: str
    nullable: bool = False
    choices: tuple = ()
    max_len: int = NAME_MAX
    #: ``int``: ``low <= value <= high``; ``number``: ``low < value <= high`` (``_range_text`` says which)
    low: float | None = None
    high: float | None = None
    example: str = ""
    check: Callable[[str, Any], None] | None = None  # extra rule for maps


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_text(where: str, value: str, max_len: int) -> None:
    """Length limit and UTF-8 encodability: what every stored string must pass."""
    if len(value) > max_len:
        raise ValidationError(
            f"{where} is {len(value)} characters long; the limit is {max_len}.", hint=f"Set a shorter {where}."
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"{where} contains an invalid character (a lone surrogate).", hint=f"Set {where} to plain text."
        ) from exc


def check_http_url(where: str, value: str) -> None:
    """An http(s) URL with a host, no control characters or spaces, and no credentials.

    Why refuse credentials rather than redact them: a URL is echoed by status, REST,
    error messages and diagnostics; a refused one can never leak. Keys belong in the
    environment variable named by ``api_key_env``.
    """
    check_text(where, value, URL_MAX)
    if _CONTROL_RE.search(value):
        raise ValidationError(
            f"{where} contains a space or control character (a newline?).", hint="For example https://api.openai.com/v1"
        )
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (parsing the port raises on a bad one)
    except ValueError as exc:
        raise ValidationError(
            f"{where} is not a valid URL ({exc}).", hint="For example https://api.openai.com/v1"
        ) from exc
    if parts.scheme not in ("http", "https"):
        raise ValidationError(
            f"{where} must be an http:// or https:// URL.", hint="For example https://api.openai.com/v1"
        )
    if parts.username is not None or parts.password is not None:
        raise ValidationError(
            f"{where} must not carry a user name or password (user:secret@host).",
            hint="Remove them from the URL; put the key in the environment variable named by api_key_env.",
        )
    if not parts.hostname:
        raise ValidationError(f"{where} has no host name.", hint="For example https://api.openai.com/v1")


def _check_models(where: str, models: Any) -> None:
    if not isinstance(models, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v for k, v in models.items()
    ):
        raise ValidationError(
            f"{where} must map role names to model names (strings).", hint='For example {"coordinator": "gpt-4o-mini"}.'
        )
    for role, model in models.items():
        check_text(f"{where} role name", role, NAME_MAX)
        check_text(f"{where}[{role[:40]!r}]", model, NAME_MAX)


def _check_prices(where: str, prices: Any) -> None:
    if not isinstance(prices, dict) or not all(
        isinstance(model, str)
        and isinstance(rates, dict)
        and all(k in PRICE_RATES and _is_number(v) and v >= 0 for k, v in rates.items())
        for model, rates in prices.items()
    ):
        raise ValidationError(
            f'{where} must map model names to {{"prompt": $, "completion": $}} '
            "per million tokens (non-negative numbers; no other rate names).",
            hint='For example {"gpt-4o-mini": {"prompt": 0.15, "completion": 0.6}}.',
        )
    for model in prices:
        check_text(f"{where} model name", model, NAME_MAX)


def _check_colors(where: str, colors: Any) -> None:
    if not isinstance(colors, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in colors.items()):
        raise ValidationError(
            f"{where} must map highlight colours (hex code or name) to what they mean (strings).",
            hint='For example {"#ff6666": "key finding", "yellow": "method"}.',
        )
    for color, meaning in colors.items():
        check_text(f"{where} colour", color, NAME_MAX)
        check_text(f"{where}[{color[:40]!r}]", meaning, NAME_MAX)


SCHEMA: dict[str, tuple[Setting, ...]] = {
    "llm": (
        Setting(
            "base_url",
            "url",
            None,
            "OpenAI-compatible endpoint; null = no LLM (evidence-only answers)",
            nullable=True,
            example="https://api.openai.com/v1",
        ),
        Setting("model", "str", None, "default model for every agent role", nullable=True, example="gpt-4o-mini"),
        Setting("models", "map", {}, "per-role model overrides", check=_check_models),
        Setting("api_key_env", "env", "OPENAI_API_KEY", "NAME of the environment variable holding the API key"),
        Setting("prices", "map", {}, "US$ per million prompt/completion tokens, per model", check=_check_prices),
        Setting("timeout_s", "number", 60, "request timeout in seconds", low=0, high=3600, example="60"),
        Setting("max_retries", "int", 3, "retries on transient errors", low=0, high=20, example="3"),
        Setting("rewrite_queries", "bool", True, "library search: rewrite the question into a few searches, fused"),
    ),
    "library": (
        Setting("source", "choice", "demo", "where notes and papers come from", choices=LIBRARY_SOURCES),
        Setting("sqlite_path", "str", None, "zotero.sqlite (source zotero-sqlite)", nullable=True, max_len=PATH_MAX),
        Setting(
            "zotero_dir", "str", None, "Zotero data directory (source zotero-dir)", nullable=True, max_len=PATH_MAX
        ),
        Setting(
            "desktop_library_id",
            "int",
            None,
            "read only this libraryID of zotero.sqlite (default: every library)",
            nullable=True,
            low=1,
            high=2**31,
        ),
        Setting("library_id", "id", None, "Web API user or group id", nullable=True),
        Setting("library_type", "choice", "user", "Web API library type", choices=LIBRARY_TYPES),
        Setting(
            "groups",
            "choice",
            "all",
            "Web API user library: also read every group (all) or not (none)",
            choices=("all", "none"),
        ),
        Setting("api_key_env", "env", "ZOTERO_API_KEY", "NAME of the environment variable holding the Zotero key"),
        Setting("local", "bool", False, "read through Zotero's local API on 127.0.0.1:23119"),
        Setting("base_url", "url", None, "Web API base URL (self-hosted dataservers, tests)", nullable=True),
        Setting("server_id", "str", None, "Zotero-Server-ID of the local API", nullable=True),
        Setting(
            "content_dir", "str", None, "demo content folder (tests, custom demos)", nullable=True, max_len=PATH_MAX
        ),
        Setting("pdf_pages", "bool", True, "read desktop PDFs per page, so paper chunks cite page numbers"),
        Setting(
            "attachment_base_dir",
            "str",
            None,
            "base of linked files' relative paths (default: Zotero's own setting)",
            nullable=True,
            max_len=PATH_MAX,
        ),
    ),
    "writer": (
        Setting("kind", "choice", "auto", "who saves notes for a desktop source", choices=WRITER_KINDS),
        Setting("api_key_env", "env", "ZOTERO_API_KEY", "NAME of the environment variable holding the Web API key"),
        Setting("library_id", "id", None, "Web API user or group id (default: from GET /keys/current)", nullable=True),
        Setting("library_type", "choice", "user", "Web API library type", choices=LIBRARY_TYPES),
        Setting("base_url", "url", None, "Web API base URL (default https://api.zotero.org)", nullable=True),
        Setting(
            "local_base_url", "url", None, "Zotero 10 local API (default http://127.0.0.1:23119/api)", nullable=True
        ),
        Setting("server_id", "str", None, "Zotero-Server-ID the local API reported", nullable=True),
    ),
    "index": (
        Setting("annotations", "bool", True, "index PDF annotations (highlights, comments, sticky notes)"),
        Setting(
            "annotation_colors",
            "map",
            {},
            "what your highlight colours mean, indexed with each annotation",
            check=_check_colors,
        ),
    ),
    "embedding": (  # null base_url: the offline MiniLM model; else an OpenAI-compatible /v1/embeddings (llm.prices)
        Setting("base_url", "url", None, "/v1/embeddings endpoint; null = offline MiniLM", nullable=True),
        Setting("model", "str", None, "embedding model name", nullable=True, example="text-embedding-3-small"),
        Setting("dim", "int", None, "vector dimension (probed by index model set)", nullable=True, low=1, high=65536),
        Setting("api_key_env", "env", "OPENAI_API_KEY", "NAME of the environment variable holding the API key"),
        Setting("batch_size", "int", 64, "texts per request", low=1, high=2048, example="64"),
        Setting("timeout_s", "number", 60, "request timeout in seconds", low=0, high=3600, example="60"),
        Setting("max_retries", "int", 3, "retries on transient errors", low=0, high=20, example="3"),
    ),
    "vectors": (
        Setting("mode", "choice", "persistent", "embedded ChromaDB or a Chroma server", choices=VECTOR_MODES),
        Setting("host", "str", None, "Chroma server host (mode http)", nullable=True),
        Setting("port", "int", None, "Chroma server port (mode http)", nullable=True, low=1, high=65535),
    ),
}
SECTIONS = tuple(SCHEMA)


def section_defaults(section: str) -> dict[str, Any]:
    return {s.name: (dict(s.default) if isinstance(s.default, dict) else s.default) for s in SCHEMA[section]}


def section_keys(section: str) -> tuple[str, ...]:
    return tuple(s.name for s in SCHEMA[section])


def _range_text(s: Setting) -> str:
    """The range as the validator applies it: ints ``low..high``; numbers ``> low`` (a 0 s timeout never answers)."""
    if s.low is None or s.high is None:
        return ""
    if s.kind == "number":
        return f"> {s.low:g} and ≤ {s.high:g}"
    return f"{s.low:g}..{int(s.high)}"


def _allowed_text(s: Setting) -> str:
    """The "allowed" cell of the docs table."""
    if s.choices:
        return " \\| ".join(s.choices)
    return {
        "str": f"≤ {s.max_len} chars",
        "url": f"http(s) URL with a host, ≤ {URL_MAX} chars, no user:password",
        "env": "an environment variable NAME",
        "bool": "true \\| false",
        "id": "digits",
        "map": "an object",
    }.get(s.kind, "") or _range_text(s)


def _check_str(where: str, s: Setting, value: Any) -> None:
    if not isinstance(value, str):
        raise ValidationError(
            f"{where} must be a string or null, not {_type_name(value)}.",
            hint=f"Set {where} to a string (or null to unset it).",
        )
    check_http_url(where, value) if s.kind == "url" else check_text(where, value, s.max_len)


def _check_env(where: str, s: Setting, value: Any) -> None:
    if not isinstance(value, str) or not _ENV_NAME_RE.match(value) or len(value) > ENV_NAME_MAX:
        raise ValidationError(
            f"{where} must be the NAME of an environment variable (letters, digits, _; at most {ENV_NAME_MAX}).",
            hint="Put the key itself in that variable, e.g. OPENAI_API_KEY, never in the config.",
        )


def _check_choice(where: str, s: Setting, value: Any) -> None:
    if value not in s.choices:
        raise ValidationError(
            f"{where} must be one of {', '.join(s.choices)}, not {str(value)[:80]!r}.",
            hint=f"{s.help}: one of {', '.join(s.choices)}.",
        )


def _check_bool(where: str, s: Setting, value: Any) -> None:
    if not isinstance(value, bool):
        raise ValidationError(f"{where} must be true or false.", hint=s.help)


def _check_int(where: str, s: Setting, value: Any) -> None:
    low, high = s.low if s.low is not None else float("-inf"), s.high if s.high is not None else float("inf")
    if not _is_int(value) or not low <= value <= high:
        raise ValidationError(
            f"{where} must be an integer {_range_text(s)}, not {str(value)[:80]!r}.",
            hint=f"For example {s.example or (int(s.low) if s.low is not None else 1)}.",
        )


def _check_number(where: str, s: Setting, value: Any) -> None:
    if not _is_number(value) or not s.low < value <= s.high:
        raise ValidationError(
            f"{where} must be a finite number {_range_text(s)}, not {str(value)[:80]!r}.",
            hint=f"For example {s.example}.",
        )


def _check_id(where: str, s: Setting, value: Any) -> None:
    if not (_is_int(value) or (isinstance(value, str) and value.isdigit() and len(value) <= 20)):
        raise ValidationError(
            f"{where} must be a numeric Zotero user or group id, or null.",
            hint="Your user id is at zotero.org/settings/keys; a group's id is in its URL.",
        )


def _check_map(where: str, s: Setting, value: Any) -> None:
    if s.check is not None:
        s.check(where, value)


_CHECKS = {
    "str": _check_str,
    "url": _check_str,
    "env": _check_env,
    "choice": _check_choice,
    "bool": _check_bool,
    "int": _check_int,
    "number": _check_number,
    "id": _check_id,
    "map": _check_map,
}


def check_setting(section: str, s: Setting, value: Any) -> None:
    """Raise ``ValidationError`` unless ``value`` is allowed for setting ``s``."""
    where = f"{section}.{s.name}"
    if value is None:
        if s.nullable:
            return
        raise ValidationError(f"{where} must not be null.", hint=f"Set {where} (default {s.default!r}).")
    _CHECKS[s.kind](where, s, value)


def check_section(section: str, value: Any) -> None:
    """Validate one section: an object whose keys are all declared and whose values pass."""
    if not isinstance(value, dict):
        raise ValidationError(
            f"{section} must be an object, not {_type_name(value)}.",
            hint=f"Run `zocrates-nb config reset`, or set the {section} section to an object.",
        )
    allowed = section_keys(section)
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        shown = ", ".join(str(k)[:60] for k in unknown[:5])
        raise ValidationError(
            f"Unknown {section} field(s): {shown}.",
            hint=f"Allowed {section} fields: {', '.join(allowed)}. API keys are never stored "
            "in the config: set the environment variable named by api_key_env.",
        )
    for s in SCHEMA[section]:
        check_setting(section, s, value.get(s.name, s.default))


def schema_markdown() -> str:
    """The settings table for the docs (docs/zotero.md embeds it; a test keeps them equal)."""
    rows = ["| setting | what | default | allowed |", "|---|---|---|---|"]
    for section, settings in SCHEMA.items():
        for s in settings:
            default = (
                "null"
                if s.default is None
                else str(s.default).lower()
                if isinstance(s.default, bool)
                else str(s.default)
            )
            rows.append(f"| `{section}.{s.name}` | {s.help} | `{default}` | {_allowed_text(s)} |")
    return "\n".join(rows)
