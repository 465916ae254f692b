"""The daemon a forwarder starts on demand (client._start: fork and exec, no subprocess in the
forwarder) is started as `subprocess.Popen(..., start_new_session=True, cwd="/")` started it:
its own session, `/` as its cwd, /dev/null on stdin and stdout, daemon.log on stderr, and no
descriptor of the forwarder's (an editor's pipe kept open by the daemon would hang the editor).
A real daemon, asked through the client's own connect."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from daemon_helpers import daemon_pid

from codeask.daemon import client, paths


def test_a_daemon_started_on_demand_holds_nothing_of_its_starter(
    daemon_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("XDG_RUNTIME_DIR", "CODEASK_DAEMON__IDLE_SECONDS"):
        monkeypatch.setenv(name, daemon_env[name])  # the fixture stops this daemon at the end
    monkeypatch.chdir(tmp_path)
    folder = paths.private_folder(create=True)
    leak = os.open(tmp_path / "held.txt", os.O_CREAT | os.O_RDWR, 0o600)
    os.set_inheritable(leak, True)  # as an fd an editor hands down would be
    sock = client.connect(folder, start=True)
    sock.close()
    os.close(leak)
    started = client._started[-1]
    assert started.poll() is None
    assert daemon_pid(daemon_env) == started.pid
    pid = started.pid
    assert os.getsid(pid) == pid
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    assert fds[0] == fds[1] == os.devnull
    assert fds[2] == os.path.join(folder, paths.LOG_NAME)
    assert str(tmp_path / "held.txt") not in fds.values()
