"""The viewer reads files and prints; it imports nothing that profiles (lepton.collect, sessions),
and nothing beyond numpy, msgpack and the standard library (no pandas, no hatchet)."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "lepton"
VIEWER_FILES = sorted((SRC / "viewer").glob("*.py")) + [SRC / "cli" / "view.py"]
ALLOWED_LEPTON = {"lepton.viewer", "lepton.units", "lepton.cli.view"}
ALLOWED_PACKAGES = {"numpy", "msgpack", "__future__"}


def imported_modules(path: Path) -> set[str]:
    """Absolute names of everything `path` imports (relative imports resolved)."""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("path", VIEWER_FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_viewer_modules_import_only_the_viewer_units_numpy_msgpack_and_the_stdlib(path):
    for name in imported_modules(path):
        top = name.split(".")[0]
        if top == "lepton":
            assert any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED_LEPTON), name
        else:
            assert top in ALLOWED_PACKAGES or top in sys.stdlib_module_names, name


def test_the_scan_sees_relative_imports():
    names = imported_modules(SRC / "viewer" / "derive.py")
    assert "lepton.units" in names and "lepton.viewer.specs" in names
