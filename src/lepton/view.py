"""`python -m lepton.view FILE`: the lepton-view command (see `lepton.cli.view`)."""
from __future__ import annotations

from .cli.view import console_main

if __name__ == "__main__":
    console_main()
