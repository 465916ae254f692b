"""Generate the clients' protocol types and docs/protocol.md's tables from lsp/messages.py.

The msgspec Structs in messages.py are the one source of truth; their JSON schema
(msgspec.json.schema_components) becomes the TypeScript interfaces of the VS Code client, the
LuaCATS classes of the Neovim client and the tables of docs/protocol.md, so the three can no
longer drift apart. `--write` rewrites the checked-in outputs, `--check` fails naming a stale one
(tests/test_protocol_generated.py runs it).

    python -m codeask.lsp.protocol_gen --write | --check [--root REPO]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from codeask.lsp.messages import MESSAGES
from codeask.lsp.protocol_schema import TypeDef, method_constant, type_defs, walk_type

REPO = Path(__file__).resolve().parents[3]
TS_FILE = "editor-clients/vscode/src/core/protocol.generated.ts"
LUA_FILE = "editor-clients/neovim/lua/codeask/protocol.lua"
DOCS_FILE = "docs/protocol.md"
FILES = (TS_FILE, LUA_FILE, DOCS_FILE)
COMMAND = "python -m codeask.lsp.protocol_gen --write"
HEADER = f"Generated from server/codeask/lsp/messages.py by `{COMMAND}`: do not edit."


# ---- TypeScript -------------------------------------------------------------------------------
def _ts_type(schema: dict) -> str:
    return walk_type(
        schema,
        scalar={"string": "string", "integer": "number", "number": "number"}.get,
        array=lambda item: f"({item})[]" if " | " in item else f"{item}[]",
        mapping=lambda value: f"Record<string, {value}>",
        ref=lambda name: name,
        literal=lambda value: f'"{value}"',
        union=" | ",
    )


def _ts_doc(text: str, indent: str) -> list[str]:
    return [f"{indent}/** {text} */"] if text else []


def render_ts() -> str:
    """protocol.generated.ts: method names and one interface per Struct (wire names)."""
    lines = [f"/* {HEADER} */", ""]
    lines += [f'export const {method_constant(m.method)} = "{m.method}";' for m in MESSAGES]
    for td in type_defs():
        lines += ["", *_ts_doc(td.description, "")]
        if not td.fields:
            lines.append(f"export type {td.name} = Record<string, never>;")
            continue
        lines.append(f"export interface {td.name} {{")
        for f in td.fields:
            lines += _ts_doc(f.description, "  ")
            lines.append(f"  {f.name}{'' if f.required else '?'}: {_ts_type(f.schema)};")
        lines.append("}")
    return "\n".join(lines) + "\n"


# ---- Lua (LuaCATS) ----------------------------------------------------------------------------
def _lua_type(schema: dict) -> str:
    return walk_type(
        schema,
        scalar={"string": "string", "integer": "integer", "number": "number", "null": "nil"}.get,
        array=lambda item: f"({item})[]" if "|" in item else f"{item}[]",
        mapping=lambda value: f"table<string, {value}>",
        ref=lambda name: f"codeask.{name}",
        literal=lambda value: f"'{value}'",
        union="|",
    )


def render_lua() -> str:
    """lua/codeask/protocol.lua: method-name constants and `---@class` per Struct."""
    lines = [
        f"-- {HEADER}",
        "-- The codeask wire protocol (docs/protocol.md): method names and types.",
        "",
    ]
    for td in type_defs():
        lines.append(f"---@class codeask.{td.name}")
        for f in td.fields:
            doc = f" {f.description}" if f.description else ""
            lines.append(
                f"---@field {f.name}{'' if f.required else '?'} {_lua_type(f.schema)}{doc}"
            )
        lines.append("")
    lines.append("local M = {}")
    lines.append("")
    lines += [f"M.{method_constant(m.method)} = '{m.method}'" for m in MESSAGES]
    lines += ["", "return M"]
    return "\n".join(lines) + "\n"


# ---- docs/protocol.md -------------------------------------------------------------------------
def _md_type(schema: dict) -> str:
    return "`" + _ts_type(schema).replace("|", "\\|") + "`"


def _limits(schema: dict) -> str:
    """The schema's bounds of a field in words (the docs' limits column)."""
    found: list[str] = []

    def visit(node: dict) -> None:
        for option in node.get("anyOf", [node]):
            lo, hi = option.get("minLength"), option.get("maxLength")
            if lo is not None or hi is not None:
                found.append(f"{lo or 0}..{hi:,} chars" if hi is not None else f"≥ {lo} chars")
            lo, hi = option.get("minimum"), option.get("maximum")
            if lo is not None or hi is not None:
                found.append(f"{'' if lo is None else lo}..{'' if hi is None else hi}")

    visit(schema)
    return ", ".join(found)


def render_md_messages() -> str:
    """The table of custom messages: method, direction, params and result types."""
    rows = ["| method | kind | params | result |", "|---|---|---|---|"]
    for m in MESSAGES:
        kind, result = ("request", f"`{m.result.__name__}`") if m.result else ("notification", "—")
        rows.append(f"| `{m.method}` | {kind} | `{m.params.__name__}` | {result} |")
    return "\n".join(rows) + "\n"


def _md_table(td: TypeDef) -> list[str]:
    if not td.fields:
        return ["No fields: `{}` (or `null`)."]
    rows = ["| field | type | required | default | limits | description |", "|" + "---|" * 6]
    for f in td.fields:
        required = "yes" if f.required else "no"
        default = f.schema.get("default")
        shown = "" if default is None else f"`{json.dumps(default)}`"
        rows.append(
            f"| `{f.name}` | {_md_type(f.schema)} | {required} | {shown} | {_limits(f.schema)} | "
            f"{f.description} |"
        )
    return rows


def render_md_types() -> str:
    """One table per Struct, wire names, in the order the messages reach them."""
    lines: list[str] = []
    for td in type_defs():
        lines += [f"### {td.name}", "", td.description, "", *_md_table(td), ""]
    return "\n".join(lines)


def splice(text: str, name: str, body: str) -> str:
    """Replace what sits between `<!-- generated:NAME -->` and the next `<!-- /generated -->`."""
    pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- /generated -->)", re.S)
    if not pattern.search(text):
        raise SystemExit(f"{DOCS_FILE}: no <!-- generated:{name} --> ... <!-- /generated --> block")
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text, count=1)


def render_docs(current: str) -> str:
    """docs/protocol.md with its generated blocks refreshed; the prose is left as it is."""
    text = splice(current, "messages", render_md_messages())
    return splice(text, "types", render_md_types())


# ---- the command ------------------------------------------------------------------------------
def outputs(root: Path) -> dict[Path, Callable[[str], str]]:
    """Each checked-in output → how to build it from its current text."""
    return {
        root / TS_FILE: lambda _: render_ts(),
        root / LUA_FILE: lambda _: render_lua(),
        root / DOCS_FILE: render_docs,
    }


def stale(root: Path) -> list[Path]:
    """The outputs whose checked-in text differs from what the generator produces."""
    found = []
    for path, build in outputs(root).items():
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if build(current) != current:
            found.append(path)
    return found


def write(root: Path) -> list[Path]:
    """Rewrite the stale outputs; returns them."""
    changed = stale(root)
    for path in changed:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        path.write_text(outputs(root)[path](current), encoding="utf-8")
    return changed


def main(argv: list[str] | None = None) -> int:
    """`--write` rewrites the outputs; `--check` exits 1 naming each stale one."""
    parser = argparse.ArgumentParser(prog="python -m codeask.lsp.protocol_gen", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the generated files")
    mode.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    parser.add_argument("--root", type=Path, default=REPO, help="repository root")
    args = parser.parse_args(argv)
    if args.write:
        for path in write(args.root):
            print(f"wrote {path.relative_to(args.root)}")
        return 0
    bad = stale(args.root)
    for path in bad:
        print(f"stale: {path.relative_to(args.root)} (run `{COMMAND}`)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
