"""Code-shape rules the project holds itself to: no import circle (lazy and type-only imports
included), no function over 60 lines, a docstring on every public function and class of the core
packages, and no module outside `looper.target` reading the host."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "looper"
DOCUMENTED = ("transforms", "search", "poly")
INPUTS = PACKAGE / "kernels" / "polybench"  # package data: programs looper parses, not its code


def _code() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if INPUTS not in p.parents]


def _modules() -> dict[str, Path]:
    out = {}
    for path in _code():
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _runtime_nodes(tree: ast.AST):
    """Every node except those under `if TYPE_CHECKING:` (imports for annotations only)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and isinstance(child.test, ast.Name) and child.test.id == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Every looper module `name` imports, at module level or inside a function."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):  # `if TYPE_CHECKING:` imports too
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            mod = node.module or ""
            root = f"{base}.{mod}".strip(".") if node.level else mod
            targets = [root] + [f"{root}.{a.name}" for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in modules and t != name}
    return found


def test_no_import_circle():
    modules = _modules()
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    # a package's __init__ importing its own submodules is how a package exports: not a circle
    for m in graph:
        graph[m] = {t for t in graph[m] if not t.startswith(m + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                pytest.fail("import circle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_no_function_over_60_lines():
    long = []
    for path in _code():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 60:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, long


def test_public_definitions_of_the_core_packages_say_why():
    missing = []
    for sub in DOCUMENTED:
        for path in (PACKAGE / sub).rglob("*.py"):
            tree = ast.parse(path.read_text())
            if path.name != "__init__.py" and not ast.get_docstring(tree):
                missing.append(f"{path.relative_to(PACKAGE)} (module)")
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_") \
                        and not ast.get_docstring(node):
                    missing.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not missing, missing


HOST_READS = ("/proc/cpuinfo", "/sys/devices/system/cpu", "os.cpu_count", "sched_getaffinity", "getloadavg")


def test_only_the_target_reads_the_host():
    """The machine is a value (`looper.target.Target`) passed down: nothing else reads it."""
    readers = [f"{name}: {what}" for name, path in _modules().items() if not name.startswith("looper.target")
               for what in HOST_READS if what in path.read_text()]
    assert readers == []
