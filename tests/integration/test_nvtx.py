"""NVTX ranges become scopes (stand-in `torch.cuda.nvtx` module on the CPU)."""
from __future__ import annotations

import json
import sys
import types

import pytest

import lepton as proton


@pytest.fixture
def torch_nvtx(monkeypatch):
    calls = []
    mod = types.ModuleType("torch.cuda.nvtx")
    mod.range_push = lambda msg: calls.append(("push", msg)) or 0
    mod.range_pop = lambda: calls.append(("pop",)) or 0
    torch = types.ModuleType("torch")
    torch.cuda = types.ModuleType("torch.cuda")
    torch.cuda.nvtx = mod
    for name, m in (("torch", torch), ("torch.cuda", torch.cuda), ("torch.cuda.nvtx", mod)):
        monkeypatch.setitem(sys.modules, name, m)
    return mod, calls


def tree(path):
    with open(path) as f:
        return json.load(f)[0]


def test_nvtx_ranges_nest_as_scopes(torch_nvtx, fake):
    mod, calls = torch_nvtx
    proton.start("nvtx", backend="fake")
    with proton.scope("proton_scope"):
        mod.range_push("nvtx_range0")
        mod.range_push("nvtx_range1")
        fake().launch("add_kernel", 865)
        mod.range_pop()
        mod.range_pop()
    proton.finalize()
    assert calls == [("push", "nvtx_range0"), ("push", "nvtx_range1"), ("pop",), ("pop",)]
    node = tree("nvtx.hatchet")
    for name in ("proton_scope", "nvtx_range0", "nvtx_range1", "add_kernel"):
        (node,) = node["children"]
        assert node["frame"]["name"] == name
    assert not getattr(mod.range_push, "__lepton_wrapped__", False)  # unwrapped after finalize


def test_nvtx_can_be_turned_off(torch_nvtx, fake, monkeypatch):
    monkeypatch.setenv("LEPTON_ENABLE_NVTX", "0")
    mod, _ = torch_nvtx
    proton.start("off", backend="fake")
    with proton.scope("proton_scope"):
        mod.range_push("nvtx_range0")
        fake().launch("add_kernel", 865)
        mod.range_pop()
    proton.finalize()
    (scope,) = tree("off.hatchet")["children"]
    assert [c["frame"]["name"] for c in scope["children"]] == ["add_kernel"]
