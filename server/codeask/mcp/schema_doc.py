"""The tools' reference in docs/mcp.md, rendered from the server itself (names, descriptions,
JSON schemas): `python -m codeask.mcp.schema_doc` prints it; tests/mcp/test_schema_doc.py
fails when the document no longer shows what the server lists."""

from __future__ import annotations

import json

from codeask.mcp.server import build_server


def render() -> str:
    """One section per tool: its description, then its input schema (one line a property)."""
    out: list[str] = []
    for tool in build_server([]).listing():
        schema = tool["inputSchema"]
        props = [
            f'    "{name}": '
            + json.dumps(
                {k: v for k, v in spec.items() if k != "title"}, ensure_ascii=False, sort_keys=True
            )
            for name, spec in schema.get("properties", {}).items()
        ]
        body = ",\n".join(props) + ("\n" if props else "")
        required = json.dumps(schema.get("required", []))
        out += [
            f"### `{tool['name']}`\n",
            f"{tool['description']}\n",
            "```json",
            '{\n  "type": "object",\n  "required": '
            + required
            + ',\n  "properties": {\n'
            + body
            + "  }\n}",
            "```\n",
        ]
    return "\n".join(out)


if __name__ == "__main__":
    print(render())
