"""A tree whose `.gitignore` ignores (nearly) everything says so (issue "Round 3", item 13).

Debian's kernel source tarball carries a `.gitignore` of `/*` and `!/debian/` (packaging
rules): `codeask index` indexed `debian/` alone and printed "… 100% embedded" without a word.
Now `codeask index`, `codeask status` and MCP's index_status name the file, the line and the
override (`index.gitignore = false`, or a `!` line in `.codeaskignore`). Real CLI processes and
a real `codeask mcp` on a real extracted tree; the LSP side is in tests/lsp/test_ignore_note.py.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from support import codeask as run_cli
from support import in_process_env
from support.mcp_harness import complete, mcp_session, server_env

KERNEL = {
    "Makefile": "VERSION = 6\nall:\n\t$(MAKE) -C kernel\n",
    "README": "Linux kernel\n",
    "arch/x86/boot/main.c": "int boot_main(void) { return setup_memory_map(); }\n",
    "drivers/net/loopback.c": "int loopback_transmit(void) { return 0; }\n",
    "kernel/sched/core.c": "void schedule_tasks(void) { pick_next_task(); }\n",
    "mm/slab.c": "void *slab_allocate(int size) { return 0; }\n",
    "debian/rules": "#!/usr/bin/make -f\n%:\n\tdh $@\n",
    "debian/control": "Source: linux\nSection: kernel\n",
    ".gitignore": "/*\n!/debian/\n",
}
SOURCES = {"arch/x86/boot/main.c", "drivers/net/loopback.c", "kernel/sched/core.c", "mm/slab.c"}


def codeask(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The real CLI, offline, with `env` on top of this environment minus CODEASK_*."""
    return run_cli(*args, cwd=cwd, env=in_process_env(HF_HUB_OFFLINE="1", **env), timeout=300)


@pytest.fixture
def tarball(tmp_path: Path) -> Path:
    """The tree as the tarball extracts it (not a git repository)."""
    root = tmp_path / "linux-6.1"
    for rel, text in KERNEL.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _index(root: Path, **env: str) -> dict[str, object]:
    run = codeask("index", "--lexical-only", "--json", str(root), cwd=root, **env)
    assert run.returncode == 0, run.stderr
    [summary] = json.loads(run.stdout)
    return summary


def _indexed_paths(root: Path, **env: str) -> set[str]:
    """Every path the index holds (a lexical search for each source's words)."""
    found: set[str] = set()
    for query in ("setup_memory_map", "loopback_transmit", "pick_next_task", "slab_allocate"):
        run = codeask(
            "search", query, "--json", "--no-daemon", "--mode", "lexical", cwd=root, **env
        )
        found |= {hit["relative_path"] for hit in json.loads(run.stdout)["results"]}
    return found


def test_index_and_status_name_the_rule_and_the_override(tarball: Path) -> None:
    run = codeask("index", "--lexical-only", str(tarball), cwd=tarball)
    assert run.returncode == 0, run.stderr
    note = run.stderr
    assert "warning: ignore rules leave out 7 of the 8 entries" in note, note
    assert f"`/*` ({tarball / '.gitignore'}:1)" in note
    assert "index.gitignore = false" in note and "`!/*` to .codeaskignore" in note
    status = codeask("status", cwd=tarball)
    assert f"warning: ignore rules leave out 7 of the 8 entries at the top of {tarball}" in (
        status.stdout
    )
    [row] = json.loads(codeask("status", "--json", cwd=tarball).stdout)
    assert f"({tarball / '.gitignore'}:1)" in row["ignore_note"]
    assert _indexed_paths(tarball) == set(), "the rules themselves are obeyed"


def test_index_gitignore_false_indexes_the_tree(tarball: Path) -> None:
    summary = _index(tarball, CODEASK_INDEX__GITIGNORE="false")
    assert summary["ignore_note"] == ""
    assert _indexed_paths(tarball, CODEASK_INDEX__GITIGNORE="false") == SOURCES
    status = codeask("status", cwd=tarball, CODEASK_INDEX__GITIGNORE="false")
    assert "warning" not in status.stdout


def test_a_codeaskignore_line_re_includes(tarball: Path) -> None:
    (tarball / ".codeaskignore").write_text("!/*\n")
    summary = _index(tarball)
    assert summary["ignore_note"] == ""
    assert _indexed_paths(tarball) == SOURCES


def test_a_repository_cannot_switch_gitignore_off(tarball: Path) -> None:
    """`index.gitignore` is protected: an untrusted `.codeask.toml` cannot make codeask index
    what git ignores (a hostile repository could expose a developer's ignored local files)."""
    (tarball / ".codeask.toml").write_text("[index]\ngitignore = false\n")
    summary = _index(tarball)
    assert "`/*`" in str(summary["ignore_note"])
    assert _indexed_paths(tarball) == set()


def test_an_ordinary_tree_has_no_note(tmp_path: Path) -> None:
    root = tmp_path / "app"
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()
    (root / "src" / "main.py").write_text("def main():\n    return 0\n")
    (root / "build" / "out.py").write_text("x = 1\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    assert _index(root)["ignore_note"] == ""


async def test_mcp_index_status_carries_the_note(tarball: Path) -> None:
    async with mcp_session(tarball, env=server_env()) as agent:
        status = await complete(agent)
        [folder] = status["folders"]
        assert f"`/*` ({tarball / '.gitignore'}:1)" in folder["ignore_note"]
        assert "index.gitignore = false" in folder["ignore_note"]
