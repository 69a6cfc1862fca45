"""`python -m attest_toolkit.sandbox`: the inner step, run inside the namespace."""

from .inner import main

main()
