"""Helpers of the index-ownership tests: real `codeask` processes, a raw LSP pipe, disk probes.

Nothing here is a mock: the CLI and the server run as subprocesses with their own XDG cache,
the server is driven over stdio with plain JSON-RPC frames, and the checks read the snapshot
files the processes wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import msgspec

from codeask.core.records import Chunk
from codeask.core.storage.chunk_file import ChunkFile
from codeask.core.storage.chunk_map import ChunkDelta, ChunkMap
from codeask.core.storage.store import Manifest

from .cli import PYTHON_M
from .env import in_process_env

#: One topic per file, far apart in meaning: a verbatim docstring query has exactly one right
#: answer for the dense retriever, so a vector that answers for another file's chunk shows.
TOPICS: dict[str, tuple[str, str]] = {
    "bakery": ("knead_dough", "Knead the bread dough with flour, yeast and warm water."),
    "orbits": ("plan_orbit", "Compute the rocket thrust needed to reach a stable planetary orbit."),
    "garden": ("water_roses", "Water the rose bushes and prune the wilted garden flowers."),
    "ledger": ("balance_books", "Balance the accounting ledger: debits must equal credits."),
    "weather": ("forecast_rain", "Forecast tomorrow's rainfall from barometric pressure readings."),
    "chess": ("castle_king", "Castle the king towards the rook when neither piece has moved."),
    "music": ("tune_guitar", "Tune the guitar strings to standard pitch with a tuning fork."),
    "medicine": ("dose_insulin", "Compute an insulin dose from blood glucose and body weight."),
}


def topic_source(topic: str, version: int) -> str:
    """A small module whose chunks are about one topic; `version` changes the text."""
    name, doc = TOPICS[topic]
    return (
        f'"""{topic.title()} helpers, revision {version}."""\n\n\n'
        f"def {name}_v{version}(amount):\n"
        f'    """{doc}"""\n'
        f"    return amount * {version + 1}\n\n\n"
        f"def {name}_helper_v{version}(items):\n"
        f'    """Helper for {topic}: {doc.lower()}"""\n'
        f"    return [item for item in items if item]\n"
    )


def make_topic_project(root: Path, versions: dict[str, int] | None = None) -> Path:
    """One file per topic under `src/`, each at its version (default 0)."""
    for topic in TOPICS:
        write_topic(root, topic, (versions or {}).get(topic, 0))
    return root


def write_topic(root: Path, topic: str, version: int) -> Path:
    path = root / "src" / f"{topic}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(topic_source(topic, version), encoding="utf-8")
    return path


def env_for(cache: Path, **extra: str) -> dict[str, str]:
    """A subprocess environment: private XDG cache, offline model, no CODEASK_ overrides."""
    env = in_process_env()
    env.update(XDG_CACHE_HOME=str(cache), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", **extra)
    return env


def spawn(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """Start the real CLI in the background (stderr captured for messages)."""
    return subprocess.Popen(
        [*PYTHON_M, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(probe: Callable[[], Any], timeout: float, step: float = 0.1) -> Any:
    """Poll until `probe()` is truthy; fail with a clear message after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {probe}")
        time.sleep(step)


def tree_state(folder: Path) -> dict[str, tuple[int, int, int]]:
    """path → (inode, size, mtime_ns) of every file and folder under `folder`."""
    if not folder.exists():
        return {}
    out = {}
    for path in sorted(folder.rglob("*")):
        st = path.stat()
        out[path.relative_to(folder).as_posix()] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def live_snapshot(index_folder: Path) -> tuple[Manifest, list[Chunk]]:
    """The manifest and chunks CURRENT points at, read straight from disk (retried when the
    writer replaces the snapshot while we read it, as every reader does)."""
    for attempt in range(10):
        name = (index_folder / "CURRENT").read_text().strip()
        live = index_folder / name
        try:
            manifest = msgspec.json.decode((live / "manifest.json").read_bytes(), type=Manifest)
            base = ChunkFile(live / "chunks.rec")
            delta = (live / "chunks_delta.msgpack").read_bytes()
        except FileNotFoundError:
            if attempt == 9:
                raise
            time.sleep(0.05)
            continue
        chunks = ChunkMap(base, msgspec.msgpack.decode(delta, type=ChunkDelta))
        return manifest, list(chunks.values())
    raise AssertionError("unreachable")


