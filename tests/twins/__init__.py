"""Test twins: what stands in for a GPU and its libraries in the CPU tests and benchmarks. They are
not part of the package (`src/lepton`), so the wheel does not ship them."""
