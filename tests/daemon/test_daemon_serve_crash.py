"""A `kill -9` of the daemon while an editor searches in a loop (issue 29): the editor's
`codeask serve` (a forwarder) starts a new daemon, replays initialize, the folders, the
settings and the open documents, waits for the new server to open the index (and to load the
query model with a private search: the dead one had it loaded, a new one answers lexically
until then), and sends again the search that was in flight. Every answer is the same as
before the kill (none empty, none wrong); the editor is shown "reconnecting"; an unsaved
buffer is still the server's text."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import daemon_pid, wait_until
from pygls.exceptions import JsonRpcException
from test_daemon_serve import QUERIES, answers, editor_env, hits

from support.lsp_harness import build_project, hover_text, session

pytestmark = pytest.mark.slow
KILLS = 2
#: Answers the editor gets between two kills (and after the last one).
BETWEEN = 6


async def test_kill_9_while_an_editor_searches(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    project = build_project(tmp_path / "demo")
    env = editor_env(daemon_env)
    answered: list[tuple[str, Any]] = []
    stop = asyncio.Event()
    async with session([project], tmp_path / "xdg", env=env) as lsp:
        await lsp.wait_ready(180)
        expected = await answers(lsp)
        assert all(expected.values()), expected
        unsaved = (  # a buffer never saved: the server knows it from didOpen only
            "def prime_check(number):\n"
            '    """Check whether a number is a prime number."""\n'
            "    return number > 1 and all(number % d for d in range(2, number))\n"
        )
        scratch = lsp.uri("app/scratch.py")
        lsp.open(scratch, unsaved)
        hover_before = await hover_text(lsp, scratch, 0, 6)
        assert "mathutil.py" in hover_before, hover_before

        async def editor() -> None:
            turn = 0
            while not stop.is_set():
                query = QUERIES[turn % len(QUERIES)]
                turn += 1
                try:
                    found: Any = hits(await lsp.search(query))
                except JsonRpcException as exc:
                    found = f"error: {exc}"
                answered.append((query, found))

        async def more(count: int) -> None:
            target = len(answered) + count
            while len(answered) < target:
                await asyncio.sleep(0.02)

        loop = asyncio.create_task(editor())
        try:
            async with asyncio.timeout(300):
                await more(BETWEEN)
                for _ in range(KILLS):
                    pid = daemon_pid(daemon_env)
                    assert pid is not None
                    os.kill(pid, signal.SIGKILL)
                    assert wait_until(lambda p=pid: daemon_pid(daemon_env) not in (None, p), 60)
                    await more(BETWEEN)
        finally:
            stop.set()
            await loop
        assert await answers(lsp) == expected
        shown = [m.message for m in lsp.client.messages]
        assert sum("reconnecting" in m for m in shown) == KILLS, shown
        assert len(lsp.log_lines("session resumed")) == KILLS
        # the buffer opened before the kills is the new server's text (else: no hover at all)
        assert await hover_text(lsp, scratch, 0, 6) == hover_before
    wrong = [(n, q, found) for n, (q, found) in enumerate(answered) if found != expected[q]]
    assert wrong == [], (wrong, expected)
    assert len(answered) >= BETWEEN * (KILLS + 1)
