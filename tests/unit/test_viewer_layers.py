"""The viewer reads files and prints; it imports nothing that profiles (lepton.backends, lepton.runtime),
and nothing beyond numpy, msgpack and the standard library (no pandas, no hatchet). Only the
Python API's modules import pandas (when called), and hatchet for `to_hatchet`."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "lepton"
VIEWER_FILES = sorted((SRC / "viewer").glob("*.py")) + [SRC / "cli" / "view.py"]
# From the model: the hatchet vocabulary and the GC pause, both pure and free of imports. From the
# package: its version (`lepton-view --version`); `lepton/__init__.py` imports nothing at run time;
# the progress line of slow loads, which imports nothing of Lepton's.
ALLOWED_LEPTON = {"lepton.viewer", "lepton.units", "lepton.cli.view", "lepton.model.hatchet_names",
                  "lepton.model.gc_pause", "lepton.__version__", "lepton.progress"}
ALLOWED_EXACT = {"lepton"}
ALLOWED_PACKAGES = {"numpy", "msgpack", "__future__"}
PYTHON_API_FILES = {"frames.py", "python_api.py"}
PYTHON_API_PACKAGES = {"pandas", "hatchet"}


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
            assert name in ALLOWED_EXACT or any(name == allowed or name.startswith(allowed + ".")
                                                for allowed in ALLOWED_LEPTON), name
        else:
            allowed = ALLOWED_PACKAGES | (PYTHON_API_PACKAGES if path.name in PYTHON_API_FILES else set())
            assert top in allowed or top in sys.stdlib_module_names, name


def test_the_scan_sees_relative_imports():
    names = imported_modules(SRC / "viewer" / "derive.py")
    assert "lepton.units" in names and "lepton.viewer.specs" in names


def test_importing_the_viewer_and_lepton_view_loads_no_pandas():
    """pandas is an optional extra: lepton-view and `import lepton.viewer` must run without it."""
    code = "import sys, lepton.viewer, lepton.cli.view; print(sorted(m for m in ('pandas', 'hatchet') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(SRC.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip() == "[]"
