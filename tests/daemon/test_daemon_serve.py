"""`codeask serve` through the daemon (issue 29): real editors' servers (pytest-lsp over stdio,
`python -m codeask serve`) with `daemon.enabled` on are thin forwarders to language-server
sessions in one per-user daemon, answer as the in-process server answers, keep their trust
apart, and start no daemon with the setting off."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import ENABLED, codeask, daemon_pid

from support.lsp_harness import Session, build_project, session, wait_for

pytestmark = pytest.mark.slow
QUERIES = ("check whether a number is prime", "read the TOML configuration file", "retry")
#: An in-process server on this fixture holds well over 100 MB; a forwarder ~15.
FORWARDER_MB = 40


def editor_env(daemon_env: dict[str, str]) -> dict[str, str]:
    """What the harness adds to the server's environment: the daemon's switches and the
    test's runtime dir (the harness drops every other CODEASK_ variable)."""
    keep = ("XDG_RUNTIME_DIR", ENABLED, "CODEASK_DAEMON__IDLE_SECONDS")
    return {name: daemon_env[name] for name in keep}


def hits(results: list[dict[str, Any]]) -> list[tuple[str, int, float]]:
    return [(r["uri"], r["range"]["start"]["line"], round(float(r["score"]), 6)) for r in results]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def server_pid(lsp: Session) -> int:
    process = lsp.client._server  # pytest-lsp's subprocess: the `codeask serve` the editor ran
    assert process is not None
    return int(process.pid)


async def settle(lsp: Session) -> None:
    """Until searches use every tier. A server following another's index read-only loads the
    query model on its first search (as two in-process servers on one folder do)."""
    await wait_for(lsp.status, lambda s: s["state"] == "ready", 180)
    await lsp.search(QUERIES[0])
    await lsp.wait_ready(120)


async def answers(lsp: Session) -> dict[str, list[tuple[str, int, float]]]:
    return {query: hits(await lsp.search(query)) for query in QUERIES}


async def test_two_editors_share_one_daemon_and_answer_as_in_process(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    project = build_project(tmp_path / "demo")
    cache = tmp_path / "xdg"
    async with session([project], cache) as alone:  # today's server, in its own process
        await alone.wait_ready(180)
        expected = await answers(alone)
    assert all(expected.values()), expected
    assert daemon_pid(daemon_env) is None

    env = editor_env(daemon_env)
    async with session([project], cache, env=env) as first:
        await first.wait_ready(180)
        pid = daemon_pid(daemon_env)
        assert pid is not None, "the first editor's server started no daemon"
        async with session([project], cache, env=env) as second:
            await settle(second)
            assert daemon_pid(daemon_env) == pid
            status = codeask("daemon", "--status", cwd=tmp_path, env=daemon_env)
            assert json.loads(status.stdout)["editors"] == 2, status.stdout
            assert await answers(first) == expected
            assert await answers(second) == expected
            for lsp in (first, second):
                assert rss_mb(server_pid(lsp)) < FORWARDER_MB
    assert daemon_pid(daemon_env) == pid  # the daemon outlives its editors (idle exit later)


async def test_off_by_setting_serves_in_process(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    project = build_project(tmp_path / "demo")
    env = dict(editor_env(daemon_env), **{ENABLED: "false"})
    async with session([project], tmp_path / "xdg", env=env) as lsp:
        await lsp.wait_ready(180)
        assert (await lsp.search(QUERIES[0]))[0]["uri"].endswith("mathutil.py")
        assert rss_mb(server_pid(lsp)) > FORWARDER_MB  # the whole server, in this process
    assert daemon_pid(daemon_env) is None


async def test_no_daemon_flag_serves_in_process(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    """`codeask serve --no-daemon` with the setting on: the whole server in this process."""
    project = build_project(tmp_path / "demo")
    env = editor_env(daemon_env)
    async with session([project], tmp_path / "xdg", env=env, serve_args=["--no-daemon"]) as lsp:
        await lsp.wait_ready(180)
        assert (await lsp.search(QUERIES[0]))[0]["uri"].endswith("mathutil.py")
        assert rss_mb(server_pid(lsp)) > FORWARDER_MB
    assert daemon_pid(daemon_env) is None


def _located_elsewhere(root: Path) -> Path:
    """A project file moving the index: protected, applied only in a trusted workspace."""
    (root / ".codeask.toml").write_text(f'[index]\nlocation = "{root}/elsewhere"\n')
    return root / "elsewhere"


async def _index_dir(lsp: Session) -> str:
    status = await wait_for(
        lsp.status,
        lambda s: s["folders"] and s["folders"][0]["state"] != "loading",
        120,
    )
    return str(status["folders"][0]["indexDir"])


async def test_trust_stays_per_editor(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    """The editor that trusts the workspace gets the project file's index location; the other
    editor, on the same folder in the same daemon, does not (and is told why)."""
    project = build_project(tmp_path / "demo")
    elsewhere = _located_elsewhere(project)
    env = editor_env(daemon_env)
    cache = tmp_path / "xdg"
    options = {"trustWorkspace": True}
    async with session([project], cache, env=env, options=options) as trusting:
        assert Path(await _index_dir(trusting)).parent == elsewhere
        async with session([project], cache, env=env) as wary:
            assert await _index_dir(wary) == str(project / ".codeask")
            needle = "tried to set index.location; ignored: the workspace is not trusted"
            await wait_for(_probe(wary.log_lines, needle), bool, 30)
            assert trusting.log_lines(needle) == []  # no editor reads the other's logs
            assert daemon_pid(daemon_env) is not None
            status = codeask("daemon", "--status", cwd=tmp_path, env=daemon_env)
            assert json.loads(status.stdout)["editors"] == 2, status.stdout


def _probe(fn: Any, *args: Any) -> Any:
    async def probe() -> Any:
        await asyncio.sleep(0)
        return fn(*args)

    return probe
