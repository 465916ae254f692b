"""docs/mcp.md shows the tools exactly as the server lists them (names, descriptions, schemas):
the names and arguments are a contract with every agent configured against them."""

from __future__ import annotations

import re
from pathlib import Path

from codeask.mcp.schema_doc import render
from codeask.mcp.server import build_server

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def test_the_document_shows_the_served_schemas() -> None:
    rendered = render()
    listed = [tool["name"] for tool in build_server([]).listing()]
    assert re.findall(r"^### `(\w+)`$", rendered, re.MULTILINE) == listed
    assert rendered in DOC.read_text(encoding="utf-8"), (
        "docs/mcp.md is stale: paste `python -m codeask.mcp.schema_doc` into its last section"
    )
