"""A crash or kill of the daemon costs nothing: every client still gets the right answer (in
its own process, with one line on stderr), a later call starts a new daemon, and the index
it loads is the same. Real processes, real SIGKILLs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from daemon_helpers import codeask, daemon_pid, socket_path, wait_until, without_seconds

from support.writers import spawn

pytestmark = pytest.mark.slow
QUERIES = ("invoice pdf", "tax rate for a country", "mail the customer", "render_invoice_pdf")


def expected_answers(project: Path, env: dict[str, str]) -> dict[str, dict[str, object]]:
    answers = {}
    for query in QUERIES:
        local = codeask("search", query, "--json", "--no-daemon", cwd=project, env=env)
        assert local.returncode == 0, local.stderr
        answers[query] = without_seconds(local.stdout)
    return answers


def test_kill_9_while_clients_search(project: Path, daemon_env: dict[str, str]) -> None:
    expected = expected_answers(project, daemon_env)
    status_before = codeask("status", "--json", "--no-daemon", cwd=project, env=daemon_env)
    assert codeask("search", QUERIES[0], cwd=project, env=daemon_env).returncode == 0
    answers: list[tuple[str, subprocess.CompletedProcess[str]]] = []
    killed: list[int] = []
    done = threading.Event()

    def client(offset: int) -> None:
        for i in range(8):
            query = QUERIES[(i + offset) % len(QUERIES)]
            answers.append((query, codeask("search", query, "--json", cwd=project, env=daemon_env)))

    def killer() -> None:
        for _ in range(2):  # the first daemon, then the one a client started in its place
            if not wait_until(lambda: len(answers) >= 2 + 4 * len(killed) or done.is_set()):
                return
            pid = daemon_pid(daemon_env)
            if pid and pid not in killed:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                wait_until(lambda p=pid: daemon_pid(daemon_env) != p)

    clients = [threading.Thread(target=client, args=(n,)) for n in range(2)]
    kills = threading.Thread(target=killer)
    for thread in (*clients, kills):
        thread.start()
    for thread in clients:
        thread.join()
    done.set()
    kills.join()
    assert killed, "the daemon was never killed"
    assert len(answers) == 16
    wrong = [
        (query, run.returncode, run.stderr)
        for query, run in answers
        if run.returncode != 0 or without_seconds(run.stdout) != expected[query]
    ]
    assert wrong == [], "every answer is right, daemon or not"
    # A later call answers from a new daemon, which loads the index as it was.
    later = codeask("search", QUERIES[1], "--json", cwd=project, env=daemon_env)
    assert later.returncode == 0 and "daemon unavailable" not in later.stderr
    assert without_seconds(later.stdout) == expected[QUERIES[1]]
    alive = daemon_pid(daemon_env)
    assert alive and alive not in killed
    status_after = codeask("status", "--json", cwd=project, env=daemon_env)
    # the daemon's pass after a search (core/driver/keep_current.py) may have saved its walk
    # cache (disk_bytes); everything the index holds is as it was
    [after], [before] = json.loads(status_after.stdout), json.loads(status_before.stdout)
    assert after | {"disk_bytes": 0} == before | {"disk_bytes": 0}


def test_daemon_killed_mid_request(project: Path, daemon_env: dict[str, str]) -> None:
    """SIGSTOP holds the daemon while a client's request waits in it; SIGKILL then drops
    the connection under the client: it answers in-process and says so in one line."""
    expected = expected_answers(project, daemon_env)[QUERIES[2]]
    assert codeask("status", cwd=project, env=daemon_env).returncode == 0
    pid = daemon_pid(daemon_env)
    assert pid
    os.kill(pid, signal.SIGSTOP)
    client = spawn("search", QUERIES[2], "--json", cwd=project, env=daemon_env)
    try:
        assert wait_until(lambda: _connections(socket_path(daemon_env)) >= 2, timeout=30)
        time.sleep(0.5)  # its request is written (a few hundred bytes, one send)
    finally:
        os.kill(pid, signal.SIGKILL)
    out, err = client.communicate(timeout=300)
    assert client.returncode == 0, err
    assert "daemon unavailable (the daemon went away mid-request" in err
    assert err.count("\n") == 1, "one line (--json prints no summary)"
    assert without_seconds(out) == expected


def _connections(path: Path) -> int:
    """Sockets bound to `path` in /proc/net/unix: the listener, then accepted or queued ones."""
    lines = Path("/proc/net/unix").read_text().splitlines()
    return sum(1 for line in lines if line.endswith(" " + str(path)))


def test_stop_waits_for_the_request_in_flight(project: Path, daemon_env: dict[str, str]) -> None:
    """`codeask daemon --stop` while a search waits inside (its first: the index opens, the
    static model loads): the search still gets the daemon's own answer, then the daemon goes.
    SIGSTOP holds the daemon until both connections are queued, search first: without it a
    quick search could end before the test saw it arrive (1 run in 3 on a quiet machine)."""
    expected = expected_answers(project, daemon_env)[QUERIES[1]]
    assert codeask("status", cwd=project, env=daemon_env).returncode == 0  # opens no cache
    pid = daemon_pid(daemon_env)
    assert pid
    sock = socket_path(daemon_env)
    os.kill(pid, signal.SIGSTOP)
    try:
        client = spawn("search", QUERIES[1], "--json", cwd=project, env=daemon_env)
        assert wait_until(lambda: _connections(sock) >= 2, timeout=30)
        time.sleep(0.5)  # its request is written (a few hundred bytes, one send)
        stopper = spawn("daemon", "--stop", cwd=project, env=daemon_env)
        assert wait_until(lambda: _connections(sock) >= 3, timeout=30)
    finally:
        os.kill(pid, signal.SIGCONT)
    out, err = client.communicate(timeout=300)
    stop_out, stop_err = stopper.communicate(timeout=300)
    assert stopper.returncode == 0 and "stopped" in stop_out, stop_err
    assert (client.returncode, err) == (0, ""), "answered by the daemon, no fallback note"
    assert without_seconds(out) == expected
    assert daemon_pid(daemon_env) is None
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists(), timeout=15)
