"""A one-shot search reads the index: it never imports what only a writer needs (issue 29:
`codeask search` with no daemon should cost a fraction of a CPU-second, and the imports were
most of it). Chunking (tree-sitter), file discovery and git (pygit2) load on the first write,
blame or hover over unsaved text. Run in fresh interpreters: their `sys.modules` say exactly
what each path imported."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fresh import run_python, write_demo_project

from support import codeask, in_process_env

WRITER_ONLY = (
    "pygit2",
    "tree_sitter_language_pack",
    "codeask.core.source.chunk",
    "codeask.core.source.discover",
)

SEARCH = """
import json, sys
from pathlib import Path
from codeask.core import operations
folder = operations.open_for_reading(Path(sys.argv[1]))
result = operations.search_folders([folder], "least recently used cache", mode="hybrid", k=5)
print(json.dumps({
    "hits": [hit.path for hit in result.hits],
    "loaded": sorted(name for name in sys.argv[2:] if name in sys.modules),
}))
"""

WRITE = """
import json, sys
from pathlib import Path
from codeask.core.operations.index import FolderIndex
(Path(sys.argv[1]) / "more.py").write_text("def more():\\n    return 1\\n")
folder = FolderIndex.open(Path(sys.argv[1]))
folder.refresh(embed=False)
folder.close()
print(json.dumps({"loaded": sorted(name for name in sys.argv[2:] if name in sys.modules)}))
"""


def python(args: list[str], env: dict[str, str]) -> str:
    return run_python(args, env).stdout


def test_a_search_imports_no_writer_module(tmp_path: Path) -> None:
    project = write_demo_project(tmp_path / "demo")
    env = in_process_env(XDG_CACHE_HOME=str(tmp_path / "xdg"))
    # a repository: a writer's refresh reads its history through pygit2 (a folder with none
    # no longer loads pygit2 at all: tests/unit/test_git_head.py)
    git = ["git", "-c", "user.name=A", "-c", "user.email=a@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "first"]):
        subprocess.run([*git, *args], cwd=project, env=env, check=True, capture_output=True)
    codeask("index", str(project), env=env, check=True)

    seen = json.loads(python(["-c", SEARCH, str(project), *WRITER_ONLY], env).splitlines()[-1])
    assert seen["hits"] and seen["hits"][0].endswith("cache.py"), seen
    assert seen["loaded"] == [], seen

    # a writer's refresh loads them: the list above names what a search could have loaded
    seen = json.loads(python(["-c", WRITE, str(project), *WRITER_ONLY], env).splitlines()[-1])
    assert seen["loaded"] == sorted(WRITER_ONLY), seen


UNCHANGED = """
import json, sys
from pathlib import Path
from codeask.core.operations.index import FolderIndex
folder = FolderIndex.open(Path(sys.argv[1]))
report = folder.refresh(embed=False)
folder.close()
print(json.dumps({
    "unchanged": report.files_unchanged,
    "loaded": sorted(name for name in sys.argv[2:] if name in sys.modules),
}))
"""
CHUNKING = ("tree_sitter_language_pack", "codeask.core.source.chunk")


def test_a_pass_over_unchanged_files_loads_no_chunker(tmp_path: Path) -> None:
    """A server that starts on a folder nobody changed checks every file and chunks none:
    tree-sitter and its grammars stay out of its memory until a file changes."""
    project = tmp_path / "demo"
    project.mkdir()
    (project / "cache.py").write_text("class LRUCache:\n    '''Evicts the oldest entry.'''\n")
    (project / "notes.md").write_text("# Notes\n\nNothing here yet.\n")
    env = in_process_env()
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    codeask("index", str(project), env=env, check=True)
    seen = json.loads(python(["-c", UNCHANGED, str(project), *CHUNKING], env).splitlines()[-1])
    assert seen == {"unchanged": 2, "loaded": []}, seen
    (project / "cache.py").write_text("class LRUCache:\n    '''Evicts the newest entry.'''\n")
    seen = json.loads(python(["-c", UNCHANGED, str(project), *CHUNKING], env).splitlines()[-1])
    assert seen == {"unchanged": 1, "loaded": sorted(CHUNKING)}, seen
