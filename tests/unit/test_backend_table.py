"""The one table of backend names (`lepton.backends.base.BACKENDS`) that `start`, the CLI and the
registry read, and the extra backends the environment adds (how the tests add their fake)."""
from __future__ import annotations

import pytest
from twins.fake_backend import FakeBackend

from lepton.backends.base import (
    BACKENDS,
    EXTRA_BACKENDS_VARIABLE,
    backend_entry,
    backend_factory,
    backend_names,
    extra_backends,
)
from lepton.errors import UsageError


def test_the_table_names_the_shipped_backends_and_each_entry_leads_to_its_factory():
    assert sorted(BACKENDS) == ["cpu", "cupti", "instrumentation"]
    assert [name for name, entry in BACKENDS.items() if entry.needs_gpu] == ["cupti", "instrumentation"]
    assert all(callable(backend_factory(name)) for name in BACKENDS)
    assert backend_factory("CPU")("").name == "cpu"


def test_without_extra_backends_only_the_shipped_ones_are_known(monkeypatch):
    monkeypatch.delenv(EXTRA_BACKENDS_VARIABLE)
    assert backend_names() == ["cpu", "cupti", "instrumentation"]
    assert backend_entry("fake") is None and backend_factory("fake") is None


def test_extra_backends_come_from_the_environment_and_never_replace_a_shipped_one(monkeypatch):
    monkeypatch.setenv(EXTRA_BACKENDS_VARIABLE, "fake=twins.fake_backend:FakeBackend, cupti=twins.fake_backend:FakeBackend")
    assert backend_names() == ["cpu", "cupti", "fake", "instrumentation"]
    assert backend_factory("Fake") is FakeBackend
    assert backend_entry("cupti") == BACKENDS["cupti"]


@pytest.mark.parametrize("text", ["fake", "fake=twins.fake_backend", "=twins.fake_backend:FakeBackend"])
def test_a_malformed_extra_backend_is_refused_in_one_line(text):
    with pytest.raises(UsageError, match=f"^LEPTON_EXTRA_BACKENDS: '{text}' is not name=module:factory$"):
        extra_backends(text)
