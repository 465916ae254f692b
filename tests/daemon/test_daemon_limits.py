"""The daemon's bounds on what one user's clients can hold open: connections (a cap derived
from its descriptor limit; the oldest connection that has not sent its request makes room,
else the next one is refused with a reply saying why), descriptors (EMFILE never ends it) and
request bytes in flight (a request frame over 1 MiB is refused at its length; the bytes being
read at once have a budget). Every test runs a real daemon under a low RLIMIT_NOFILE."""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import codeask, daemon_pid, socket_path, wait_until, without_seconds

from codeask import __version__
from codeask.daemon import protocol
from codeask.daemon.forwarder import hello
from codeask.daemon.limits import connection_limit
from support import PYTHON_M

pytestmark = pytest.mark.slow
#: The daemon's descriptor limit in these tests (soft and hard): its connection cap is half.
FDS = 128
LIMIT = connection_limit(FDS)
#: The daemon's peak resident memory while four 60 MB frames arrive, at most.
PEAK = 96 << 20


def limited(fds: int) -> None:
    """The child's RLIMIT_NOFILE, set between fork and exec."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (fds, fds))


def start_daemon(env: dict[str, str], log: Path, fds: int) -> subprocess.Popen[bytes]:
    """`codeask daemon` started with RLIMIT_NOFILE = `fds`, listening."""
    with log.open("ab") as err:
        proc = subprocess.Popen(
            [*PYTHON_M, "daemon"],
            env=env,
            cwd="/",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            start_new_session=True,
            preexec_fn=lambda: limited(fds),
        )
    assert wait_until(lambda: daemon_pid(env) == proc.pid, timeout=60)
    assert wait_until(lambda: socket_path(env).exists(), timeout=60)
    return proc


@pytest.fixture
def daemon(daemon_env: dict[str, str], tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`codeask daemon` started with RLIMIT_NOFILE = FDS, its log in the test's folder."""
    proc = start_daemon(daemon_env, tmp_path / "daemon.log", FDS)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def idle(path: Path, count: int) -> list[socket.socket]:
    """`count` connections that never send a request (those the daemon closed included).
    Each connect waits for room in the listen queue, as a blocking client's does."""
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
        except OSError:  # no daemon listens there any more
            sock.close()
            continue
        sock.settimeout(30)
        opened.append(sock)
    return opened


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()


