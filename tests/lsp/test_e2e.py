"""The issue's main scenario, once with Neovim's and once with VS Code's stored capabilities.

initialize → $/progress begin/report/end → search finds the right function for a plain-English
query → edit + didSave → the new function is searchable within 2 s → hover links to related
code elsewhere → a deleted file (watched-files event) loses its chunks.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsprotocol import types

from support.lsp_harness import (
    CLIENTS,
    FILES,
    NEW_FUNCTION,
    Session,
    check_related_hover,
    hover_text,
    session,
    wait_for,
)

pytestmark = pytest.mark.slow


def _progress_done(lsp: Session) -> bool:
    """Some token saw begin, at least one report, and end (in that order)."""
    for values in lsp.client.progress_reports.values():
        kinds = [v.kind for v in values]
        if kinds and kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds:
            return True
    return False


@pytest.mark.parametrize("client", CLIENTS)
async def test_index_search_edit_hover_delete(
    client: str, project: Path, private_cache: Path
) -> None:
    async with session([project], private_cache, client=client) as lsp:
        # -- progress while the first index runs, then a ready index ------------------------
        status = await lsp.wait_ready()

        async def progress_seen() -> bool:
            return _progress_done(lsp)

        assert await wait_for(progress_seen, bool, 10)
        begin = next(v for vals in lsp.client.progress_reports.values() for v in vals)
        assert begin.title == f"codeask: indexing {project.name}"
        assert status["files"] == len(FILES) and status["chunks"] >= 10
        assert status["embedded"] == status["chunks"]
        assert status["folders"][0]["root"] == str(project)

        # -- the file watcher is registered only where the client supports it --------------
        methods = [r.method for r in lsp.client.registrations]  # type: ignore[attr-defined]
        if client == "visual-studio-code":
            assert methods == ["workspace/didChangeWatchedFiles"]
            watcher = lsp.client.registrations[0].register_options  # type: ignore[attr-defined]
            assert watcher["watchers"][0]["globPattern"] == "**/*"
        else:
            assert methods == []  # Neovim's stored capabilities: no dynamic registration

        # -- natural-language search finds the right function ------------------------------
        hits = await lsp.search("read the toml configuration file into a dictionary")
        assert hits[0]["symbol"] == "parse_config"
        assert hits[0]["uri"] == lsp.uri("app/config.py")
        assert hits[0]["range"]["start"]["line"] == 5  # `def parse_config` is line 6
        assert set(hits[0]) >= {"uri", "range", "symbol", "kind", "score", "preview", "retrievers"}
        hits = await lsp.search("is this number prime", k=3)
        assert hits[0]["symbol"] == "is_prime" and len(hits) <= 3

        # -- edit + didSave: the new function is searchable within 2 s -----------------------
        text_path = project / "app/text.py"
        text_path.write_text(text_path.read_text() + NEW_FUNCTION)
        saved = time.monotonic()
        lsp.save(lsp.uri("app/text.py"))

        async def top_symbols() -> list[str]:
            return [h["symbol"] for h in await lsp.search("reverse the order of words", k=3)]

        await wait_for(top_symbols, lambda symbols: "reverse_words" in symbols, 2.0, 0.05)
        assert time.monotonic() - saved < 2.0

        # -- hover inside a function: related code in other files, last commit ------------
        hover = await hover_text(lsp, lsp.uri("app/cache.py"), 13)  # inside LruCache.get
        check_related_hover(hover, project)
        assert "Last changed in " in hover

        # -- hover on a call: the callee's definition is the first link ---------------------
        call = await hover_text(lsp, lsp.uri("app/net.py"), 19, 13)  # `retry(` in fetch_url
        first = next(line for line in call.splitlines() if line.startswith("- ["))
        assert "app/net.py:7](" in first and first.endswith(" retry"), first

        # -- delete a file: a watched-files event drops its chunks ---------------------------
        before = (await lsp.status())["chunks"]
        (project / "app/mathutil.py").unlink()
        lsp.watched((lsp.uri("app/mathutil.py"), types.FileChangeType.Deleted))

        async def prime_symbols() -> list[object]:
            return await lsp.symbols("is_prime")

        await wait_for(prime_symbols, lambda found: found == [], 5.0)
        after = await lsp.status()
        assert after["chunks"] < before and after["files"] == len(FILES) - 1
        hits = await lsp.search("is this number prime")
        assert all(not h["uri"].endswith("app/mathutil.py") for h in hits)
