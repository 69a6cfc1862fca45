"""The built-in price table (data/prices.json) and the day it was read.

Its own module, importing nothing of the package: `attest --version` prints the table's date and must
not load the providers and stream parsers that pricing a call needs (`pricing.cost`).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parent.parent / "data" / "prices.json"


@cache
def table() -> dict[str, Any]:
    return json.loads(TABLE.read_text(encoding="utf-8"))


def table_date() -> str:
    """The day the table's prices were read, shown wherever a cost is (version line, comment footer)."""
    return str(table()["date"])
