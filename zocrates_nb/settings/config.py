"""``zocrates_config.json``: the profile, the LLM settings and the library choice.

Several kernels, the CLI and the Jupyter server extension read and write the same
file, so every write goes through one recipe (why: a torn or interleaved write
would lose the user's profile):

* a ``filelock.FileLock`` on a *separate* ``.lock`` file (``os.replace`` changes
  the config's inode on every write, so locking the config itself would not work);
* the new content goes to a temp file in the same directory, is ``fsync``-ed,
  ``os.replace``-d over the config, and the directory is ``fsync``-ed;
* the document is validated before it is written, so a refused value leaves
  the file exactly as it was.

Reads take no lock: ``os.replace`` means a reader sees the old or the new file,
never half of one. A double-checked in-memory cache keyed on
``(st_ino, st_size, st_mtime_ns)`` makes repeated reads cost one ``stat``; an
entry whose mtime is younger than the filesystem's timestamp granularity is not
trusted ("racy-git" rule), so a process sees another process's save on its next
read. The API key is never stored here (see ``secrets.py``).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from zocrates_nb.errors import ConfigError, ValidationError
from zocrates_nb.settings.schema import (  # noqa: F401  (re-exported: older imports name them here)
    LIBRARY_SOURCES,
    PRICE_RATES,
    SECTIONS,
    VECTOR_MODES,
    check_section,
    check_text,
    section_defaults,
    section_keys,
)
from zocrates_nb.storage.atomic import write_atomically
from zocrates_nb.storage.space import refused, write_problem

if TYPE_CHECKING:
    from zocrates_nb.paths import DataPaths

PROFILE_LIMIT_MAX = 1000
_RACY_WINDOW_NS = 2_000_000_000  # do not trust a cache entry whose file is younger than this
_LOCK_TIMEOUT_S = 10.0

# The sections, keys, defaults and allowed values are declared once, in config_schema.
DEFAULT_CONFIG: dict[str, Any] = {
    "user_research_profile": "",
    "max_research_profile_chars": 1000,
    **{section: section_defaults(section) for section in SECTIONS},
}
LLM_FIELDS = section_keys("llm")
_SECTIONS = SECTIONS


@dataclass(frozen=True)
class LLMSettings:
    """The LLM part of the config, typed. Holds no API key (that lives in ``secrets``)."""

    base_url: str | None = None
    model: str | None = None
    models: dict[str, str] = field(default_factory=dict)
    api_key_env: str = "OPENAI_API_KEY"
    prices: dict = field(default_factory=dict)
    timeout_s: float = 60
    max_retries: int = 3
    rewrite_queries: bool = True  # the library search agent's query rewriting (agents/rewrite.py)

    @property
    def configured(self) -> bool:
        """No ``base_url`` means no LLM: the agents answer evidence-only."""
        return bool(self.base_url)

    def model_for(self, role: str) -> str | None:
        """The model for an agent role: the per-role override, else the default ``model``."""
        return self.models.get(role) or self.model

    @classmethod
    def from_config(cls, config: dict) -> LLMSettings:
        llm = config.get("llm", {})
        return cls(**{name: copy.deepcopy(llm.get(name, DEFAULT_CONFIG["llm"][name])) for name in LLM_FIELDS})


# ----------------------------------------------------------------------------- validation


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_config(config: Any) -> None:
    """Raise ``ValidationError`` unless ``config`` is a well-formed config document.

    Why one function: the same rules guard every write path (Python API, CLI,
    REST, widgets) and the read path, so nothing can store what cannot be read.
    Unknown top-level keys are allowed (preserved); unknown keys inside ``llm``
    are refused in every section (a typo there would silently do nothing — or be an API key).
    """
    if not isinstance(config, dict):
        raise ValidationError(
            f"The config must be a JSON object, not {_type_name(config)}.",
            hint="Run `zocrates-nb config reset` to start from the defaults.",
        )
    limit = config.get("max_research_profile_chars", DEFAULT_CONFIG["max_research_profile_chars"])
    if not _is_int(limit) or not 1 <= limit <= PROFILE_LIMIT_MAX:
        raise ValidationError(
            f"max_research_profile_chars must be an integer 1..{PROFILE_LIMIT_MAX}, not {limit!r}.",
            hint=f"Use a value up to {PROFILE_LIMIT_MAX}.",
        )
    profile = config.get("user_research_profile", "")
    if not isinstance(profile, str):
        raise ValidationError(
            f"user_research_profile must be a string, not {_type_name(profile)}.",
            hint="Use `zocrates-nb profile set --text '...'` or `zocrates-nb profile clear`.",
        )
    if len(profile) > limit:
        raise ValidationError(
            f"The research profile is {len(profile)} characters long; the limit is {limit} characters.",
            hint=f"Shorten it by {len(profile) - limit} characters.",
        )
    check_text("user_research_profile", profile, limit)
    for section in SECTIONS:
        check_section(section, config.get(section, {}))


def merge_defaults(config: dict) -> dict:
    """A deep copy of ``config`` with DEFAULT_CONFIG filled in where keys are missing."""
    merged = copy.deepcopy(config)
    for key, default in DEFAULT_CONFIG.items():
        if key not in merged:
            merged[key] = copy.deepcopy(default)
        elif key in _SECTIONS and isinstance(merged[key], dict):
            for sub, sub_default in default.items():
                merged[key].setdefault(sub, copy.deepcopy(sub_default))
    return merged


def apply_patch(config: dict, patch: dict) -> dict:
    """``config`` with ``patch`` applied: sections (llm, library, vectors) merge one level deep."""
    if not isinstance(patch, dict):
        raise ValidationError(f"A config update must be an object, not {_type_name(patch)}.", hint="Pass a dict.")
    updated = copy.deepcopy(config)
    for key, value in patch.items():
        if key in _SECTIONS and isinstance(value, dict) and isinstance(updated.get(key), dict):
            updated[key].update(copy.deepcopy(value))
        else:
            updated[key] = copy.deepcopy(value)
    return updated


def _refuse_non_json_constant(name: str) -> None:
    """``json.loads`` hook: NaN / Infinity are not JSON; a file holding them is damaged."""
    raise ValueError(f"non-standard JSON constant {name}")


# ----------------------------------------------------------------------------- the store


class ConfigStore:
    """Read and write one ``zocrates_config.json`` safely from many processes."""

    def __init__(self, path: Path, lock_path: Path | None = None, *, lock_timeout: float = _LOCK_TIMEOUT_S) -> None:
        self.path = Path(path)
        self.lock_path = Path(lock_path) if lock_path else self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._file_lock: FileLock | None = None
        self._mutex = threading.RLock()
        # (stat key, parsed document) as ONE attribute so a lock-free reader never pairs
        # one write's key with another write's data.
        self._cached: tuple[tuple[int, int, int] | None, dict] | None = None

    @classmethod
    def for_paths(cls, paths: DataPaths) -> ConfigStore:
        return cls(paths.config, paths.config_lock)

    def __repr__(self) -> str:
        return f"ConfigStore({str(self.path)!r})"

    # -- reading ---------------------------------------------------------------
    def read(self) -> dict:
        """The current config (a deep copy, defaults merged in). Missing file → defaults."""
        return merge_defaults(self._read_raw())

    def _read_raw(self) -> dict:
        """The parsed file as cached (not a copy: callers must copy before handing it out)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return {}
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        cached = self._cached
        if cached and cached[0] == key and time.time_ns() - st.st_mtime_ns > _RACY_WINDOW_NS:
            return cached[1]
        with self._mutex:  # double-checked: one thread loads, the others reuse its result
            cached = self._cached
            if cached and cached[0] == key and time.time_ns() - st.st_mtime_ns > _RACY_WINDOW_NS:
                return cached[1]
            data, loaded_key = self._load()
            self._cached = (loaded_key, data)
            return data

    def _load(self) -> tuple[dict, tuple[int, int, int] | None]:
        """Parse and validate the file; on damage keep a copy aside and raise ConfigError."""
        try:
            with open(self.path, "rb") as fh:
                st = os.fstat(fh.fileno())
                raw = fh.read()
        except FileNotFoundError:
            return {}, None
        except IsADirectoryError as exc:
            raise ConfigError(
                f"{self.path} is a folder, not the config file.",
                hint=f"Move the folder away (the config is re-created with the defaults), or restore the file "
                f"{self.path.name} from a backup.",
            ) from exc
        except OSError as exc:
            raise ConfigError(
                f"Cannot read {self.path}: {exc.strerror}.", hint="Check the file's permissions."
            ) from exc
        try:
            data = json.loads(raw.decode("utf-8"), parse_constant=_refuse_non_json_constant)
            validate_config(data)
        except (UnicodeDecodeError, ValueError, ValidationError) as exc:
            kept = self._keep_corrupt_copy(raw)
            reason = exc.message if isinstance(exc, ValidationError) else f"not valid JSON ({exc.__class__.__name__})"
            where = (
                f"A copy of the damaged file was kept at {kept}."
                if kept
                else "No copy of it could be kept (the directory cannot be written); the file itself is unchanged."
            )
            hint = (
                f"Fix it by hand, restore a backup over {self.path.name}, or run `zocrates-nb config reset` "
                "to start from the defaults (the copy stays)."
                if kept
                else f"Once the directory can be written again, fix {self.path.name} by hand, restore a backup "
                "over it, or reset the config to the defaults (config reset)."
            )
            raise ConfigError(f"The config file {self.path} is damaged: {reason}. {where}", hint=hint) from exc
        return data, (st.st_ino, st.st_size, st.st_mtime_ns)

    def _keep_corrupt_copy(self, raw: bytes) -> Path | None:
        """Copy the damaged bytes to ``<name>.corrupt-<timestamp>`` once per distinct content; None when
        the directory cannot take it (read-only, full: no partial copy is left behind either)."""
        digest = hashlib.sha256(raw).hexdigest()
        for existing in sorted(self.path.parent.glob(self.path.name + ".corrupt-*")):
            try:
                if hashlib.sha256(existing.read_bytes()).hexdigest() == digest:
                    return existing
            except OSError:
                continue
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{time.time_ns() % 1_000_000_000:09d}"
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(raw)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError:
            with contextlib.suppress(OSError):  # on a read-only mount even unlinking a missing file fails
                target.unlink(missing_ok=True)
            return None
        return target

    # -- writing ---------------------------------------------------------------
    def _lock(self) -> FileLock:
        if self._file_lock is None:
            self.lock_path.parent.mkdir(parents=True, exist_ok=True)
            self._file_lock = FileLock(str(self.lock_path), timeout=self.lock_timeout)
        return self._file_lock

    def update(self, patch: dict | Callable[[dict], dict]) -> dict:
        """Validate and atomically write the config changed by ``patch``; return the new config.

        ``patch`` is a dict (sections merge one level deep; other keys replace) or a
        function from the current config to the new one. Refused values raise
        ``ValidationError`` and leave the file untouched.
        """
        with self._mutex:
            try:
                with self._lock():
                    current, _ = self._load()  # fresh from disk under the lock: no lost updates
                    base = merge_defaults(current)
                    new = patch(copy.deepcopy(base)) if callable(patch) else apply_patch(base, patch)
                    validate_config(new)
                    self._cached = (self._write_atomic(new), copy.deepcopy(new))
            except Timeout as exc:
                raise ConfigError(
                    f"Another process has held the config lock {self.lock_path} for over {self.lock_timeout:g} s.",
                    hint="Wait for the other kernel or command to finish, then try again.",
                ) from exc
            except OSError as exc:  # a full disk or a read-only directory: the old file is still whole
                if problem := write_problem(self.path, exc):
                    # said as a refusal: the old file is whole (no errno or lock-file name for the user)
                    raise refused(f"change the settings in {self.path.name}", self.path.parent, problem) from exc
                raise
        return merge_defaults(new)

    def reset(self) -> dict:
        """Write the defaults, keeping a copy of a damaged file aside first. The recovery path."""
        with self._mutex:
            with self._lock():
                try:
                    self._load()
                except ConfigError:
                    pass  # _load already kept the damaged bytes aside; the message told the user where
                new = copy.deepcopy(DEFAULT_CONFIG)
                self._cached = (self._write_atomic(new), copy.deepcopy(new))
        return new

    def _write_atomic(self, config: dict) -> tuple[int, int, int]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._remove_stale_temps()
        try:  # standard JSON only: NaN/Infinity and lone surrogates are refused, never written
            data = (json.dumps(config, indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n").encode(
                "utf-8"
            )
        except (ValueError, UnicodeEncodeError) as exc:
            raise ValidationError(
                f"The config cannot be written as standard JSON ({exc.__class__.__name__}: "
                "NaN, Infinity or an invalid character).",
                hint="Use finite numbers and plain text.",
            ) from exc
        st = write_atomically(self.path, data)
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _remove_stale_temps(self) -> None:
        """Temp files left by a writer killed mid-write; safe to delete because we hold the lock."""
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            try:
                stale.unlink()
            except FileNotFoundError:
                pass

    # -- convenience -----------------------------------------------------------
    def profile(self) -> str:
        return self.read()["user_research_profile"]

    def profile_limit(self) -> int:
        return self.read()["max_research_profile_chars"]

    def set_profile(self, text: str) -> None:
        if not isinstance(text, str):
            raise ValidationError(f"The research profile must be a string, not {_type_name(text)}.", hint="Pass text.")
        self.update({"user_research_profile": text})

    def clear_profile(self) -> None:
        self.update({"user_research_profile": ""})

    def llm(self) -> LLMSettings:
        return LLMSettings.from_config(self.read())

    def set_llm(self, **fields: Any) -> None:
        """Change some LLM fields (``models``/``prices`` replace as a whole); unknown names are refused."""
        unknown = sorted(set(fields) - set(LLM_FIELDS))
        if unknown:
            raise ValidationError(
                f"Unknown llm field(s): {', '.join(unknown)}.", hint=f"Allowed llm fields: {', '.join(LLM_FIELDS)}."
            )
        self.update({"llm": fields})

    def clear_llm(self) -> None:
        """Back to no LLM configured (the default llm section). secrets.json is not touched."""
        self.update(lambda config: {**config, "llm": copy.deepcopy(DEFAULT_CONFIG["llm"])})
