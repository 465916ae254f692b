"""Issue 27: `codeask mcp` driven by the MCP SDK's own stdio client, on a real git repository.

Every tool on a real index; the tool list and its JSON schemas in both protocol eras; answers
while the index is still being built; the same ranking as `codeask search`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from support import codeask
from support.mcp_harness import (
    TOOLS,
    build_project,
    call,
    complete,
    gitrepo,
    mcp_session,
    server_env,
    wait_for,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return build_project(tmp_path / "shop")


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tools_listed_with_their_schemas(project: Path, mode: str) -> None:
    """The five tools and nothing else, each with an object schema whose bounds an agent can
    read, in the 2025 handshake era ("legacy") and the 2026-07-28 stateless era ("auto")."""
    async with mcp_session(project, mode=mode) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tuple(sorted(listed)) == tuple(sorted(TOOLS))
        search = listed["search_code"].input_schema
        assert search["required"] == ["query"]
        assert search["properties"]["query"]["maxLength"] == 20_000
        assert search["properties"]["k"]["maximum"] == 50
        assert set(search["properties"]) == {"query", "k", "path", "language", "kind", "max_tokens"}
        related = listed["find_related"].input_schema
        assert related["required"] == ["path", "line"]
        history = listed["search_history"].input_schema
        assert {"query", "k", "author", "since", "until", "path", "line"} <= set(
            history["properties"]
        )
        assert listed["get_context"].input_schema["required"] == ["question"]
        assert listed["index_status"].input_schema["properties"] == {}
        for tool in listed.values():
            assert tool.description, tool.name
            assert tool.annotations is not None and tool.annotations.read_only_hint


async def test_every_tool_on_a_real_repository(project: Path) -> None:
    """search_code, find_related, get_context, search_history (query and blame) and
    index_status, once the index is complete."""
    async with mcp_session(project) as client:
        status = await complete(client)
        folder = status["folders"][0]
        assert folder["root"] == str(project)
        assert folder["files"] == 4 and folder["history_commits"] == 2
        assert folder["role"].startswith("writer")

        found = await call(client, "search_code", query="expiring cache eviction")
        top = found["results"][0]
        assert top["path"] == str(project / "src/shop/cache.py")
        assert {"lines", "symbol", "kind", "score", "snippet", "snippet_start"} <= set(top)
        assert found["index"]["complete"] is True
        # a typed question: the packaged MiniLM ranks pasted reports only (model_tier_for
        # `measured`), so what ranked it, and what the answer says, is lexical + static
        assert found["index"]["tiers_answered"] == ["lexical", "static"]

        only_methods = await call(client, "search_code", query="parse tokens", kind="method")
        assert only_methods["results"] and all(
            r["kind"] == "method" for r in only_methods["results"]
        )
        in_glob = await call(client, "search_code", query="parse", path="src/shop/calc.py")
        assert {r["path"] for r in in_glob["results"]} == {str(project / "src/shop/calc.py")}

        related = await call(client, "find_related", path="src/shop/calc.py", line=8)
        assert related["at"]["symbol"] == "evaluate"
        paths = {r["path"] for r in related["results"]}
        assert str(project / "src/shop/parser.py") in paths

        # a file the index has not seen yet (no rescan before 60 s): cut from its text
        (project / "src/shop/fresh.py").write_text(
            "from shop.cache import ExpiringCache\n\n\ndef warm_cache(keys):\n"
            "    cache = ExpiringCache(ttl_seconds=60)\n    return [cache.get(k) for k in keys]\n",
            encoding="utf-8",
        )
        fresh = await call(client, "find_related", path="src/shop/fresh.py", line=5)
        assert fresh["at"]["symbol"] == "warm_cache"
        assert str(project / "src/shop/cache.py") in {r["path"] for r in fresh["results"]}

        context = await call(client, "get_context", question="How is an expression tokenized?")
        assert "tokenize_expression" in context["context"]
        assert any(s["path"].endswith("src/shop/parser.py") for s in context["sources"])

        past = await call(client, "search_history", query="expiry timestamp refresh")
        assert past["results"][0]["subject"].startswith("Refresh the expiry timestamp")
        assert past["results"][0]["author"] == "Bob Builder"
        by_alice = await call(client, "search_history", query="calculator", author="alice")
        assert by_alice["results"] and all(
            r["author"] == "Alice Liddell" for r in by_alice["results"]
        )
        blamed = await call(client, "search_history", path="src/shop/cache.py", line=18)
        assert blamed["blame"][0]["subject"].startswith("Refresh the expiry timestamp")
        old_line = await call(client, "search_history", path="src/shop/cache.py", line=10)
        assert old_line["blame"][0]["subject"] == "Initial import of the calculator"


async def test_same_ranking_as_codeask_search(project: Path) -> None:
    """Once complete, search_code ranks exactly as `codeask search --json` does."""
    queries = ["expiring cache", "operator precedence tree", "evaluate user expression"]
    async with mcp_session(project) as client:
        await complete(client)
        answers = [await call(client, "search_code", query=q) for q in queries]
    for query, answer in zip(queries, answers, strict=True):
        cli = codeask("search", query, "--json", cwd=project, env=server_env(), timeout=120)
        assert cli.returncode == 0, cli.stderr
        expected = [
            (r["path"], f"{r['start_line']}-{r['end_line']}")
            for r in json.loads(cli.stdout)["results"]
        ]
        got = [(r["path"], r["lines"]) for r in answer["results"]]
        assert got == expected, query


async def test_answers_while_the_index_is_being_built(tmp_path: Path) -> None:
    """A folder never indexed: the first call answers at once (saying the index is being
    built), later calls find code from the lexical and static tiers while MiniLM is still
    embedding, and index_status shows the progress."""
    root = tmp_path / "big"
    files = {
        f"pkg/module_{i:03d}.py": "".join(
            f'def handler_{i}_{j}(request):\n    """Handle request {j} of module {i}."""\n'
            f"    return request.value + {j}\n\n\n"
            for j in range(8)
        )
        for i in range(120)
    }
    files["pkg/needle.py"] = (
        "def find_the_needle(haystack):\n"
        '    """Locate the needle."""\n'
        '    return haystack.index("needle")\n'
    )
    gitrepo.commit(gitrepo.make_repo(root), files, "many handlers")
    async with mcp_session(root) as client:
        started = time.monotonic()
        first = await call(client, "search_code", query="find_the_needle")
        assert time.monotonic() - started < 5
        assert first["index"]["complete"] is False

        async def found() -> dict | None:
            # The index is built in passes: an answer before needle.py is stored may list
            # other files (static vectors match anything); once needle.py is among the hits,
            # its exact name must rank it first.
            answer = await call(client, "search_code", query="find_the_needle")
            paths = [hit["path"] for hit in answer["results"]]
            return answer if any(p.endswith("pkg/needle.py") for p in paths) else None

        answer = await wait_for(found, 60)
        assert answer["results"][0]["path"].endswith("pkg/needle.py")
        if answer["index"]["complete"] is False:  # caught while the MiniLM backlog runs
            assert "minilm" not in answer["index"]["tiers_answered"]
            status = await call(client, "index_status")
            folder = status["folders"][0]
            assert folder["state"] in ("indexing", "embedding")
            assert any("minilm vectors" in m for m in folder.get("missing", []))
        await complete(client, timeout=240)
