"""A type checker sees Lepton's public names as what they are, not as `Any` (the package loads them
lazily at run time, through `__getattr__`)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")


def revealed_types(tmp_path: Path, code: str) -> list[str]:
    """What mypy's `reveal_type` says of each revealed expression in `code`, in order."""
    (tmp_path / "snippet.py").write_text(textwrap.dedent(code))
    env = {**os.environ, "MYPYPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-m", "mypy", "--follow-imports=silent", "--ignore-missing-imports",
                          "--cache-dir", str(tmp_path / "cache"), "snippet.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    return [line.split("Revealed type is ", 1)[1].strip('"') for line in out.stdout.splitlines()
            if "Revealed type is" in line]


def test_the_public_functions_have_their_real_signatures(tmp_path):
    start, scope, finalize, get = revealed_types(tmp_path, """
        import lepton
        import lepton as proton

        reveal_type(lepton.start)
        reveal_type(proton.scope)
        reveal_type(proton.finalize)
        reveal_type(proton.data.get)
    """)
    assert start != "Any"
    assert start.startswith("def (name: str | os.PathLike") and start.endswith("-> int | None")
    assert "hot_path.scope" in scope
    assert finalize.endswith("-> builtins.list[builtins.str]") or finalize.endswith("-> list[str]")
    assert get.startswith("def (session:")
