"""Issue 27: several agent sessions and an editor on one folder: one writer, no double
embedding, everyone answers, readers pick up the writer's new snapshots, and a reader takes
over when the writer leaves. Real processes: two `codeask mcp` (the SDK's stdio client) and
one `codeask serve` (raw LSP frames)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pygit2
import pytest

from codeask.core.storage.writer_lock import holder
from support import codeask
from support.mcp_harness import (
    build_project,
    call,
    complete,
    gitrepo,
    mcp_session,
    server_env,
    wait_for,
)
from support.writers import LspPipe

pytestmark = pytest.mark.slow

NEW_FILE = {
    "src/shop/invoice.py": '"""Invoices."""\n\n\ndef total_with_vat(amount, rate):\n'
    '    """Add value-added tax to an invoice amount."""\n    return amount * (1 + rate)\n'
}


async def test_two_agents_and_an_editor_share_one_writer(tmp_path: Path) -> None:
    root = build_project(tmp_path / "shop")
    index = root / ".codeask"
    env = server_env()
    async with mcp_session(root, env=env, stderr=tmp_path / "a.log") as first:
        status_a = await complete(first)
        assert status_a["folders"][0]["role"].startswith("writer")
        embedded = status_a["folders"][0]["vectors_computed_here"]
        assert embedded > 0  # this test's own cache: the writer really embedded the corpus
        writer = holder(index)
        assert writer is not None and writer.kind == "mcp"

        editor = LspPipe([root], env, tmp_path / "serve.log").start()
        try:
            async with mcp_session(root, env=env, stderr=tmp_path / "b.log") as second:
                status_b = (await call(second, "index_status"))["folders"][0]
                assert status_b["role"].startswith("reader")
                assert f"pid {writer.pid}" in status_b["role"]
                assert status_b["vectors_computed_here"] == 0
                assert status_b["chunks"] == status_a["folders"][0]["chunks"]

                query = "expiring cache eviction"

                # a typed question ranks with lexical + static alone (the packaged MiniLM ranks
                # pasted reports), so the reader answers as the writer does from its first query
                b_answer = await call(second, "search_code", query=query)
                assert "minilm" not in b_answer["index"]["tiers_answered"]
                b_hits = b_answer["results"]
                assert b_hits
                a_hits = (await call(first, "search_code", query=query))["results"]
                assert [h["path"] for h in a_hits] == [h["path"] for h in b_hits]
                editor_hits = await anyio.to_thread.run_sync(editor.search, query)
                assert editor_hits and editor_hits[0]["uri"].endswith("src/shop/cache.py")
                editor_status = await anyio.to_thread.run_sync(editor.status)
                assert "read-only" in editor_status["folders"][0]["message"]
                assert holder(index) == writer  # still exactly that one writer

                # a commit moves HEAD: the writer indexes it, both readers pick it up
                gitrepo.commit(pygit2.Repository(str(root)), NEW_FILE, "Invoices with VAT")

                async def reader_sees_it() -> bool:
                    hits = (await call(second, "search_code", query="total_with_vat"))["results"]
                    return bool(hits) and hits[0]["path"].endswith("src/shop/invoice.py")

                await wait_for(reader_sees_it, 60)

                def editor_sees_it() -> bool:
                    hits = editor.search("total_with_vat")
                    return bool(hits) and hits[0]["uri"].endswith("src/shop/invoice.py")

                await wait_for(lambda: anyio.to_thread.run_sync(editor_sees_it), 60)
                status_b = (await call(second, "index_status"))["folders"][0]
                assert status_b["vectors_computed_here"] == 0
        finally:
            await anyio.to_thread.run_sync(editor.stop)
    # the first agent left, the second too: the lock is free again, nothing holds it
    assert holder(index) is None


async def test_a_reader_takes_over_when_the_writer_leaves(tmp_path: Path) -> None:
    root = build_project(tmp_path / "shop")
    env = server_env()
    reader_up, writer_gone = anyio.Event(), anyio.Event()
    roles: list[str] = []

    async def second_agent() -> None:
        async with mcp_session(root, env=env, stderr=tmp_path / "b.log") as second:
            roles.append((await call(second, "index_status"))["folders"][0]["role"])
            reader_up.set()
            await writer_gone.wait()

            async def writes() -> str | None:
                role = (await call(second, "index_status"))["folders"][0]["role"]
                return role if role.startswith("writer") else None

            roles.append(await wait_for(writes, 30))
            answer = await call(second, "search_code", query="expiring cache")
            assert answer["results"][0]["path"].endswith("src/shop/cache.py")

    async with anyio.create_task_group() as group:
        async with mcp_session(root, env=env, stderr=tmp_path / "a.log") as first:
            await complete(first)
            group.start_soon(second_agent)
            await reader_up.wait()
        writer_gone.set()
    assert roles[0].startswith("reader") and roles[1].startswith("writer")


async def test_codeask_index_leaves_the_work_to_an_mcp_writer(tmp_path: Path) -> None:
    """An agent's `codeask mcp` keeps the index current like an editor's server: `codeask index`
    says so and returns instead of waiting for the agent session to end."""

    root = build_project(tmp_path / "shop")
    env = server_env()
    async with mcp_session(root, env=env, stderr=tmp_path / "a.log") as agent:
        await complete(agent)
        run = await anyio.to_thread.run_sync(
            lambda: codeask("index", str(root), env=env, timeout=120)
        )
        assert run.returncode == 0, run.stderr
        assert "owned by codeask mcp" in run.stderr and "keeps it current" in run.stderr
