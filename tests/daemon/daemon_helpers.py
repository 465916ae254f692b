"""What the daemon tests share: running `codeask`, finding the daemon of an environment."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import codeask as package
from codeask.daemon.paths import LOCK_NAME, SOCKET_NAME
from codeask.daemon.server import lock_holder
from support import PYTHON_M
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


def daemon_log(env: dict[str, str]) -> str:
    return (Path(env["XDG_RUNTIME_DIR"]) / "codeask" / "daemon.log").read_text()


def kept_now(root: Path, env: dict[str, str]) -> str:
    """What the daemon last did with `root` after a search (core/driver/keep_current.py: held,
    or why not); '' while it has done nothing yet."""
    done = codeask("daemon", "--status", cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout).get("kept_current", {}).get(str(root.resolve()), ""))


def kept_outcome(root: Path, env: dict[str, str], timeout: float = 120.0) -> str:
    """`kept_now`, once the daemon has done something; generous `timeout`: its pass on a
    loaded machine."""
    assert wait_until(lambda: kept_now(root, env) != "", timeout), f"no outcome for {root}"
    return kept_now(root, env)


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


def writer_end(fifo: Path) -> int | None:
    """A write end of `fifo` once a reader has it open (None while none has)."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ENXIO:
            raise
        return None


@contextlib.contextmanager
def blocked_search(
    slow_root: Path, cwd: Path, env: dict[str, str]
) -> Iterator[subprocess.Popen[str]]:
    """`codeask search --root SLOW_ROOT` (an indexed folder) held in the daemon: its index's
    CURRENT is a FIFO this test keeps shut until the block ends (later reads find the real
    pointer). Yields the search's process, still running; it can end once the block has."""
    current = slow_root / ".codeask" / "CURRENT"
    pointer = current.read_bytes()
    saved = slow_root / ".codeask" / "CURRENT.saved"
    saved.write_bytes(pointer)
    current.unlink()
    os.mkfifo(current, 0o600)
    slow = subprocess.Popen(
        [*PYTHON_M, "search", "vat rate", "--root", str(slow_root)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    held: int | None = None
    try:
        while held is None:  # until the daemon's request thread opens it: then it blocks
            assert slow.poll() is None, slow.communicate()
            held = writer_end(current)
            time.sleep(0.02)
        os.replace(saved, current)  # later reads find the real pointer
        yield slow
    finally:
        if held is not None:
            os.write(held, pointer)
            os.close(held)
