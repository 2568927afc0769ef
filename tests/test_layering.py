"""Release gates read from the package tree, not from a list of modules: every module lives in a
package that says what it holds; packages import each other without a circle; nothing below a front
end imports one; only the TUI's packages import Textual; and no module imports itself back.

The imports are read from the source (``ast``): top-level, inside functions (imported lazily) and
under ``if TYPE_CHECKING:`` (annotations only, so left out of the runtime rules).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "scout_tui"

FRONT_ENDS = {"tui", "widgets", "frontends"}
"""The packages that show a session to a person or a program; the engine never imports them."""
TEXTUAL = {"tui", "widgets", "theming"}
"""The packages that may import Textual (themes are Textual themes)."""
TOP_LEVEL = {"scout_tui", "scout_tui.__main__", "scout_tui.cli", "scout_tui.compat"}
"""The modules outside every subpackage: the package, its entry points, and the one module that
names private library attributes (it imports nothing of scout_tui)."""


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # the module imported, dotted (``from a import b`` of a module ``a.b``: ``a.b``)
    lazy: bool  # inside a function: at call time
    typing_only: bool  # under ``if TYPE_CHECKING:``


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(module: str) -> Iterator[Import]:
    """Every import of ``module``'s source that names a module of scout_tui or a library."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                   for n in ast.walk(node)}
    lazy = {id(n) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            for n in ast.walk(node)}
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            yield Import(module, target, id(node) in lazy, id(node) in typing_only)


def package_of(module: str) -> str | None:
    """The subpackage of scout_tui that holds ``module`` (``scout_tui.engine.agent``: ``engine``);
    None for the top-level modules."""
    parts = module.split(".")
    if module in TOP_LEVEL or len(parts) < 2:
        return None
    return parts[1]


def runtime_imports() -> list[Import]:
    return [i for m in MODULES for i in imports(m) if not i.typing_only]


def package_edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = {}
    for i in runtime_imports():
        if not i.target.startswith("scout_tui"):
            continue
        a, b = package_of(i.module), package_of(i.target)
        if a is not None and b is not None and a != b:
            edges.setdefault((a, b), []).append(f"{i.module} imports {i.target}")
    return edges


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            component.append(v)
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_is_in_a_package_that_says_what_it_holds():
    loose = sorted(m for m in MODULES if package_of(m) is None and m not in TOP_LEVEL)
    assert loose == []
    for package in {package_of(m) for m in MODULES} - {None}:
        init = PACKAGE / str(package) / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), f"{package}/__init__.py says what it holds"


def test_packages_import_each_other_without_a_circle():
    graph: dict[str, set[str]] = {}
    for a, b in package_edges():
        graph.setdefault(a, set()).add(b)
    edges = package_edges()
    found = circles(graph)
    explained = [[f"{a} -> {b}: {edges[(a, b)][0]}" for a in circle for b in circle if (a, b) in edges]
                 for circle in found]
    assert found == [], explained


def test_nothing_below_a_front_end_imports_one():
    upward = [why for (a, b), whys in package_edges().items() if b in FRONT_ENDS and a not in FRONT_ENDS
              for why in whys]
    assert upward == []
    # a front end without a screen never reaches into the TUI's either
    across = [why for (a, b), whys in package_edges().items() if a == "frontends" and b in TEXTUAL for why in whys]
    assert across == []


def test_the_compatibility_module_imports_nothing_of_scout_tui():
    if "scout_tui.compat" in MODULES:
        assert [i.target for i in imports("scout_tui.compat") if i.target.startswith("scout_tui")] == []


def test_only_the_tui_packages_name_textual():
    named = [f"{i.module} imports {i.target}" for i in runtime_imports()
             if i.target.split(".")[0] == "textual" and package_of(i.module) not in TEXTUAL
             and i.module not in {"scout_tui.compat", "scout_tui.cli"}]
    assert named == []


def test_no_module_imports_itself_back():
    """Import circles between modules, counting imports made at call time too (a circle only a
    lazy import hides is still one: the two modules cannot be read or moved apart)."""
    graph: dict[str, set[str]] = {}
    for i in runtime_imports():
        if i.target in MODULES and i.target != i.module:
            graph.setdefault(i.module, set()).add(i.target)
    assert circles(graph) == []


def test_the_engine_imports_no_textual():
    """Importing every module outside the TUI's packages (as ``-p`` and ``acp`` do) loads no
    Textual module: read from the tree, so a new module is checked without being listed."""
    below = [m for m in MODULES if package_of(m) not in TEXTUAL and m not in TOP_LEVEL]
    code = "import sys\n" + "".join(f"import {m}\n" for m in below) + \
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
