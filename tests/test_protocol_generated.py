"""The generated protocol files (TS, Lua, docs tables) match lsp/messages.py's Structs.

When this fails, run `python -m codeask.lsp.protocol_gen --write` and commit the result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codeask.lsp import protocol_gen

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", protocol_gen.FILES)
def test_generated_file_is_current(name: str) -> None:
    """Each checked-in output is byte for byte what the generator produces now."""
    stale = [p.relative_to(REPO).as_posix() for p in protocol_gen.stale(REPO)]
    assert name not in stale, f"{name} is stale: run `{protocol_gen.COMMAND}`"


def test_check_names_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--check` exits 1 and names the file when an output drifted (here: a hand edit)."""
    for name in protocol_gen.FILES:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((REPO / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert protocol_gen.main(["--check", "--root", str(tmp_path)]) == 0
    lua = tmp_path / protocol_gen.LUA_FILE
    lua.write_text(lua.read_text(encoding="utf-8").replace("---@field query string", ""))
    assert protocol_gen.main(["--check", "--root", str(tmp_path)]) == 1
    assert protocol_gen.LUA_FILE in capsys.readouterr().err
    assert protocol_gen.main(["--write", "--root", str(tmp_path)]) == 0
    assert protocol_gen.stale(tmp_path) == []


def test_wire_names_and_optional_fields() -> None:
    """camelCase wire names; a field with a default is optional in both clients."""
    ts, lua = protocol_gen.render_ts(), protocol_gen.render_lua()
    assert "  streamToken?: string | number;" in ts
    assert "  indexState: IndexState;" in ts
    assert "---@field streamToken? string|integer" in lua
    assert "---@field promptTokens integer" in lua
    assert 'export const ASK_CODE = "workspace/askCode";' in ts
    assert "M.ASK_CODE = 'workspace/askCode'" in lua