def search(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return codeask("search", "invoice pdf", "--json", cwd=project, env=env)


def test_more_idle_connections_than_descriptors(
    project: Path, daemon_env: dict[str, str], daemon: subprocess.Popen[bytes]
) -> None:
    """300 connections that say nothing, against 128 descriptors: the daemon keeps serving
    (the oldest idle ones are closed to make room) and a search is answered by it, while the
    idle ones are open and after they close."""
    local = search(project, dict(daemon_env, CODEASK_DAEMON__ENABLED="false"))
    crowd = idle(socket_path(daemon_env), 3 * 100)
    try:
        found = search(project, daemon_env)
        assert found.stderr == "" and found.returncode == 0  # answered by a daemon: that one
        assert daemon_pid(daemon_env) == daemon.pid and daemon.poll() is None
        assert without_seconds(found.stdout) == without_seconds(local.stdout)
        held = lambda: sum(not _reply_or_eof(sock) for sock in crowd)  # noqa: E731
        assert wait_until(lambda: held() <= LIMIT, timeout=30)  # never more than the cap
        oldest = _reply(crowd[0])  # the first shed: told why
        assert oldest["status"] == "refused"
        assert f"without a request: the daemon was at its limit of {LIMIT} connections" in str(
            oldest["message"]
        )
    finally:
        close_all(crowd)
    again = search(project, daemon_env)
    assert again.stderr == "" and without_seconds(again.stdout) == without_seconds(local.stdout)
    assert daemon_pid(daemon_env) == daemon.pid and daemon.poll() is None


def test_out_of_descriptors_below_the_cap(daemon_env: dict[str, str], tmp_path: Path) -> None:
    """With 12 descriptors the cap (8 connections) is not reached before accept() fails with
    EMFILE: the daemon closes the oldest idle connection or waits, never exits, and answers
    once the crowd is gone."""
    proc = start_daemon(daemon_env, tmp_path / "daemon.log", 12)
    try:
        crowd = idle(socket_path(daemon_env), 100)  # past the listen queue's 64: accepted
        try:
            assert proc.poll() is None and daemon_pid(daemon_env) == proc.pid
        finally:
            close_all(crowd)
        pong = _ping(daemon_env)
        assert pong["status"] == "ok" and pong["info"]["pid"] == proc.pid
        assert "cannot accept a connection ([Errno 24]" in (tmp_path / "daemon.log").read_text()
    finally:
        proc.kill()
        proc.wait()


def test_the_connection_past_the_cap_is_refused_with_a_reason(
    project: Path, daemon_env: dict[str, str], daemon: subprocess.Popen[bytes]
) -> None:
    """LIMIT agent sessions held open (none idle: each sent its request and was answered):
    the next connection is refused with a reply saying so, the CLI answers in-process with
    that line, and once the sessions end the daemon answers again."""
    request = hello([str(project)], allow_broad_root=False, verbose=0)
    request.update(cwd=str(project), environment=protocol.environment(daemon_env))
    sessions = []
    try:
        for _ in range(LIMIT):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(60)
            sock.connect(str(socket_path(daemon_env)))
            protocol.send(sock, request)
            sessions.append(sock)
            assert protocol.receive(sock)["status"] == "ok"
        refused = search(project, daemon_env)
        assert refused.returncode == 0
        assert refused.stderr == (
            f"codeask: daemon unavailable (the daemon has {LIMIT} connections open, its "
            f"limit); answering in-process\n"
        )
    finally:
        close_all(sessions)
    assert wait_until(lambda: search(project, daemon_env).stderr == "", timeout=60)
    assert daemon.poll() is None


def test_large_frames_in_flight_are_bounded(
    daemon_env: dict[str, str], daemon: subprocess.Popen[bytes]
) -> None:
    """Four clients each announce and send a 60 MB request at once: each is refused at its
    length (over the 1 MiB request limit); the daemon's peak resident memory (VmHWM) stays
    under PEAK (a fresh daemon: ~38 MiB; on main these frames took it to 580-700 MiB), and it
    answers a ping after."""
    before = _hwm(daemon.pid)
    size = 60 << 20
    body = b'{"protocol":1,"pad":"' + b"x" * (size - 25) + b'"}'
    answers: list[dict[str, object] | None] = []

    def send_one() -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(socket_path(daemon_env)))
        sock.settimeout(60)
        with contextlib.suppress(OSError):  # refused at the length: the rest is not read
            sock.sendall(len(body).to_bytes(4, "big") + body)
        answers.append(_reply(sock))
        sock.close()

    senders = [threading.Thread(target=send_one) for _ in range(4)]
    for sender in senders:
        sender.start()
    for sender in senders:
        sender.join(120)
    peak = _hwm(daemon.pid)
    assert peak < PEAK, f"VmHWM {peak >> 20} MiB (from {before >> 20} MiB)"
    assert [a and a.get("message") for a in answers] == [
        f"a request of {len(body)} bytes is over the daemon's {1 << 20}-byte limit"
    ] * 4
    pong = _ping(daemon_env)
    assert pong["status"] == "ok" and pong["info"]["pid"] == daemon.pid


def _hwm(pid: int) -> int:
    """The peak resident memory of `pid`, in bytes (/proc/PID/status VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")


def _ping(env: dict[str, str]) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(socket_path(env)))  # blocking: waits for room in the listen queue
        sock.settimeout(60)
        protocol.send(
            sock, {"protocol": protocol.PROTOCOL, "version": __version__, "command": "ping"}
        )
        return protocol.receive(sock)


def _reply_or_eof(sock: socket.socket) -> bool:
    """Whether the daemon is done with this connection (a reply waits, or it hung up)."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) is not None
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(30)


def _reply(sock: socket.socket) -> dict[str, object]:
    """The frame the daemon sent on this connection ({} when it hung up without one)."""
    try:
        return protocol.receive(sock)
    except (protocol.ProtocolError, OSError):
        return {}
