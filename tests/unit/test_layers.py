"""Every module of the package sits in a layer and imports only from the layers below it; no two
modules import each other, directly or through others (function-level imports included)."""
from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "lepton"
# Lowest first. A module belongs to the unit that is the longest prefix of its name, and imports
# only from its own unit or from units in layers below that unit's layer.
LAYERS = [
    # no Lepton imports of their own: usable from any layer (`hooks.hook`: the `Hook` base and
    # `HookManager`, which the launch hook and the instrumentation backend's hook both build on;
    # `progress`: the line on stderr of slow work, a finalize or a load)
    {"errors", "units", "mode", "hooks.hook", "progress"},
    {"model"},  # pure data and pure functions, the runtime <-> backend time lines among them
    {"backends", "writers", "viewer"},  # collect kernels; model -> files; files -> terminal
    {"runtime"},  # the engine: hot path, sessions, registry, Python stacks, exit signals
    {"scopes", "states", "context", "data", "language"},  # the public API built on the runtime
    # the instrumentation backend's hook: it lives with its backend but, like the launch hook, drives
    # the runtime (Triton's callbacks -> scratch buffers and queued launches)
    {"backends.instrumentation.hook"},
    {"hooks"},  # other libraries' events turned into scopes and ops; Proton's import paths
    {"api"},  # start, activate, deactivate, finalize
    {"cli"},
    {"__init__", "__main__"},  # entry points: `lepton`, `python -m lepton` and `python -m lepton.viewer`
]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def modules_under(root: Path) -> dict[str, Path]:
    return {module_name(p, root): p for p in root.rglob("*.py")}


def imports_of(path: Path, root: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that a file imports, anywhere in it (relative imports resolved)."""
    package = list(path.relative_to(root).parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
            elif node.module and node.module.split(".")[0] == "lepton":
                base = []
            else:
                continue
            module = node.module.split(".") if node.module else []
            if module[:1] == ["lepton"] and not node.level:
                module = module[1:]
            targets = [base + module + [alias.name] for alias in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "lepton"]
        for dotted in targets:
            name = _longest_module(dotted, modules)
            if name is not None:
                found.add(name)
    return found - {module_name(path, root)}


def _longest_module(dotted: list[str], modules: dict[str, Path]) -> str | None:
    for end in range(len(dotted), 0, -1):
        name = ".".join(dotted[:end])
        if name in modules:
            return name
    return None


def import_graph(root: Path) -> dict[str, set[str]]:
    """{module: the package's modules it imports} of the package at `root`."""
    modules = modules_under(root)
    return {name: imports_of(path, root, modules) for name, path in modules.items()}


def unit_of(name: str, layers: list[set[str]] = LAYERS) -> str | None:
    """The layer unit of a module: the longest prefix of its name that a layer lists (`__main__`
    for an entry point), or None if no layer lists one."""
    if name.endswith("__main__"):
        return "__main__"
    units = set().union(*layers)
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in units:
            return ".".join(parts[:end])
    return None


def back_edges(graph: dict[str, set[str]], layers: list[set[str]] = LAYERS) -> list[str]:
    """Every import of a module from a unit that is not below its own, as `a imports b`."""
    layer_of = {unit: i for i, layer in enumerate(layers) for unit in layer}
    found = []
    for name in sorted(graph):
        own = unit_of(name, layers)
        for imported in sorted(graph[name]):
            theirs = unit_of(imported, layers)
            if theirs != own and layer_of[theirs] >= layer_of[own]:
                found.append(f"{name} imports {imported}, which is not below it")
    return found


def first_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A chain of imports that comes back to where it started, or None."""
    done, on_path = set(), []

    def visit(name: str) -> list[str] | None:
        if name in on_path:
            return on_path[on_path.index(name):] + [name]
        if name in done:
            return None
        on_path.append(name)
        for imported in sorted(graph[name]):
            if imported != name and not name.startswith(imported + "."):  # a package's own modules
                cycle = visit(imported)
                if cycle:
                    return cycle
        on_path.pop()
        done.add(name)
        return None

    for name in sorted(graph):
        cycle = visit(name)
        if cycle:
            return cycle
    return None


GRAPH = import_graph(SRC)


def test_every_module_is_in_a_layer():
    assert [m for m in GRAPH if m and unit_of(m) is None] == [], "place the new module in LAYERS"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_a_module_imports_only_from_layers_below_it(name):
    assert back_edges({name: GRAPH[name]}) == []


def test_no_module_imports_itself_through_others():
    assert first_cycle(GRAPH) is None


def test_the_layer_test_sees_imports():
    """The checks above mean something only if imports are found."""
    assert "runtime.hot_path" in GRAPH["runtime.registry"]
    assert "hooks.hook" in GRAPH["hooks.launch"]
    assert {"backends.base", "hooks.nvtx"} <= GRAPH["api"]
    assert {"runtime.registry", "backends.instrumentation.arena"} <= GRAPH["backends.instrumentation.hook"]


def test_the_checks_fail_on_a_planted_back_edge_and_cycle(tmp_path):
    """A package whose model imports the runtime, and whose runtime imports itself in a circle:
    the checks, run on its files, name both."""
    files = {
        "model/__init__.py": "",
        "model/tree.py": "from ..runtime import registry\n",
        "runtime/__init__.py": "",
        "runtime/registry.py": "from . import session\nfrom ..model import tree\n",
        "runtime/session.py": "from lepton.runtime.registry import REGISTRY\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    graph = import_graph(tmp_path)
    assert back_edges(graph) == ["model.tree imports runtime.registry, which is not below it"]
    assert first_cycle(graph) == ["model.tree", "runtime.registry", "model.tree"]
    assert first_cycle({"runtime.registry": {"runtime.session"}, "runtime.session": {"runtime.registry"}}) \
        == ["runtime.registry", "runtime.session", "runtime.registry"]


def test_a_backend_module_that_imports_the_runtime_is_a_back_edge():
    """Only the instrumentation hook, which the layers list by name, may reach up to the runtime."""
    assert back_edges({"backends.instrumentation.backend": {"runtime.registry"}}) != []
    assert back_edges({"backends.instrumentation.hook": {"runtime.registry"}}) == []
    assert back_edges({"backends.instrumentation.backend": {"backends.instrumentation.hook"}}) != []


def test_the_cli_reaches_the_sessions_only_through_the_api():
    """`lepton` uses `api.cli_sessions()`, never the registry itself."""
    assert "runtime.registry" not in GRAPH["cli.run"] | GRAPH["cli.view"]
    assert "api" in GRAPH["cli.run"]
