"""A daemon of another codeask version is never used for answers (the client answers itself
and says why), yet `codeask daemon --status` and `--stop` still reach it after an upgrade."""

from __future__ import annotations

from pathlib import Path

import pytest
from daemon_helpers import (
    codeask,
    copied_package,
    daemon_pid,
    python_detached,
    socket_path,
    touched_later,
    wait_until,
    without_seconds,
)

pytestmark = pytest.mark.slow
#: The real daemon, run as if it were another release (its version set before it loads).
OTHER_RELEASE = (
    "import codeask; codeask.__version__ = '0.0.0-other'\n"
    "from codeask.cli import main\n"
    "raise SystemExit(main(['daemon']))\n"
)


def test_a_daemon_of_another_version(project: Path, daemon_env: dict[str, str]) -> None:
    other = python_detached(OTHER_RELEASE, env=daemon_env)
    try:
        assert wait_until(lambda: socket_path(daemon_env).exists(), timeout=60)
        assert daemon_pid(daemon_env) == other.pid
        found = codeask("search", "invoice pdf", "--json", cwd=project, env=daemon_env)
        local = codeask(
            "search", "invoice pdf", "--json", "--no-daemon", cwd=project, env=daemon_env
        )
        assert found.returncode == 0, found.stderr
        assert without_seconds(found.stdout) == without_seconds(local.stdout)
        assert found.stderr == (
            "codeask: daemon unavailable (version mismatch: the daemon is codeask 0.0.0-other "
            "(protocol 1), the client 0.1.0 (protocol 1)); answering in-process\n"
        )
        assert daemon_pid(daemon_env) == other.pid, "not replaced behind its back"
        status = codeask("daemon", "--status", cwd=project, env=daemon_env)
        assert '"version": "0.0.0-other"' in status.stdout
        stopped = codeask("daemon", "--stop", cwd=project, env=daemon_env)
        assert stopped.returncode == 0 and "stopped" in stopped.stdout
        assert other.wait(timeout=30) == 0
        again = codeask("search", "invoice pdf", "--json", cwd=project, env=daemon_env)
        assert again.returncode == 0 and again.stderr == ""  # a daemon of ours answered
        assert wait_until(lambda: daemon_pid(daemon_env) not in (None, other.pid))
    finally:
        if other.poll() is None:
            other.kill()
            other.wait()


def test_changed_code_retires_the_daemon(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    """A checkout pulled (or a package upgraded) under a running daemon: the version string
    may not change, the code did. The daemon refuses, exits, and the next call gets a new one.
    Client and daemon run from a copy of the package: the copy is touched, never the checkout
    (a daemon the user runs from it would retire mid-session)."""
    import codeask.daemon.messages as loaded

    real = Path(loaded.__file__)
    real_mtime = real.stat().st_mtime_ns
    copy, env = copied_package(tmp_path / "pkg", daemon_env)
    first = codeask("search", "invoice pdf", "--json", cwd=project, env=env)
    assert first.returncode == 0 and first.stderr == ""
    pid = daemon_pid(env)
    touched_later(copy / "daemon" / "messages.py")
    stale = codeask("search", "invoice pdf", "--json", cwd=project, env=env)
    assert real.stat().st_mtime_ns == real_mtime, "the checkout's file is touched"
    assert stale.returncode == 0
    assert without_seconds(stale.stdout) == without_seconds(first.stdout)
    assert "codeask's code changed since the daemon started" in stale.stderr
    assert f"({copy / 'daemon' / 'messages.py'})" in stale.stderr  # the copy's, not ours
    assert wait_until(lambda: daemon_pid(env) != pid, timeout=20)
    fresh = codeask("search", "invoice pdf", "--json", cwd=project, env=env)
    assert fresh.returncode == 0 and fresh.stderr == ""
    assert daemon_pid(env) not in (None, pid)
    assert real.stat().st_mtime_ns == real_mtime, "the checkout's file was touched"
