"""Writes `report/model.py`, the report's TypedDicts, from its shipped JSON schema.

`python -m attest_toolkit.report.modelgen` rewrites it; `tests/integration/test_report_model.py` fails when it is
stale. A small generator of our own rather than datamodel-code-generator: the schemas use a handful of
keywords, and a third-party generator's output changes with its version, which would make the staleness
check fail on an upgrade rather than on a schema change.
"""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..fixtures.document import atomic_write

# Each schema and the name of its top-level type. Only the report's: the policy's settings are looked
# up by rule name (`report/policy.py`), which a TypedDict's fixed keys do not fit, and the fixture and
# pull-request artifact schemas are read outside report/.
SCHEMAS = (("report-v2.schema.json", "Report"),)
LINE_CHARS = 110  # ruff's line length (pyproject.toml)
SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
HEADER = '''"""The report's shape as TypedDicts, generated from schemas/report-v2.schema.json (do not edit).

Regenerate after changing a schema: `python -m attest_toolkit.report.modelgen`
(tests/integration/test_report_model.py fails while this file is stale).
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict
'''


@dataclass
class _Module:
    """The classes written so far, each once, a referenced definition before its first user."""

    defs: dict[str, Any]
    aliases: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    named: set[str] = field(default_factory=set)

    def type_of(self, schema: dict[str, Any], name: str) -> str:
        """The Python type of `schema`; an object with properties becomes a class called `name`."""
        if "$ref" in schema:
            key = schema["$ref"].removeprefix("#/$defs/")
            return self.type_of(self.defs[key], _camel(key))
        if "const" in schema:
            return f"Literal[{json.dumps(schema['const'])}]"
        if "enum" in schema:  # named, so code that picks a value can say which set it picks from
            return self.alias(name, [json.dumps(v) for v in schema["enum"]])
        kinds = schema.get("type", "object")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        return " | ".join(self._kind(k, schema, name) for k in kinds)

    def _kind(self, kind: str, schema: dict[str, Any], name: str) -> str:
        if kind == "array":
            return f"list[{self.type_of(schema.get('items', {}), _singular(name))}]"
        if kind != "object":
            return SCALARS[kind]
        if "properties" in schema:
            return self.typed_dict(schema, name)
        values = schema.get("additionalProperties")
        inner = self.type_of(values, _singular(name)) if isinstance(values, dict) else "Any"
        return f"dict[str, {inner}]"

    def alias(self, name: str, values: list[str]) -> str:
        if name not in self.named:
            self.named.add(name)
            line = f"{name} = Literal[{', '.join(values)}]"
            exploded = "\n".join([f"{name} = Literal[", *(f"    {v}," for v in values), "]"])
            self.aliases.append(line if len(line) <= LINE_CHARS else exploded)
        return name

    def typed_dict(self, schema: dict[str, Any], name: str) -> str:
        """Writes the class once; required keys in a total base, the rest in a `total=False` class
        (`Required` needs Python 3.11, and the package supports 3.10)."""
        if name in self.named:
            return name
        self.named.add(name)
        required = set(schema.get("required", []))
        fields = {key: self.type_of(sub, name + _camel(key)) for key, sub in schema["properties"].items()}
        doc = schema.get("description")
        must = {k: t for k, t in fields.items() if k in required}
        may = {k: t for k, t in fields.items() if k not in required}
        if must and may:
            self.classes.append(_class(f"_{name}Required", "TypedDict", must, None))
            self.classes.append(_class(name, f"_{name}Required, total=False", may, doc))
        else:
            self.classes.append(_class(name, "TypedDict" if must else "TypedDict, total=False", fields, doc))
        return name


def _class(name: str, bases: str, fields: dict[str, str], doc: str | None) -> str:
    lines = [f"class {name}({bases}):"]
    if doc:
        lines += textwrap.wrap(doc, 100, initial_indent='    """', subsequent_indent="    ")
        lines[-1] += '"""'
        lines += [""] if fields else []
    lines += [f"    {key}: {kind}" for key, kind in fields.items()] or ["    pass"]
    return "\n".join(lines)


def _camel(key: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in key.replace("-", "_").split("_"))


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def schema_text(file: str) -> str:
    return resources.files("attest_toolkit").joinpath("schemas").joinpath(file).read_text(encoding="utf-8")


def generate() -> str:
    """The whole module's source, formatted as `ruff format` leaves it."""
    aliases: list[str] = []
    classes: list[str] = []
    for file, root in SCHEMAS:
        schema = json.loads(schema_text(file))
        module = _Module(schema.get("$defs", {}))
        module.typed_dict(schema, root)
        aliases += module.aliases
        classes += module.classes
    return HEADER + "\n" + "\n".join(aliases) + "\n" + "".join(f"\n\n{c}\n" for c in classes)


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else Path(__file__).with_name("model.py")
    atomic_write(target, generate(), mode=0o644)  # a source file, read by all
    print(f"{target}: written from {', '.join(file for file, _ in SCHEMAS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
