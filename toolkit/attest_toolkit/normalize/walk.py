"""One walk over a JSON value: secrets redacted everywhere, other text rewritten outside tool results.

Keys are visited in sorted order, so "first occurrence" means the same thing for a stored recording and
a live request whatever order the client wrote its keys in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..credentials.names import is_secret_key
from ..credentials.scan import REDACTED, Secrets

# The parts of a request that carry a tool's output back to the model: stored and compared literally.
TOOL_RESULT_TYPES = {
    "tool_result": "content",
    "function_call_output": "output",
    "custom_tool_call_output": "output",
}
TOOL_RESULT_ROLES = ("tool", "function")


def named_secret(node: dict[str, Any]) -> bool:
    """A `{"name": "api_key", "value": ...}` pair (a multipart form field, a header list entry): its
    value is a credential when its name is."""
    name = node.get("name")
    return isinstance(name, str) and "value" in node and is_secret_key(name)


def texts_of(value: Any) -> list[str]:
    """Every string and every key in `value`: what a walk would redact."""
    texts: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            texts.append(node)
        elif isinstance(node, dict):
            texts.extend(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return texts


def literal_key(node: dict[str, Any]) -> str | None:
    """The key of `node` that holds a tool result's contents, if `node` is a tool result."""
    kind = node.get("type")
    if isinstance(kind, str) and kind in TOOL_RESULT_TYPES:
        return TOOL_RESULT_TYPES[kind]
    if node.get("role") in TOOL_RESULT_ROLES:
        return "content"
    return None


class Walker:
    """Rebuilds a JSON value with every string redacted, then passed to `on_text` unless literal.

    With `tool_results=True` the contents of tool results are only redacted: never renumbered or
    neutralized, so a volatile value inside one must match the recording exactly.
    """

    __slots__ = ("_keys", "on_text", "redacting", "secrets")

    def __init__(
        self, secrets: Secrets, on_text: Callable[[str], str] | None = None, redacting: bool = True
    ) -> None:
        self.secrets = secrets
        self.on_text = on_text
        self.redacting = redacting  # False: the caller found no secret in any string or key of the value
        self._keys: dict[str, str] = {}  # keys repeat in every message: redact each once

    def _key(self, key: str) -> str:
        found = self._keys.get(key)
        if found is None:
            found = self._keys[key] = self.redact(key)
        return found

    def redact(self, text: str) -> str:
        return self.secrets.redact(text) if self.redacting else text

    def text(self, text: str) -> str:
        text = self.redact(text)
        return self.on_text(text) if self.on_text is not None else text

    def walk(self, value: Any, tool_results: bool = False, literal: bool = False) -> Any:
        if isinstance(value, str):
            return self.redact(value) if literal else self.text(value)
        if isinstance(value, dict):
            return self._dict(value, tool_results, literal)
        if isinstance(value, list):
            return [self.walk(item, tool_results, literal) for item in value]
        return value

    def walk_request(self, body: dict[str, Any], conversation_keys: tuple[str, ...]) -> dict[str, Any]:
        """A request body: tool results are recognized only under `conversation_keys` (messages, input)."""
        return self._dict(body, False, False, conversation_keys)

    def _dict(
        self, node: dict[str, Any], tool_results: bool, literal: bool, conversation_keys: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        inner = literal_key(node) if tool_results and not literal else None
        named = named_secret(node)
        out: dict[str, Any] = {}
        for key in sorted(node):
            value = node[key]
            name = self._key(key)
            if isinstance(value, str) and value and (is_secret_key(key) or (named and key == "value")):
                out[name] = REDACTED
            else:
                out[name] = self.walk(
                    value, tool_results or key in conversation_keys, literal or key == inner
                )
        return out
