"""The policy verdict on its own (`attest policy evaluate`), and the words every rendering gives it."""

from __future__ import annotations

import json
from typing import Any, Literal

from .cells import limit_words


def blocking_rules(verdict: dict[str, Any]) -> str:
    names = sorted({r["rule"] for r in verdict["rules"] if r["status"] != "ok"})
    return f" ({', '.join(names)})" if names else ""


_VERDICT_COLUMNS = ("RULE", "SCOPE", "LIMIT", "ACTUAL", "RESULT", "TESTS")


def _verdict_cells(rule: dict[str, Any]) -> tuple[str, ...]:
    tests = rule["tests"]
    shown = ", ".join(tests[:3]) + (f" +{len(tests) - 3} more" if len(tests) > 3 else "")
    result = rule["status"].replace("_", " ") + (f" ({rule['detail']})" if rule.get("detail") else "")
    return (
        rule["rule"],
        rule["scope"],
        limit_words(rule["limit"]),
        limit_words(rule["actual"]),
        result,
        shown or "-",
    )


def verdict_rows(verdict: dict[str, Any]) -> list[str]:
    cells = [_VERDICT_COLUMNS, *(_verdict_cells(r) for r in verdict["rules"])]
    widths = [max(len(row[i]) for row in cells) for i in range(len(_VERDICT_COLUMNS) - 1)]
    return [
        "  " + "  ".join([*(c.ljust(w) for c, w in zip(row, widths, strict=False)), row[-1]]).rstrip()
        for row in cells
    ]


def render_verdict(verdict: Any, fmt: Literal["text", "json"] = "text") -> str:
    """The verdict as a readable table (the first line says pass, blocked or not_evaluated), or JSON."""
    data = verdict.to_dict() if hasattr(verdict, "to_dict") else verdict
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    lines = [
        f"attest policy: {data['verdict']}{blocking_rules(data)} · policy: {data['policy']}",
        *verdict_rows(data),
    ]
    return "\n".join(lines) + "\n"
