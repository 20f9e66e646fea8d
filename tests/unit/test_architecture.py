"""The package's imports run one way (docs/dev/architecture.md): no two modules import each other,
directly or round a circle, and no module imports one on a floor above its own.

Every `import` statement counts, wherever it stands: at the top, inside a function (a lazy import
still ties the two modules) or under `if TYPE_CHECKING:` (a type-only import still says the lower
module knows the higher one). `python tests/unit/test_architecture.py` prints each module's floor
and imports, and the circles and upward imports found.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "xprof_widgets"

FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("errors", "_native")),
    ("profile", ("profile",)),
    ("trace and analysis", ("trace", "analysis", "synthetic")),
    ("pod", ("pod",)),
    ("entry", ("opening",)),
    ("registry", ("tools",)),
    ("widgets", ("widgets",)),
    ("face", ("", "magics", "demo", "hta_face")),
)
"""Lowest first; a module may import its own floor and those below. The names are the first part
after `xprof_widgets.` ("" is the package's `__init__`)."""


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every .py below `root` (a package's `__init__` is its name)."""
    found = {}
    for path in root.rglob("*.py"):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(root: Path) -> dict[str, dict[str, int]]:
    """Module -> {imported module of the same package: line of the first such import}."""
    found = modules(root)
    edges: dict[str, dict[str, int]] = {name: {} for name in found}
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for target in _targets(node, package, found):
                for loaded in (*_packages_run(target, name, root.name, found), target):
                    if loaded != name:
                        edges[name].setdefault(loaded, node.lineno)
    return edges


def _packages_run(target: str, importer: str, top: str, known: Mapping[str, Path]) -> list[str]:
    """The packages whose `__init__` Python runs to load `target`: each one above it, but the
    top package (whose `__init__` only names things lazily) and the importer's own (already
    running). `import a.b.c` runs `a/b/__init__.py` first, so a circle through it is real."""
    parts = target.split(".")
    own = importer.split(".")
    return [package for depth in range(2, len(parts))
            if (package := ".".join(parts[:depth])) in known and package != top
            and own[:depth] != parts[:depth]]


def _targets(node: ast.AST, package: str, known: Mapping[str, Path]) -> list[str]:
    """The package's modules an import statement loads: `from a import b` is `a.b` when that is a
    module, else `a` (so `from . import x` does not tie a module to its package's `__init__`)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        parts = package.split(".")[:len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    named = [f"{base}.{alias.name}" for alias in node.names]
    return [target if target in known else base for target in named
            if target in known or base in known]


def floor_of(name: str, floors: Iterable[tuple[str, tuple[str, ...]]] = FLOORS) -> int:
    """The floor's index; KeyError names a module no floor holds."""
    head = name.split(".")[1] if "." in name else ""
    for level, (_, members) in enumerate(floors):
        if head in members:
            return level
    raise KeyError(f"{name}: on no floor of tests/unit/test_architecture.py FLOORS")


def circles(edges: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, rest = work[-1]
            step = next(rest, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(edges.get(step, {})))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = stack[stack.index(node):]
                del stack[stack.index(node):]
                if len(group) > 1:
                    found.append(sorted(group))
    return sorted(found)


def upward(edges: Mapping[str, Mapping[str, int]],
           floors: Iterable[tuple[str, tuple[str, ...]]] = FLOORS) -> list[str]:
    """`module:line -> module` for each import of a module on a higher floor."""
    floors = tuple(floors)
    return [f"{name}:{line} -> {target}" for name, targets in sorted(edges.items())
            for target, line in sorted(targets.items())
            if floor_of(target, floors) > floor_of(name, floors)]


def layout(edges: Mapping[str, Mapping[str, int]]) -> str:
    """Each module's floor and imports, then the circles and the upward imports."""
    lines = [f"{floor_of(name)} {name} -> {', '.join(sorted(targets))}"
             for name, targets in sorted(edges.items())]
    lines += [f"circle: {' <-> '.join(group)}" for group in circles(edges)]
    lines += [f"upward: {edge}" for edge in upward(edges)]
    return "\n".join(lines)


@pytest.fixture(scope="module")
def package_imports() -> dict[str, dict[str, int]]:
    return imports(PACKAGE)


def test_no_import_circle(package_imports):
    assert circles(package_imports) == []


def test_no_upward_import(package_imports):
    assert upward(package_imports) == []


def test_every_module_has_a_floor(package_imports):
    for name in package_imports:
        floor_of(name)


def test_the_walk_sees_lazy_and_type_only_imports(tmp_path):
    """The checks on a made-up package: a circle through a lazy import and a type-only import,
    and an upward import, are all found (so the tests above can fail)."""
    root = tmp_path / "pkg"
    (root / "low").mkdir(parents=True)
    (root / "high").mkdir()
    for package in (root, root / "low", root / "high"):
        (package / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("def f():\n    from . import b\n")
    (root / "low" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n")
    (root / "high" / "c.py").write_text("from ..low.a import f\n")
    (root / "low" / "d.py").write_text("import pkg.high.c\n")
    (root / "low" / "sub").mkdir()  # a circle only through a package's __init__
    (root / "low" / "sub" / "__init__.py").write_text("from ..e import g\n")
    (root / "low" / "sub" / "h.py").write_text("")
    (root / "low" / "e.py").write_text("def g():\n    from .sub import h\n")
    edges = imports(root)
    assert circles(edges) == [["pkg.low.a", "pkg.low.b"], ["pkg.low.e", "pkg.low.sub"]]
    assert upward(edges, (("low", ("low",)), ("high", ("high", "")))) == [
        "pkg.low.d:1 -> pkg.high", "pkg.low.d:1 -> pkg.high.c"]


if __name__ == "__main__":
    sys.exit(print(layout(imports(PACKAGE))))
