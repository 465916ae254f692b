"""A raw-stdio LSP client for the hostile tests: real `codeask serve` process, bytes written
by hand (framing attacks need exactly the bytes the test chooses), replies read on a thread.

No pytest-lsp here: its client would refuse to send most of what these tests send.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from .cli import PYTHON_M
from .env import in_process_env

#: The server's peak resident memory (VmHWM) must stay under this through every hostile case.
#: Measured baseline on the small fixture workspace with the embedding model loaded:
#: ~345 MB; the ceiling is that baseline plus a 300 MB margin (docs/protocol.md, "Memory").
MEMORY_CEILING_MB = 650

REPLY_TIMEOUT = 30.0


def frame(payload: Any) -> bytes:
    """One LSP frame of a JSON value (ASCII-escaped, like every real client)."""
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def frame_bytes(body: bytes, length: int | None = None) -> bytes:
    """A frame around raw `body` bytes, optionally announcing a wrong length."""
    return b"Content-Length: %d\r\n\r\n" % (len(body) if length is None else length) + body


class Wire:
    """`python -m codeask serve` over pipes; replies by id, server requests answered null."""

    def __init__(self, cache: Path, extra_env: dict[str, str] | None = None) -> None:
        env = in_process_env()
        env.update(XDG_CACHE_HOME=str(cache), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
        env.update(extra_env or {})
        self.proc = subprocess.Popen(
            [*PYTHON_M, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self.replies: dict[Any, dict[str, Any]] = {}
        self.null_id_errors: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self.raw: list[bytes] = []
        self._cond = threading.Condition()
        self._next_id = 0
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # ---- io ----------------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = 0
            while True:
                line = stream.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line == b"\r\n":
                    break
            body = stream.read(length)
            self.raw.append(body)
            self._dispatch(json.loads(body))

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # a server → client request
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        with self._cond:
            if "method" in message:
                self.notifications.append(message)
            elif message.get("id") is None:
                self.null_id_errors.put(message)
            else:
                self.replies[message["id"]] = message
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        for line in stream:
            self.stderr.append(line.decode("utf-8", "replace"))

    def write(self, data: bytes) -> None:
        """Raw bytes to the server's stdin."""
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, payload: Any) -> None:
        """One well-framed JSON-RPC message."""
        self.write(frame(payload))

    # ---- requests ------------------------------------------------------------------------------
    def new_id(self) -> int:
        with self._cond:
            self._next_id += 1
            return self._next_id

    def wait_reply(self, msg_id: Any, timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        """The response to `msg_id` (result or error); AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while msg_id not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(
                        f"no reply to {msg_id!r} (exit code {self.proc.poll()}); "
                        f"stderr tail: {''.join(self.stderr[-20:])}"
                    )
                self._cond.wait(min(left, 0.2))
            return self.replies.pop(msg_id)

    def request(self, method: str, params: Any = None, timeout: float = REPLY_TIMEOUT) -> Any:
        """Send a request, return its full response message."""
        msg_id = self.new_id()
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.wait_reply(msg_id, timeout)

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def null_error(self, timeout: float = REPLY_TIMEOUT) -> dict[str, Any]:
        """The next error response with id null (what a broken message gets)."""
        return self.null_id_errors.get(timeout=timeout)

    def alive(self) -> dict[str, Any]:
        """Proof of life: codeask/indexStatus answers."""
        reply = self.request("codeask/indexStatus", {}, timeout=REPLY_TIMEOUT)
        assert "result" in reply, reply
        return dict(reply["result"])

    # ---- lifecycle ------------------------------------------------------------------------------
    def initialize(self, roots: list[Path], options: Any = None) -> None:
        params = {
            "processId": None,
            "rootUri": None,
            "capabilities": {},
            "workspaceFolders": [{"uri": r.as_uri(), "name": r.name} for r in roots],
            "initializationOptions": options,
        }
        reply = self.request("initialize", params, timeout=60)
        assert "result" in reply, reply
        self.notify("initialized", {})

    def wait_ready(self, timeout: float = 120.0) -> dict[str, Any]:
        """Until the index is searchable and embedded (the model loaded: a fair baseline)."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.alive()
            if status["state"] == "ready" and not status["warming"]:
                return status
            assert time.monotonic() < deadline, status
            time.sleep(0.2)

    def vm_hwm_mb(self) -> float:
        """Peak resident memory of the server process so far (VmHWM, /proc)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc status")

    def close(self) -> int:
        """shutdown + exit; kill if it does not end; the exit code."""
        if self.proc.poll() is None:
            try:
                self.request("shutdown", None, timeout=30)
                self.notify("exit", None)
                return self.proc.wait(15)
            except (AssertionError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        return self.proc.wait(15)
