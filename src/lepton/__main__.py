"""`python -m lepton [options] TARGET [args]`: the same as the `lepton` command."""
from .cli.run import console_main

if __name__ == "__main__":
    console_main()
