"""Shared test setup: GPU tests skip themselves without an NVIDIA GPU; no test may leak a session."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess

import pytest
from twins import FAKE_BACKEND

from lepton.backends.base import EXTRA_BACKENDS_VARIABLE

# `start(backend="fake")` and `lepton -b fake`: the tests' twin (tests/twins), named to Lepton through
# the environment so that the `lepton` processes the tests start know it too.
os.environ[EXTRA_BACKENDS_VARIABLE] = FAKE_BACKEND


@functools.lru_cache(maxsize=1)
def nvidia_gpu_visible() -> bool:
    # Asked in a subprocess so that this process does not initialise CUDA before the tests do.
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def pytest_collection_modifyitems(config, items):
    if nvidia_gpu_visible():
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (none visible: nvidia-smi -L found none)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def no_leaked_sessions(tmp_path, monkeypatch):
    """Runs each test in its own folder and fails a test that leaves a session open."""
    monkeypatch.chdir(tmp_path)
    yield
    from lepton.runtime.registry import REGISTRY

    leaked = sorted(REGISTRY.sessions)
    if leaked:
        REGISTRY.pin(None)
        REGISTRY.finalize(None, "")
        pytest.fail(f"test left sessions open: {leaked}")


@pytest.fixture
def fake():
    """Starts nothing; returns a function that gives the FakeBackend of the newest session."""
    from twins.fake_backend import FakeBackend

    return lambda: FakeBackend.instances[-1]


@pytest.fixture
def scripted_gpu(monkeypatch):
    """`start(backend="cupti")` and `start(backend="instrumentation")` find a GPU: the tests script
    what the backend asks of it."""
    from lepton.backends import cupti

    monkeypatch.setattr(cupti, "gpu_probe", lambda: (True, "a scripted GPU"))


@pytest.fixture
def knobs(monkeypatch):
    """A stand-in `triton.knobs` (see `triton_standin`); yields its `runtime`, where the launch
    hook installs itself."""
    from triton_standin import knobs_for_the_hook

    yield from knobs_for_the_hook(monkeypatch)


@pytest.fixture
def chained_knobs(monkeypatch):
    """`knobs` with Triton 3.6's chains of hooks (`triton_standin.HookChain`)."""
    from triton_standin import knobs_for_the_hook

    yield from knobs_for_the_hook(monkeypatch, chain=True)
