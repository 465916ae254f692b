"""The three faces answer one question with the same hits (issue 30: one operations layer).

One real git repository is indexed by the real `codeask serve` (pytest-lsp over stdio); once
every tier is embedded and the query model is loaded, the same questions go to
`workspace/semanticSearch`, then (the server stopped, the index as it left it) to
`codeask search --json` and to the MCP tool's operation (`core.operations.search_now`, what
`search_code` calls), each in its own process with the server's cache. The hits must be the
same, in the same order, with the same scores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pytest

from support import codeask
from support.lsp_harness import build_project, server_env, session

pytestmark = pytest.mark.slow

#: (query, LSP filters, CLI options): code, a kind filter, a path glob, and history.
QUESTIONS: list[tuple[str, dict[str, str], list[str]]] = [
    ("download a web page", {}, []),
    ("evict entries", {"kind": "class"}, ["--kind", "class"]),
    ("retry", {"pathGlob": "app/*.py"}, ["--path", "app/*.py"]),
    ("add an lru cache", {"scope": "history"}, ["--history"]),
]

MCP_SCRIPT = """
import json, sys
from pathlib import Path
from codeask.core.indexer import FolderIndex
from codeask.core.operations import search_now
from codeask.core.search.retrieve import Filters

root, query, filters = Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
folder = FolderIndex.open(root, mode="read")
found = search_now([folder], query, filters=Filters(**filters), minilm=True)
print(json.dumps([[h.path, h.chunk.start_line, h.chunk.end_line, h.chunk.symbol,
                   round(h.score, 6)] for h in found.result.hits]))
"""

#: The LSP's filter names → the engine's (Filters' fields).
ENGINE_NAMES = {"pathGlob": "path_glob", "kind": "kind", "scope": "scope"}


def _lsp_rows(root: Path, items: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for item in items:
        path = Path(unquote(urlparse(item["uri"]).path))
        rel = path.relative_to(root).as_posix() if path != root else ""
        start, end = item["range"]["start"]["line"] + 1, item["range"]["end"]["line"] + 1
        if path == root:  # a commit: the folder's URI and an empty range (no file)
            start = end = 0
        rows.append([rel, start, end, item["symbol"], item["score"]])
    return rows


def _run(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _cli_rows(project: Path, query: str, options: list[str], env: dict[str, str]) -> list[Any]:
    out = codeask("search", query, "--json", *options, cwd=project, env=env, check=True).stdout
    return [
        [r["relative_path"], r["start_line"], r["end_line"], r["symbol"], r["score"]]
        for r in json.loads(out)["results"]
    ]


def _mcp_rows(project: Path, query: str, filters: dict[str, str], env: dict[str, str]) -> Any:
    engine = {ENGINE_NAMES[k]: v for k, v in filters.items()}
    out = _run(
        [sys.executable, "-c", MCP_SCRIPT, str(project), query, json.dumps(engine)], env, project
    )
    return json.loads(out)


def _commits_blank(rows: list[list[Any]]) -> list[list[Any]]:
    """A commit has no file: its lines are the LSP's empty range (0), the engine's own."""
    return [[p, 0, 0, s, sc] if not p else [p, a, b, s, sc] for p, a, b, s, sc in rows]


async def test_cli_lsp_and_mcp_return_the_same_hits(project: Path, shared_cache: Path) -> None:
    build_project(project)
    answers: dict[str, list[list[Any]]] = {}
    async with session([project], shared_cache) as lsp:
        await lsp.wait_ready()
        await lsp.search("warm the query model")  # the first search starts loading MiniLM
        await lsp.wait_ready()
        for query, filters, _ in QUESTIONS:
            extra = {"filters": filters} if filters else {}
            answers[query] = _lsp_rows(project, await lsp.search(query, **extra))
    env = server_env(shared_cache)
    for query, filters, options in QUESTIONS:
        lsp_rows = answers[query]
        assert lsp_rows, f"the language server found nothing for {query!r}"
        assert all(row[4] for row in lsp_rows)
        cli_rows = _commits_blank(_cli_rows(project, query, options, env))
        mcp_rows = _commits_blank(_mcp_rows(project, query, filters, env))
        assert cli_rows == lsp_rows, query
        assert mcp_rows == lsp_rows, query
