"""The protocol's types as read from messages.py's JSON schema, for protocol_gen's renderers.

Going through msgspec's schema (not the Python annotations) means the generated types use what
msgspec puts on the wire: camelCase renames, optional fields, enum values, bounds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from codeask.lsp.messages import MESSAGES

Schema = dict[str, Any]


@dataclass(frozen=True)
class Field:
    """One property of a Struct, by its wire name."""

    name: str
    schema: Schema
    """The property's schema; for an optional field, without the `null` its default adds."""
    required: bool
    description: str


@dataclass(frozen=True)
class TypeDef:
    """One Struct of the protocol."""

    name: str
    description: str
    fields: tuple[Field, ...]


def method_constant(method: str) -> str:
    """`workspace/semanticSearch` → `SEMANTIC_SEARCH` (the name both clients use)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", method.rsplit("/", 1)[-1]).upper()


def _field(name: str, schema: Schema, required: bool) -> Field:
    description = schema.get("description", "")
    options = schema.get("anyOf")
    if not required and options and schema.get("default", ...) is None:
        rest = [o for o in options if o != {"type": "null"}]
        schema = rest[0] if len(rest) == 1 else {"anyOf": rest}
    return Field(name, schema, required, description)


def _refs(schema: Any) -> list[str]:
    """The names a schema refers to, in order."""
    if isinstance(schema, dict):
        own = [schema["$ref"]] if "$ref" in schema else []
        return own + [r for value in schema.values() for r in _refs(value)]
    if isinstance(schema, list):
        return [r for value in schema for r in _refs(value)]
    return []


def type_defs() -> list[TypeDef]:
    """Every Struct the messages reach, depth first in MESSAGES order (a stable output order)."""
    roots = [t for m in MESSAGES for t in (m.params, m.result) if t is not None]
    _, components = msgspec.json.schema_components(roots, ref_template="{name}")
    order: list[str] = []

    def visit(name: str) -> None:
        if name not in order:
            order.append(name)
            for ref in _refs(components[name]):
                visit(ref)

    for root in roots:
        visit(root.__name__)
    defs = []
    for name in order:
        schema = components[name]
        required = set(schema.get("required", []))
        fields = tuple(
            _field(key, value, key in required) for key, value in schema["properties"].items()
        )
        defs.append(TypeDef(name, schema.get("description", ""), fields))
    return defs


def walk_type(
    schema: Schema,
    *,
    scalar: Callable[[str], str | None],
    array: Callable[[str], str],
    mapping: Callable[[str], str],
    ref: Callable[[str], str],
    literal: Callable[[str], str],
    union: str,
) -> str:
    """A schema as a type expression of a client language, built from that language's pieces."""

    def walk(node: Schema) -> str:
        if "$ref" in node:
            return ref(node["$ref"])
        if "anyOf" in node:
            return union.join(walk(option) for option in node["anyOf"])
        if "enum" in node:
            return union.join(literal(value) for value in node["enum"])
        kind = str(node.get("type", "unknown"))
        if kind == "array":
            return array(walk(node.get("items", {})))
        if kind == "object":
            return mapping(walk(node.get("additionalProperties", {})))
        return scalar(kind) or kind

    return walk(schema)
