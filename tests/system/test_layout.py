"""The house rules that import-linter and ruff cannot check, read from the source with ``ast``.

import-linter keeps the layers (pyproject.toml) and ruff keeps complexity at 12; this file keeps the rest of
docs/development.md's layout rules: no import circle between modules (function-level imports count, since
moving an import into a function only hides a circle; imports under ``if TYPE_CHECKING:`` do not run and are
left out), no module over 400 lines, no folder over 12 modules, at most 12 loose modules at the package root,
no private name imported across modules, a docstring on every package, and tests that mirror the package.
Each check reports every offender at once, with what to do, so one run shows the whole job.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "zocrates_nb"
MAX_MODULE_LINES = 400
MAX_MODULES_PER_FOLDER = 12
MAX_ROOT_MODULES = 12
# Test folders that are not a stage of the package: the loopback stand-ins and the whole-system checks.
TEST_FOLDERS_WITHOUT_STAGE = {"fakes", "system"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth, skipping ``if TYPE_CHECKING:`` bodies."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if _is_type_checking_block(node):
            stack.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _base_of(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _imports(module: str, path: Path, known: set[str]) -> Iterator[tuple[str, str, int]]:
    """(imported module, imported name or "", line) for every runtime import of our own package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name, "", node.lineno
            continue
        base = _base_of(module, path, node)
        if base.split(".")[0] != "zocrates_nb":
            continue
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            if sub in known:
                yield sub, "", node.lineno
            elif base in known:
                yield base, alias.name, node.lineno


def _graph() -> dict[str, set[str]]:
    sources = _sources()
    known = set(sources)
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for module, path in sources.items():
        for target, _name, _line in _imports(module, path, known):
            if target != module:
                graph[module].add(target)
    return graph


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; returns the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_cycle_finder_sees_a_circle_and_a_clean_chain():
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _strongly_connected({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_import_circle_between_modules():
    graph = _graph()
    # A reader that found no imports would pass vacuously: the house has hundreds of arrows.
    assert sum(len(targets) for targets in graph.values()) > 300
    circles = _strongly_connected(graph)
    assert not circles, (
        "import circles (function-level imports included): "
        + "; ".join(" <-> ".join(c) for c in circles)
        + ". Move what both sides need into a lower module (docs/development.md)."
    )


def test_no_private_name_is_imported_across_modules():
    sources = _sources()
    known = set(sources)
    offenders: set[str] = set()
    for module, path in sources.items():
        for target, name, line in _imports(module, path, known):
            private_module = any(part.startswith("_") and not part.startswith("__") for part in target.split("."))
            private_name = name.startswith("_") and not name.startswith("__")
            if target != module and (private_module or private_name):
                offenders.add(f"{path.relative_to(REPO)}:{line} imports {target}{'.' + name if private_name else ''}")
    assert not offenders, (
        "private names used across modules (make them public and documented, or move them): "
        + "; ".join(sorted(offenders))
    )


def test_no_module_is_over_the_line_limit():
    long = {
        str(p.relative_to(REPO)): n
        for p in _sources().values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by responsibility): {long}"


def _folders() -> list[Path]:
    return [d for d in [PACKAGE, *PACKAGE.rglob("*")] if d.is_dir() and (d / "__init__.py").exists()]


def test_no_folder_holds_more_than_twelve_modules():
    crowded = {
        str(d.relative_to(REPO)): n
        for d in _folders()
        if d != PACKAGE and (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > MAX_MODULES_PER_FOLDER
    }
    assert not crowded, (
        f"folders with more than {MAX_MODULES_PER_FOLDER} modules (give a part its own folder): {crowded}"
    )


def test_the_package_root_keeps_only_the_public_face():
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= MAX_ROOT_MODULES, (
        f"{len(loose)} loose modules at the package root (at most {MAX_ROOT_MODULES}): {loose}. "
        "Move stage code into its stage's folder."
    )


def test_every_package_says_what_it_owns():
    silent = []
    for folder in _folders():
        init = folder / "__init__.py"
        if not ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))):
            silent.append(str(init.relative_to(REPO)))
    assert not silent, f"packages without a docstring saying what they own and may import: {silent}"


def test_tests_mirror_the_package():
    stages = {d.name for d in PACKAGE.iterdir() if (d / "__init__.py").exists()}
    folders = {d.name for d in (REPO / "tests").iterdir() if d.is_dir() and d.name != "__pycache__"}
    strays = sorted(folders - stages - TEST_FOLDERS_WITHOUT_STAGE)
    assert not strays, f"test folders with no matching stage in zocrates_nb/ (rename or move them): {strays}"
