"""`python -m lepton.viewer FILE`: the lepton-view command (see `lepton.cli.view`), as
`python -m triton.profiler.viewer` runs proton-viewer."""
from __future__ import annotations

from ..cli.view import console_main

if __name__ == "__main__":
    console_main()
