"""An editor's `codeask serve` never talks to another user's daemon (issue 29): with the
runtime dir or the socket another user's, it serves in its own process, answers right, and the
other user's listener never receives a byte. Run as root, with a real second user (`nobody`)."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from daemon_helpers import daemon_pid, run_dir, socket_path
from test_daemon_serve import FORWARDER_MB, editor_env, rss_mb, server_pid
from test_daemon_users import nobody, shared, start_squatter, what_reached

from support.lsp_harness import build_project, session

__all__ = ["nobody", "shared"]  # the fixtures this module uses
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user"),
]


async def served_in_process(tmp_path: Path, env: dict[str, str]) -> None:
    project = build_project(tmp_path / "demo")
    async with session([project], tmp_path / "xdg", env=env) as lsp:
        await lsp.wait_ready(180)
        found = await lsp.search("check whether a number is prime")
        assert found[0]["uri"].endswith("mathutil.py")
        assert rss_mb(server_pid(lsp)) > FORWARDER_MB  # the whole server, in this process


async def test_a_runtime_dir_of_another_user_is_refused(
    tmp_path: Path, daemon_env: dict[str, str], shared: Path, nobody: pwd.struct_passwd
) -> None:
    daemon_env["XDG_RUNTIME_DIR"] = str(shared)
    squatter = start_squatter(shared / "codeask", nobody)
    try:
        await served_in_process(tmp_path, editor_env(daemon_env))
    finally:
        reached = what_reached(squatter)
    assert reached == "", "the editor's server never connected to the other user's socket"
    assert daemon_pid(daemon_env) is None


async def test_a_socket_of_another_user_is_refused(
    tmp_path: Path, daemon_env: dict[str, str], shared: Path, nobody: pwd.struct_passwd
) -> None:
    run_dir(daemon_env).mkdir(mode=0o700)
    squatter = start_squatter(shared / "sq", nobody)
    try:
        os.rename(shared / "sq" / "daemon.sock", socket_path(daemon_env))
        os.chown(socket_path(daemon_env), os.getuid(), os.getgid())  # ours on disk, not behind
        await served_in_process(tmp_path, editor_env(daemon_env))
    finally:
        reached = what_reached(squatter)
    assert reached == "connection 0 bytes\n", "connected to once (to check its uid), sent nothing"
