"""Every module of the package sits in a layer and imports only from the layers below it; no two
modules import each other, directly or through others (function-level imports included)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "lepton"
# Lowest first. A top-level module or package imports only from layers below its own.
LAYERS = [
    {"errors", "units", "mode", "exit_signals"},  # no Lepton imports of their own: usable from any layer
    {"model"},  # pure data and pure functions
    {"collect", "writers", "viewer"},  # backends; model -> files; files -> terminal
    {"hot_path", "session"},  # what runs on every scope and launch; one session's data
    {"registry"},  # the sessions of the process
    {"scopes", "states", "context", "data", "language"},  # the public API built on them
    {"hooks"},  # other libraries' events turned into scopes and ops
    {"api"},  # start, activate, deactivate, finalize
    {"cli"},
    {"__init__", "__main__"},  # entry points: `lepton`, `python -m lepton` and `python -m lepton.viewer`
]
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def resolve(dotted: list[str]) -> str | None:
    """The longest prefix of `dotted` that is a module of the package."""
    for end in range(len(dotted), 0, -1):
        name = ".".join(dotted[:end])
        if name in MODULES:
            return name
    return None


def imports_of(path: Path) -> set[str]:
    """The package's modules that a file imports, anywhere in it (relative imports resolved)."""
    package = list(path.relative_to(SRC).parts[:-1])
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
            name = resolve(dotted)
            if name is not None:
                found.add(name)
    return found - {module_name(path)}


def top(name: str) -> str:
    """The layer's name of a module: its top-level package, or `__main__` for an entry point."""
    return "__main__" if name.endswith("__main__") else name.split(".")[0]


def test_every_module_is_in_a_layer():
    assert {top(m) for m in MODULES} - {""} <= set(LAYER_OF), "place the new module in LAYERS"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_imports_only_from_layers_below_it(name):
    own = LAYER_OF[top(name)]
    for imported in imports_of(MODULES[name]):
        if top(imported) != top(name):
            assert LAYER_OF[top(imported)] < own, f"{name} imports {imported}, which is not below it"


def test_no_module_imports_itself_through_others():
    graph = {name: imports_of(path) for name, path in MODULES.items()}
    done, on_path = set(), []

    def visit(name: str) -> None:
        if name in on_path:
            cycle = on_path[on_path.index(name):] + [name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        on_path.append(name)
        for imported in sorted(graph[name]):
            if imported != name and not name.startswith(imported + "."):  # a package's own modules
                visit(imported)
        on_path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_the_layer_test_sees_imports():
    """The checks above mean something only if imports are found."""
    assert "hot_path" in imports_of(MODULES["registry"])
    assert "hooks.hook" in imports_of(MODULES["hooks.launch"])
    assert {"collect.backend", "hooks.nvtx"} <= imports_of(MODULES["api"])
