"""Print the lint baseline blocks for pyproject.toml from what the code violates today.

Why: the guards (ruff, ruff format, mypy) were added before the house refactor, so `make lint` would fail on
code that predates them. The baseline lists, per file, exactly the rule codes that file still violates; the
refactor deletes entries as it fixes them. Regenerate only after a merge brought in code written before the
guards existed, never to hide a new violation:

    .venv/bin/python scripts/lint_baseline.py [--write]

prints three TOML blocks (ruff per-file-ignores, ruff format exclusions, mypy error-code overrides);
`--write` replaces the blocks marked "baseline before the house refactor" at the end of pyproject.toml.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MYPY_ERROR = re.compile(r"^(?P<path>[^:]+\.py):\d+: error: .*\[(?P<code>[a-z-]+)\]$")


def _run(*args: str) -> str:
    """Run a lint tool from this interpreter's environment with the baselines switched off."""
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False).stdout


def ruff_codes() -> dict[str, set[str]]:
    """Rule codes per file that `ruff check` reports when no per-file ignores apply."""
    out = _run(
        str(BIN / "ruff"),
        "check",
        "--output-format",
        "json",
        "--exit-zero",
        "--config",
        "lint.per-file-ignores = {}",
        ".",
    )
    codes: dict[str, set[str]] = defaultdict(set)
    for item in json.loads(out or "[]"):
        codes[Path(item["filename"]).resolve().relative_to(ROOT).as_posix()].add(item["code"])
    return codes


def unformatted_files() -> list[str]:
    """Files `ruff format --check` would rewrite."""
    out = _run(
        str(BIN / "ruff"), "format", "--check", "--output-format", "concise", "--config", "format.exclude = []", "."
    )
    return sorted({line.split(":", 1)[0] for line in out.splitlines() if "unformatted:" in line})


def _ini_value(value: object) -> str:
    """One mypy setting as ini text."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def _mypy_ini_without_baseline() -> str:
    """pyproject's mypy settings as an ini file, leaving out the baseline's `disable_error_code` overrides."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    overrides = settings.pop("overrides", [])
    lines = ["[mypy]", *(f"{key} = {_ini_value(value)}" for key, value in settings.items())]
    for override in overrides:
        if "disable_error_code" in override:
            continue
        modules = override.pop("module")
        lines.append(f"[mypy-{_ini_value(modules)}]")
        lines += [f"{key} = {_ini_value(value)}" for key, value in override.items()]
    return "\n".join(lines) + "\n"


def mypy_codes() -> dict[str, set[str]]:
    """Error codes per module that mypy reports with the baseline overrides left out."""
    with tempfile.NamedTemporaryFile("w", suffix=".ini", delete=False) as config:
        config.write(_mypy_ini_without_baseline())
    try:
        out = _run(str(BIN / "mypy"), "--config-file", config.name, "--no-incremental")
    finally:
        Path(config.name).unlink()
    codes: dict[str, set[str]] = defaultdict(set)
    for line in out.splitlines():
        match = MYPY_ERROR.match(line)
        if match:
            codes[match["path"].removesuffix(".py").replace("/", ".")].add(match["code"])
    return codes


def baseline_blocks() -> str:
    """The three baseline blocks as TOML text."""
    lines = [
        "[tool.ruff.lint.per-file-ignores]",
        "# baseline before the house refactor: rule codes each file violated when the guards were added",
    ]
    lines += [f'"{path}" = {json.dumps(sorted(codes))}' for path, codes in sorted(ruff_codes().items())]
    lines += ["", "[tool.ruff.format]", "# baseline before the house refactor: files not yet in ruff format's style"]
    lines += ["exclude = [", *(f'  "{path}",' for path in unformatted_files()), "]"]
    for module, codes in sorted(mypy_codes().items()):
        lines += ["", "[[tool.mypy.overrides]]  # baseline before the house refactor", f'module = "{module}"']
        lines.append(f"disable_error_code = {json.dumps(sorted(codes))}")
    return "\n".join(lines) + "\n"


def main() -> None:
    """Print the baseline blocks, or with --write replace them at the end of pyproject.toml."""
    blocks = baseline_blocks()
    if sys.argv[1:] != ["--write"]:
        print(blocks, end="")
        return
    pyproject = ROOT / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    start = text.index("[tool.ruff.lint.per-file-ignores]")  # the baseline is the file's last section
    pyproject.write_text(text[:start] + blocks, encoding="utf-8")
    print(f"baseline rewritten in {pyproject}")


if __name__ == "__main__":
    main()
