"""`python -m attest_toolkit.cli`: the `attest` command, for re-running itself inside a sandbox."""

from . import main

main()
