"""Test twins: what stands in for a GPU and its libraries in the CPU tests and benchmarks. They are
not part of the package (`src/lepton`), so the wheel does not ship them."""

# The fake backend, as `LEPTON_EXTRA_BACKENDS` names it (tests/conftest.py sets it for the tests'
# process and every process they start; benchmarks set it for themselves).
FAKE_BACKEND = "fake=twins.fake_backend:FakeBackend"
