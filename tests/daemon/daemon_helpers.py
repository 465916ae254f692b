"""What the daemon tests share: running `codeask`, finding the daemon of an environment."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import codeask as package
from codeask.daemon.paths import LOCK_NAME, SOCKET_NAME
from codeask.daemon.server import lock_holder
from support import codeask as codeask  # the one runner (tests/support/cli.py), re-exported

ENABLED = "CODEASK_DAEMON__ENABLED"


def python_detached(code: str, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`python -c CODE ARGS` in its own session, no terminal streams: a stand-in daemon."""
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd="/",
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def run_dir(env: dict[str, str]) -> Path:
    """Where the daemon of `env` lives (`$XDG_RUNTIME_DIR/codeask`)."""
    return Path(env["XDG_RUNTIME_DIR"]) / "codeask"


def daemon_pid(env: dict[str, str]) -> int | None:
    """The pid holding the daemon lock of `env`, or None when no daemon runs there."""
    return lock_holder(run_dir(env) / LOCK_NAME)


def socket_path(env: dict[str, str]) -> Path:
    return run_dir(env) / SOCKET_NAME


def without_seconds(stdout: str) -> dict[str, object]:
    """`search --json` minus its timing: what must be equal with and without the daemon."""
    payload = json.loads(stdout)
    payload.pop("seconds")
    return payload


def wait_until(predicate: object, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def stop_daemon(env: dict[str, str]) -> None:
    """Stop the daemon of `env` if one runs: asked first, then SIGKILL by its pid."""
    pid = daemon_pid(env)
    if not pid:
        return
    codeask("daemon", "--stop", cwd=Path("/"), env=env, timeout=30)
    if daemon_pid(env) is not None:
        os.kill(pid, signal.SIGKILL)
        assert wait_until(lambda: daemon_pid(env) is None), f"daemon {pid} survived SIGKILL"


def processes_run_in(runtime_dirs: set[str]) -> list[int]:
    """Pids of live processes whose environment names one of these runtime dirs (this test's:
    the paths are unique per test), read from /proc."""
    wanted = {f"XDG_RUNTIME_DIR={folder}".encode() for folder in runtime_dirs}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            variables = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and wanted.intersection(variables):
            found.append(int(entry.name))
    return found


def copied_package(dest: Path, env: dict[str, str]) -> tuple[Path, dict[str, str]]:
    """A copy of the codeask package under `dest` (byte copies, never hard links: a test that
    touches a file must not touch the checkout's) and `env` with it first on PYTHONPATH, so
    the processes started with it (client, daemon, forwarder) load codeask from the copy."""
    source = Path(package.__file__).parent
    shutil.copytree(source, dest / "codeask", ignore=shutil.ignore_patterns("__pycache__"))
    path = os.pathsep.join(filter(None, [str(dest), env.get("PYTHONPATH", "")]))
    return dest / "codeask", dict(env, PYTHONPATH=path)


def touched_later(source: Path) -> None:
    """Move `source`'s mtime a second forward (a pull or an upgrade, as the daemon sees it)."""
    before = source.stat()
    os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
