"""The editor's folder state says when ignore rules leave (nearly) nothing of a folder (issue
"Round 3", item 13): the real `codeask serve` on a tree shipped with Debian's `/*` + `!/debian/`
`.gitignore` reports the file, the line and the override in `codeask/indexStatus`; an ordinary
tree reports nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.lsp_harness import session, wait_for

pytestmark = pytest.mark.slow

OPTIONS = {"embed": {"tiers": ["static"]}}


def loaded(state: dict[str, Any]) -> bool:
    return bool(state["folders"] and state["folders"][0]["state"] == "ready")


async def test_index_status_names_the_rule(tmp_path: Path, shared_cache: Path) -> None:
    root = tmp_path / "linux-6.1"
    for rel in ("arch/x86/boot/main.c", "kernel/sched/core.c", "mm/slab.c", "debian/rules"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("int f(void) { return 0; }\n")
    (root / "Makefile").write_text("all:\n")
    (root / ".gitignore").write_text("/*\n!/debian/\n")
    async with session([root], shared_cache, options=OPTIONS) as lsp:
        state = await wait_for(lsp.status, loaded, 60)
        note = state["folders"][0]["ignoreNote"]
        assert f"`/*` ({root / '.gitignore'}:1) excludes 5" in note
        assert "index.gitignore = false" in note


async def test_an_ordinary_folder_has_no_note(project: Path, shared_cache: Path) -> None:
    async with session([project], shared_cache, options=OPTIONS) as lsp:
        state = await wait_for(lsp.status, loaded, 60)
        assert "ignoreNote" not in state["folders"][0] or not state["folders"][0]["ignoreNote"]
