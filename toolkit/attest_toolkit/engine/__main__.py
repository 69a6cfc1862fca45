"""`python -m attest_toolkit.engine serve`: the test runners' engine, started without the CLI layer.

Its start is on every test session's critical path, so it skips typer; every other use goes through
`attest-engine`.
"""

import sys

if sys.argv[1:] == ["serve"]:
    from .runner import serve_control

    serve_control()
else:
    from ..cli.engine import main

    main()
