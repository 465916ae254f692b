"""Two users never share a daemon. Run as root, with a real second user (`nobody`) in real
processes: a directory or a socket of another user is never connected to (the client answers
in-process instead), a socket whose listener runs as another uid gets no request, and the
daemon drops connections from another uid unanswered (SO_PEERCRED)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import (
    codeask,
    daemon_pid,
    run_dir,
    socket_path,
    stop_daemon,
    wait_until,
    without_seconds,
)

from codeask import __version__
from codeask.daemon.protocol import PROTOCOL

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user"),
]
PYTHON = "/usr/bin/python3"  # the system one: readable by nobody, unlike a venv under /root
#: A process of another user listening on a Unix socket; says what reaches it.
SQUATTER = r"""
import os, socket, sys
folder = sys.argv[1]
os.makedirs(folder, mode=0o755, exist_ok=True)
path = os.path.join(folder, "daemon.sock")
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
os.chmod(path, 0o666)
server.listen(8)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    conn.settimeout(5)
    try:
        data = conn.recv(65536)
    except OSError:
        data = b""
    print(f"connection {len(data)} bytes", flush=True)
    conn.close()
"""
#: Another user's process sending a well-formed `ping` to the path given; prints the reply.
INTRUDER = r"""
import json, socket, struct, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(20)
sock.connect(sys.argv[1])
body = json.dumps({"protocol": int(sys.argv[2]), "version": sys.argv[3], "command": "ping"})
try:
    sock.sendall(struct.pack(">I", len(body)) + body.encode())
    reply = sock.recv(65536)
except (BrokenPipeError, ConnectionResetError):  # dropped before or after the request
    reply = b""
print("reply", repr(reply), flush=True)
"""


@pytest.fixture()
def nobody() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no `nobody` user")


@pytest.fixture()
def shared() -> Iterator[Path]:
    """A world-writable sticky folder like /tmp, where another user can make things."""
    folder = Path(tempfile.mkdtemp(prefix="codeask-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def start_squatter(folder: Path, user: pwd.struct_passwd) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [PYTHON, "-c", SQUATTER, str(folder)],
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=[],
        cwd="/",
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def what_reached(proc: subprocess.Popen[str]) -> str:
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    return out


def searched_in_process(project: Path, env: dict[str, str], why: str) -> None:
    """The command answers right, in its own process, saying why the daemon was not used."""
    found = codeask("search", "invoice pdf", "--json", cwd=project, env=env)
    local = codeask("search", "invoice pdf", "--json", "--no-daemon", cwd=project, env=env)
    assert found.returncode == 0, found.stderr
    assert without_seconds(found.stdout) == without_seconds(local.stdout)
    assert "daemon unavailable (" in found.stderr and why in found.stderr, found.stderr


def test_a_runtime_dir_of_another_user_is_refused(
    project: Path, daemon_env: dict[str, str], shared: Path, nobody: pwd.struct_passwd
) -> None:
    daemon_env["XDG_RUNTIME_DIR"] = str(shared)  # e.g. a shared /tmp as the runtime dir
    squatter = start_squatter(shared / "codeask", nobody)
    try:
        searched_in_process(project, daemon_env, f"belongs to uid {nobody.pw_uid}")
    finally:
        reached = what_reached(squatter)
    assert reached == "", "the client never connected to the other user's socket"
    assert daemon_pid(daemon_env) is None


def test_a_socket_of_another_user_is_refused(
    project: Path, daemon_env: dict[str, str], shared: Path, nobody: pwd.struct_passwd
) -> None:
    ours = run_dir(daemon_env)
    ours.mkdir(mode=0o700)
    squatter = start_squatter(shared / "sq", nobody)
    try:
        # The other user's live socket, moved into our private directory (root can).
        os.rename(shared / "sq" / "daemon.sock", socket_path(daemon_env))
        searched_in_process(project, daemon_env, f"belongs to uid {nobody.pw_uid}")
        # Owned by us on disk, but the process listening behind it is not ours.
        os.chown(socket_path(daemon_env), os.getuid(), os.getgid())
        searched_in_process(project, daemon_env, f"runs as uid {nobody.pw_uid}")
    finally:
        reached = what_reached(squatter)
    assert reached == "connection 0 bytes\n", "it was only connected to once, sent nothing"


def test_the_daemon_drops_another_uid(
    project: Path, daemon_env: dict[str, str], shared: Path, nobody: pwd.struct_passwd
) -> None:
    daemon_env["XDG_RUNTIME_DIR"] = str(shared)  # a path `nobody` can walk to, for this test
    try:
        shared.chmod(0o755)
        assert codeask("status", cwd=project, env=daemon_env).returncode == 0
        pid = daemon_pid(daemon_env)
        assert pid
        run_dir(daemon_env).chmod(0o755)  # a loosened directory and socket: only the uid check
        socket_path(daemon_env).chmod(0o666)  # is left between the daemon and another user
        intruder = subprocess.run(
            [PYTHON, "-c", INTRUDER, str(socket_path(daemon_env)), str(PROTOCOL), __version__],
            user=nobody.pw_uid,
            group=nobody.pw_gid,
            extra_groups=[],
            cwd="/",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert intruder.stdout == "reply b''\n", intruder.stderr  # closed, not one byte answered
        log = (run_dir(daemon_env) / "daemon.log").read_text()
        assert f"refused a connection from uid {nobody.pw_uid}" in log
        assert daemon_pid(daemon_env) == pid
        assert codeask("status", cwd=project, env=daemon_env).returncode == 0  # we still are served
        assert wait_until(lambda: daemon_pid(daemon_env) == pid)
    finally:  # before `shared` (and the daemon's lock in it) is removed
        stop_daemon(daemon_env)
