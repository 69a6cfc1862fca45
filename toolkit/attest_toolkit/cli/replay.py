"""`attest replay`: placeholder module filled in by the engine work."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    del app
