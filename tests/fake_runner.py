"""How GitHub's runner reads what a step writes: workflow commands on stdout and GITHUB_OUTPUT.

Documented: a command is `::name k=v,k=v::data`; the runner unescapes `%25`, `%0D`, `%0A` in data and
also `%3A`, `%2C` in property values. GITHUB_OUTPUT holds `name=value` lines and `name<<DELIMITER`
blocks closed by a line that is exactly the delimiter.
"""

from __future__ import annotations

import re


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """(name, properties, data): properties end at the first `::` and split on `,` and `=`."""
    match = re.fullmatch(r"::(\w+)(?: ([^:]*))?::(.*)", line)
    assert match, f"not a workflow command: {line!r}"
    name, props, data = match.groups()
    properties = dict(p.split("=", 1) for p in props.split(",")) if props else {}
    return name, {k: unescape_property(v) for k, v in properties.items()}, unescape_data(data)


def parse_outputs(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if not line:
            continue
        heredoc = "<<" in line and ("=" not in line or line.index("<<") < line.index("="))
        if not heredoc:
            name, value = line.split("=", 1)
            values[name] = value
            continue
        name, delimiter = line.split("<<", 1)
        body = []
        for inner in lines:
            if inner == delimiter:
                break
            body.append(inner)
        else:
            raise AssertionError(f"delimiter {delimiter} is never closed")
        values[name] = "\n".join(body)
    return values
