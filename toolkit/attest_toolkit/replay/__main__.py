"""`attest-engine` and `python -m attest_toolkit.replay`.

The ways a helper starts an engine, `serve` (and `serve --socket PATH`) and `replay --serve`, are on
every test run's critical path, so they are dispatched here without typer (and with aiohttp's CA
store left unloaded until a call goes live, see `proxy.ca_store.engine_process`); every other use,
and any argument these forms do not take, goes through the typer CLI (`cli.engine`), which also
gives the usage errors.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from ..proxy.ca_store import engine_process
from .claimed import serve_socket

# The options `replay --serve` takes, by spelling: the option's key, and whether it takes a value.
_SERVE_OPTIONS = {
    "--name": ("name", True),
    "-n": ("name", True),
    "--fixture": ("fixture", True),
    "--fixtures-dir": ("fixtures_dir", True),
    "--mode": ("mode", True),
    "--no-live": ("no_live", False),
    "--serve": ("serve", False),
}


def serve_options(args: Sequence[str]) -> dict[str, list[str]] | None:
    """The options of a plain `replay --serve` invocation; None for anything else."""
    found: dict[str, list[str]] = {}
    rest = list(args)
    while rest:
        word = rest.pop(0)
        spelling, _, inline = word.partition("=")
        if spelling not in _SERVE_OPTIONS:
            return None
        key, takes_value = _SERVE_OPTIONS[spelling]
        if not takes_value:
            if inline:
                return None
            found.setdefault(key, []).append("")
            continue
        if not inline and not rest:
            return None
        found.setdefault(key, []).append(inline or rest.pop(0))
    return found if "serve" in found else None


def fast_path(argv: Sequence[str]) -> Callable[[], int] | None:
    """The engine run for `serve` or a plain `replay --serve`, without the CLI layer; else None."""
    if list(argv) == ["serve"]:
        return _serve_control
    claimed = socket_path(argv)
    if claimed:
        return lambda: serve_socket(claimed)
    options = serve_options(argv[1:]) if argv[:1] == ["replay"] else None
    if options is None or len(options.get("mode", [])) > 1 or len(options.get("fixtures_dir", [])) > 1:
        return None
    return lambda: _serve_one(options)


def socket_path(argv: Sequence[str]) -> str | None:
    """PATH of `serve --socket PATH` (or `--socket=PATH`); None for anything else."""
    words = list(argv)
    if words[:2] == ["serve", "--socket"] and len(words) == 3:
        return words[2] or None
    if len(words) == 2 and words[0] == "serve" and words[1].startswith("--socket="):
        return words[1].removeprefix("--socket=") or None
    return None


def _serve_control() -> int:
    from .runner import serve_control

    engine_process()
    serve_control()
    # Served, stopped and cleaned up (Engine.stop): what is left is the interpreter freeing every module,
    # about 15 ms its runner would wait for at the end of every run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _serve_one(options: dict[str, list[str]]) -> int:
    from ..errors import AttestError
    from .runner import resolve_fixtures, resolve_mode

    try:
        dirs = options.get("fixtures_dir")
        fixtures = resolve_fixtures(
            options.get("name", []), options.get("fixture", []), dirs[0] if dirs else None
        )
        mode = resolve_mode(next(iter(options.get("mode", [])), None))
        from .runner import serve

        engine_process()
        summary = serve(fixtures, mode, "no_live" in options)
    except AttestError as exc:
        print(f"attest-engine: {exc}", file=sys.stderr)
        return exc.exit_code
    return 1 if summary["misses"] else 0


def main() -> None:
    run = fast_path(sys.argv[1:])
    if run is not None:
        sys.exit(run())
    from ..cli.engine import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
