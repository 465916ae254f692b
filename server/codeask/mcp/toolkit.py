"""Tools as MCP lists and calls them: a name, a description, an arguments type (a
`msgspec.Struct` whose fields carry their bounds and descriptions), and a function.

The JSON Schema an agent reads is msgspec's, shaped as the MCP SDK's pydantic models shaped it
before (docs/mcp.md: names and arguments are a contract): an inline object schema titled
`<tool>Arguments`, each property titled from its name, no `required` when nothing is. The same
type validates the call's arguments (`msgspec.convert`, lax as pydantic was: `"5"` and `5.0`
are 5; unknown arguments are ignored), so the schema and the check cannot disagree.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

log = logging.getLogger("codeask.mcp")


class ToolError(Exception):
    """A tool's failure the agent should read (bad argument, refused path): its text becomes
    the tool's error result."""


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[msgspec.Struct]
    run: Callable[[Any], str]
    """Takes the validated arguments; answers the text the agent reads."""
    annotations: dict[str, Any] = field(default_factory=dict)

    def listing(self) -> dict[str, Any]:
        """This tool as `tools/list` shows it."""
        entry: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": input_schema(self.name, self.arguments),
        }
        if self.annotations:
            entry["annotations"] = dict(self.annotations)
        return entry

    def call(self, given: dict[str, Any]) -> dict[str, Any]:
        """A `tools/call` result: the text, or `isError` with the reason (never raises)."""
        try:
            checked = msgspec.convert(given, self.arguments, strict=False)
        except msgspec.ValidationError as exc:
            log.info("tool %r rejected arguments: %s", self.name, exc)
            return error_result(f"Error executing tool {self.name}: {_readable(exc)}")
        try:
            text = self.run(checked)
        except ToolError as exc:
            log.info("tool %r failed: %r", self.name, str(exc))
            return error_result(f"Error executing tool {self.name}: {exc}")
        except Exception:  # a crash: its text stays in the log, never reaches the agent
            log.exception("tool %r raised an unexpected exception", self.name)
            return error_result(f"Error executing tool {self.name}")
        return {"content": [{"type": "text", "text": text}], "isError": False}


def error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def input_schema(tool: str, arguments: type[msgspec.Struct]) -> dict[str, Any]:
    """The arguments' JSON Schema as one inline object (no `$ref`): MCP clients read
    `inputSchema.properties` directly."""
    schema = msgspec.json.schema(arguments)
    body: dict[str, Any] = dict(schema["$defs"][arguments.__name__])
    if "$defs" in body or any("$ref" in str(p) for p in body.get("properties", {}).values()):
        raise ValueError(f"{tool}: arguments must be flat (no nested types)")
    body["title"] = f"{tool}Arguments"
    body["properties"] = {
        name: {**spec, "title": name.replace("_", " ").title()}
        for name, spec in body.get("properties", {}).items()
    }
    if not body.get("required"):
        body.pop("required", None)
    return body


def _readable(exc: msgspec.ValidationError) -> str:
    """msgspec's "Expected `int` >= 1 - at `$.k`" as "`k`: Expected `int` >= 1"."""
    text = str(exc)
    message, sep, where = text.rpartition(" - at `$.")
    if sep and where.endswith("`"):
        return f"`{where[:-1]}`: {message}"
    return text