def lines_on_disk(root: Path, rel: str, start: int, end: int) -> str:
    """Lines start..end (1-based, inclusive) of a file as it is on disk now ('' if gone)."""
    path = root / rel
    if not path.is_file():
        return ""
    return "\n".join(path.read_text(encoding="utf-8").splitlines()[start - 1 : end])


class LspPipe:
    """`codeask serve` over stdio with raw JSON-RPC frames (no client library in between)."""

    def __init__(self, roots: list[Path], env: dict[str, str], log: Path) -> None:
        self._log = log.open("wb")
        self.proc = subprocess.Popen(
            [*PYTHON_M, "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=env,
            cwd=roots[0] if roots else None,
        )
        self.roots = roots
        self.messages: list[dict[str, Any]] = []
        self._pending: dict[int, Future[Any]] = {}
        self._ids = 0
        self._write_lock = threading.Lock()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    def start(self) -> LspPipe:
        """initialize + initialized, as an editor does."""
        folders = [{"uri": r.as_uri(), "name": r.name} for r in self.roots]
        params = {
            "processId": os.getpid(),
            "rootUri": self.roots[0].as_uri() if self.roots else None,
            "capabilities": {"workspace": {"workspaceFolders": True}},
            "workspaceFolders": folders,
        }
        self.request("initialize", params)
        self.notify("initialized", {})
        return self

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps({"jsonrpc": "2.0", **payload}).encode()
        assert self.proc.stdin is not None
        with self._write_lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
            self.proc.stdin.flush()

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        """Send a request and wait for its result (a JSON-RPC error raises)."""
        with self._write_lock:
            self._ids += 1
            msg_id = self._ids
        future: Future[Any] = Future()
        self._pending[msg_id] = future
        self._send({"id": msg_id, "method": method, "params": params})
        return future.result(timeout)

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def _read_loop(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            line = out.readline()
            if not line:
                return
            while line.strip():
                key, _, value = line.decode().partition(":")
                if key.lower() == "content-length":
                    length = int(value)
                line = out.readline()
            self._dispatch(json.loads(out.read(length)))

    def _dispatch(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:  # a request from the server
            params = msg.get("params") or {}
            items = params.get("items", []) if isinstance(params, dict) else []
            result: list[dict[str, Any]] | None = (
                [{} for _ in items] if msg["method"] == "workspace/configuration" else None
            )
            self._send({"id": msg["id"], "result": result})
        elif "id" in msg:
            future = self._pending.pop(msg["id"], None)
            if future is not None:
                if "error" in msg:
                    future.set_exception(RuntimeError(str(msg["error"])))
                else:
                    future.set_result(msg.get("result"))
        else:
            self.messages.append(msg)

    def texts(self, needle: str) -> list[str]:
        """Messages (log and show) the server sent that contain `needle`."""
        out = []
        for msg in list(self.messages):
            params = msg.get("params")
            text = params.get("message", "") if isinstance(params, dict) else ""
            if needle in str(text):
                out.append(str(text))
        return out

    def status(self) -> dict[str, Any]:
        return dict(self.request("codeask/indexStatus", {}))

    def search(self, query: str, k: int = 5) -> list[dict[str, Any]]:
        return list(self.request("workspace/semanticSearch", {"query": query, "k": k})["results"])

    def wait_ready(self, timeout: float = 120) -> dict[str, Any]:
        """Until every folder is indexed and embedded."""

        def probe() -> dict[str, Any] | None:
            status = self.status()
            return status if status["state"] == "ready" and not status["warming"] else None

        return dict(wait_until(probe, timeout, 0.2))

    def stop(self) -> None:
        """shutdown + exit; killed if it does not end in time."""
        try:
            if self.proc.poll() is None:
                self.request("shutdown", None, timeout=30)
                self.notify("exit", None)
                self.proc.wait(15)
        except Exception:
            self.proc.kill()
            self.proc.wait(10)
        finally:
            self._log.close()
