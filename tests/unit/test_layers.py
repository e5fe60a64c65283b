"""Layers import downward only: model <- collect, writers, viewer <- runtime/api/hooks <- cli."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "lepton"
LEAVES = {"errors", "units"}  # no Lepton imports of their own: usable from any layer
ALLOWED = {
    "model": {"model"},
    "collect": {"model", "collect"},
    "writers": {"model", "writers"},
    "viewer": {"model", "viewer"},
}


def lepton_imports(path: Path) -> set[str]:
    """The top-level Lepton modules/packages a file imports (relative imports resolved)."""
    package = path.relative_to(SRC).parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                parts = base + (node.module.split(".") if node.module else [])
                if not node.module:  # "from . import x": x is a module of `base`
                    parts = base + [node.names[0].name]
            elif node.module and node.module.split(".")[0] == "lepton":
                parts = node.module.split(".")[1:]
            else:
                continue
            if parts:
                found.add(parts[0])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "lepton" and "." in alias.name:
                    found.add(alias.name.split(".")[1])
    return found


# `python -m lepton.viewer` runs the lepton-view command: an entry point, above every layer.
ENTRY_POINTS = {SRC / "__main__.py", SRC / "viewer" / "__main__.py"}


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_a_layer_imports_only_what_is_below_it(layer):
    for path in sorted(set((SRC / layer).rglob("*.py")) - ENTRY_POINTS):
        imported = {m.removesuffix(".py") for m in lepton_imports(path)} - LEAVES
        assert imported <= ALLOWED[layer], f"{path.relative_to(SRC)} imports {sorted(imported - ALLOWED[layer])}"


def test_nothing_below_the_cli_imports_it():
    for path in set(SRC.rglob("*.py")) - ENTRY_POINTS:
        if path.relative_to(SRC).parts[0] != "cli":
            assert "cli" not in lepton_imports(path), path
