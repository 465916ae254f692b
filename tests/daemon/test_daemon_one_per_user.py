"""One user, one daemon, whatever the client's environment: `codeask mcp` started by an MCP
client with the SDK's minimal environment (HOME, PATH, SHELL, TERM, USER, LOGNAME: no
XDG_RUNTIME_DIR) reaches the daemon the user's CLI started under XDG_RUNTIME_DIR, the uid's
login-session runtime directory (/run/user/UID), instead of starting a second one under
~/.cache/codeask/run (nor is it refused there for an XDG base directory the shell set to its
default and the SDK dropped).

/run/user is the system's: the test puts the login-session base in its own folder
(daemon/paths.py's USER_RUNTIME_BASE, set in the `codeask mcp` process before it runs; hence
`mock` in the name). Everything else is real: the CLI, the daemon, the SDK's stdio client."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest
from daemon_helpers import codeask, daemon_pid, stop_daemon, wait_until
from mcp import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp_agents import STATIC_ONLY, build_project, call, complete, hit_lines

from codeask.daemon import paths
from codeask.daemon.paths import LOCK_NAME
from codeask.daemon.server import lock_holder

pytestmark = pytest.mark.slow
QUERY = "expiring cache eviction"
#: `codeask mcp ARGS` (the forwarder, as `python -m codeask` runs it) with the login-session
#: base moved to the folder named by the first argument.
MCP_AT = (
    "import sys\n"
    "import codeask.daemon.paths as paths\n"
    "paths.USER_RUNTIME_BASE = sys.argv.pop(1)\n"
    "from codeask.daemon.forwarding import run\n"
    "raise SystemExit(run(sys.argv[1:]))\n"
)


async def test_mcp_with_the_sdk_environment_uses_the_cli_daemon_mock_run_user(
    tmp_path: Path,
) -> None:
    base = tmp_path / "run-user"
    runtime = base / str(os.getuid())  # what pam_systemd makes and names in XDG_RUNTIME_DIR
    runtime.mkdir(parents=True, mode=0o700)
    home = tmp_path / "home"
    home.mkdir()
    settings = {  # what the user puts in the agent's MCP config (merged over the SDK's)
        "HOME": str(home),
        "CODEASK_DAEMON__ENABLED": "true",
        "CODEASK_DAEMON__IDLE_SECONDS": "120",
        "CODEASK_EMBED__TIERS": STATIC_ONLY,
        "HF_HUB_OFFLINE": "1",
    }
    cli_env = get_default_environment() | settings | {"XDG_RUNTIME_DIR": str(runtime)}
    cli_env.update(XDG_CACHE_HOME=f"{home}/.cache", XDG_CONFIG_HOME=f"{home}/.config/")  # as unset
    cache_lock = home / ".cache" / "codeask" / "run" / LOCK_NAME  # where a second one would be
    project = build_project(tmp_path / "shop")
    try:
        started = codeask("status", cwd=project, env=cli_env)  # "not indexed yet", by a daemon
        assert "daemon unavailable" not in started.stderr
        pid = daemon_pid(cli_env)
        assert pid
        params = StdioServerParameters(
            command=sys.executable,
            args=["-c", MCP_AT, str(base), "mcp", str(project)],
            env=settings,
            cwd=project,
        )
        with (tmp_path / "agent.log").open("a") as log:
            async with Client(stdio_client(params, errlog=log), read_timeout_seconds=120) as agent:  # type: ignore[arg-type]
                await complete(agent)
                assert hit_lines(await call(agent, "search_code", query=QUERY))
                status = codeask("daemon", "--status", cwd=project, env=cli_env)
                info = json.loads(status.stdout)
                assert info["pid"] == pid and info["sessions"] == 1  # the agent's, in it
        assert "daemon unavailable" not in (tmp_path / "agent.log").read_text()
        assert lock_holder(cache_lock) is None, "a second daemon under ~/.cache/codeask/run"
        assert daemon_pid(cli_env) == pid
    finally:
        stop_daemon(cli_env)
        other = lock_holder(cache_lock)
        if other:
            os.kill(other, signal.SIGKILL)
            wait_until(lambda: lock_holder(cache_lock) is None)


@pytest.mark.parametrize("kind", ["loosened", "symlinked", "another user's", "a file"])
def test_a_session_runtime_dir_not_the_users_own_is_not_used_mock_run_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """/run/user/UID is used only as a login session makes it: a real 0700 directory of the
    uid. Anything else there is passed over for the cache fallback, never used or repaired."""
    base = tmp_path / "run-user"
    base.mkdir()
    place = base / str(os.getuid())
    real = tmp_path / "elsewhere"
    real.mkdir(mode=0o700)
    if kind == "loosened":
        place.mkdir()
        place.chmod(0o755)
    elif kind == "symlinked":
        place.symlink_to(real)
    elif kind == "another user's":
        if os.getuid() != 0:
            pytest.skip("giving a directory to another user takes root")
        place.mkdir(mode=0o700)
        os.chown(place, 65534, 65534)
    else:
        place.write_text("")
    monkeypatch.setattr(paths, "USER_RUNTIME_BASE", str(base))
    cache = tmp_path / "cache"
    env = {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(cache)}
    assert paths.runtime_folder(env) == str(cache / "codeask" / "run")
    if place.is_dir() and not place.is_symlink():
        place.rmdir()
    else:
        place.unlink()
    place.mkdir(mode=0o700)  # as pam_systemd makes it: used
    assert paths.runtime_folder(env) == str(place / "codeask")
    assert paths.runtime_folder(dict(env, XDG_RUNTIME_DIR=str(real))) == str(real / "codeask")
