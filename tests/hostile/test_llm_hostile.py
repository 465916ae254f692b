"""A hostile LLM endpoint against the real CLI and the real language server (issue 11, item 5).

The endpoint (`_hostile_llm.py`) is real HTTP on loopback; the client is the installed
`codeask ask`, a separate process whose peak memory is its VmHWM, polled every 10 ms from
/proc/<pid>/status (not `wait4`'s ru_maxrss: Linux carries the forking parent's high-water mark
over the exec, so it would report pytest's size). The folder is indexed lexical-only
and is not a git repository, so `ask` loads no embedding model: its baseline is ~70 MB and the
300 MB ceiling measures what the attack adds. Every case checks the exit code, the exact
message, the partial answer, the time taken and the peak memory.

Deadlines are small here (read 2 s, total 4 s; 30 s where a size cap must trip first); the
line and answer caps are the shipped defaults (1 MiB, 65536 characters), the response cap is
8 MiB. The runs go four at a time (each process's VmHWM is its own).
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _hostile_llm import PARTIAL, HostileLLM

from support import private_env
from support.lsp_harness import session, wait_for

pytestmark = pytest.mark.slow

CODEASK = Path(sys.executable).with_name("codeask")
CEILING_MB = 300.0
#: What the attack may add to the CLI's own peak (its baseline is measured, ~70 MB).
GROWTH_MB = 100.0
READ_TIMEOUT, TOTAL_TIMEOUT = 2, 4
#: total_timeout where a size cap must trip first, however loaded the machine.
CAP_TIMEOUT = 30
#: llm.max_response_bytes here (the default, 32 MiB, costs CPU a shared machine lacks).
RESPONSE_CAP = 8 * 1024 * 1024
#: Start-up, retrieval and a loaded machine, on top of the deadline.
SLACK_S = 15.0
PROVIDERS = ["openai", "ollama"]
QUESTION = "what does add do?"
API_KEY = "sk-hostile-test"
EXIT_USER, EXIT_INCOMPLETE = 1, 3


@dataclass
class Run:
    """One finished CLI run."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    peak_mb: float


@pytest.fixture(scope="module")
def llm() -> Iterator[HostileLLM]:
    server = HostileLLM().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-file folder (not a git repository), indexed lexical-only once."""
    base = tmp_path_factory.mktemp("hostile-llm")
    root = base / "proj"
    root.mkdir()
    (root / "calc.py").write_text('def add(a, b):\n    """Add two numbers."""\n    return a + b\n')
    run = run_cli(["index", "--lexical-only", str(root)], cli_env(base, {}), root, 60)
    assert run.code == 0, run.stderr
    return root


def cli_env(base: Path, llm: dict[str, Any]) -> dict[str, str]:
    """A private XDG config and cache, no inherited CODEASK_ settings, these LLM settings."""
    return private_env(base, **{f"CODEASK_LLM__{k.upper()}": str(v) for k, v in llm.items()})


def run_cli(args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> Run:
    """Run `codeask ARGS`."""
    return run_process([str(CODEASK), *args], env, cwd, timeout)


def run_process(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> Run:
    """Run to the end; output to files (a 64k answer must not block on a pipe)."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        began = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, env=env, cwd=cwd)
        status, peak_kb = _wait(proc, timeout)
        seconds = time.monotonic() - began
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read().decode(), stderr.read().decode()
    return Run(os.waitstatus_to_exitcode(status), out, err, seconds, peak_kb / 1024)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int, int]:
    """(wait status, highest VmHWM KiB polled); kills the process past `timeout`."""
    deadline = time.monotonic() + timeout
    polled = 0
    while True:
        pid, status = os.waitpid(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return status, polled
        polled = max(polled, vm_kb(proc.pid, "VmHWM"))
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail(f"codeask did not exit within {timeout} s (killed)")
        time.sleep(0.01)


def vm_kb(pid: int, field: str) -> int:
    """A /proc/<pid>/status memory field in KiB (0 once the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


@pytest.fixture(scope="module")
def baseline_mb(project: Path, llm: HostileLLM) -> float:
    """Peak memory of an honest `codeask ask` on the same folder."""
    run = ask(project, llm, "ok", "openai")
    assert run.code == 0 and run.stdout.startswith("Hello from the fake."), run.stderr
    return run.peak_mb


def ask(project: Path, llm: HostileLLM, mode: str, provider: str, *flags: str, **extra: Any) -> Run:
    settings = {
        "provider": provider,
        "base_url": llm.url(mode),
        "model": "tiny",
        "read_timeout": READ_TIMEOUT,
        "total_timeout": TOTAL_TIMEOUT,
        "max_response_bytes": RESPONSE_CAP,
        **extra,
    }
    env = cli_env(project.parent, settings)
    env["HOSTILE_TEST_KEY"] = API_KEY
    return run_cli(["ask", *flags, QUESTION], env, project, settings["total_timeout"] + SLACK_S)


#: The CLI attacks, each for both providers: mode → settings besides the defaults above.
CAPPED = {"total_timeout": CAP_TIMEOUT}
CLI_MODES: dict[str, dict[str, Any]] = {
    "flood": CAPPED,
    "drip": {},
    "endless": CAPPED,
    "cut": {},
    "cut_chunked": {},
    "huge_length": {},
    "chunked_endless": CAPPED,
    "gzip_bomb": CAPPED,
    "malformed": CAPPED,
    "error500": {},
    "redirect": {},
}
#: Model-list attacks (`list_models` in a driver process): mode → expected message.
MODEL_MODES = {
    "endless_json": "{url} sent more than 8 MiB; stopped",
    "drip": "no model list from {url} within 3 s; stopped",
    "gzip_bomb": "{url} sent more than 8 MiB; stopped",
    "error500": "{url} answered HTTP 500: ",
}
#: Processes run at once: on two busy cores the runs are mostly start-up and waiting.
PARALLEL = 4


@pytest.fixture(scope="module")
def runs(project: Path, llm: HostileLLM, baseline_mb: float) -> dict[tuple[str, ...], Run]:
    """Every attack run once, a few at a time (each process's VmHWM is its own)."""
    jobs: dict[tuple[str, ...], Callable[[], Run]] = {}
    for mode, extra in CLI_MODES.items():
        for provider in PROVIDERS:
            jobs[("ask", mode, provider)] = functools.partial(
                ask, project, llm, mode, provider, api_key_env="HOSTILE_TEST_KEY", **extra
            )
    jobs[("ask-json", "cut", "openai")] = functools.partial(
        ask, project, llm, "cut", "openai", "--json"
    )
    for mode in MODEL_MODES:
        for provider in PROVIDERS:
            cmd = [sys.executable, "-c", DRIVER, provider, llm.url(mode)]
            env = cli_env(project.parent, {})
            jobs[("models", mode, provider)] = functools.partial(
                run_process, cmd, env, project, SLACK_S
            )
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {key: pool.submit(job) for key, job in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


def chat_url(llm: HostileLLM, mode: str, provider: str) -> str:
    path = "/api/chat" if provider == "ollama" else "/v1/chat/completions"
    return llm.url(mode) + path


def check(run: Run, code: int, message: str, baseline: float, label: str) -> None:
    """Exit code, the exact last stderr line, the partial answer, and the memory bounds."""
    print(
        f"\n{label}: exit {run.code} in {run.seconds:.1f} s, peak {run.peak_mb:.0f} MB "
        f"(baseline {baseline:.0f} MB)"
    )
    last = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
    assert (run.code, last) == (code, message), run.stderr[-2000:]
    if code == EXIT_INCOMPLETE:
        assert run.stdout.startswith(PARTIAL)
        assert "Sources:" in run.stdout  # the partial answer keeps its citations
    assert run.peak_mb < CEILING_MB
    assert run.peak_mb - baseline < GROWTH_MB


INCOMPLETE = "codeask: incomplete answer: "
Runs = dict[tuple[str, ...], Run]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_flood_without_newlines_stops_at_the_line_cap(
    runs: Runs, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    url = chat_url(llm, "flood", provider)
    message = f"the endpoint {url} sent a line longer than 1 MiB; stopped (llm.max_line_bytes)"
    run = runs[("ask", "flood", provider)]
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"flood/{provider}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_slow_drip_stops_at_the_total_timeout(
    runs: Runs, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    url = chat_url(llm, "drip", provider)
    message = f"no answer from {url} within llm.total_timeout={TOTAL_TIMEOUT} s; stopped"
    run = runs[("ask", "drip", provider)]
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"drip/{provider}")
    assert run.seconds >= TOTAL_TIMEOUT  # one byte per 0.5 s never tripped read_timeout (2 s)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_endless_valid_events_stop_at_the_answer_cap(
    runs: Runs, baseline_mb: float, provider: str
) -> None:
    message = "the answer exceeded llm.max_answer_chars=65536; stopped"
    run = runs[("ask", "endless", provider)]
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"endless/{provider}")
    answer = run.stdout.split("\n\nSources:")[0]
    assert len(answer.rstrip("\n")) == 65536


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cut_mid_event_is_an_incomplete_answer(
    runs: Runs, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    url = chat_url(llm, "cut", provider)
    marker = "no done:true" if provider == "ollama" else "no [DONE]"
    message = (
        f"the stream from {url} ended before the answer was complete ({marker}); "
        "the partial answer is kept and marked incomplete"
    )
    run = runs[("ask", "cut", provider)]
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"cut/{provider}")


def test_json_output_carries_the_partial_answer_and_the_flag(
    runs: Runs, baseline_mb: float
) -> None:
    run = runs[("ask-json", "cut", "openai")]
    payload = json.loads(run.stdout)
    assert run.code == EXIT_INCOMPLETE and payload["incomplete"] is True
    assert (
        payload["answer"] == PARTIAL and "ended before the answer was complete" in payload["error"]
    )
    assert payload["sources"] and run.peak_mb - baseline_mb < GROWTH_MB


@pytest.mark.parametrize("mode", ["cut_chunked", "huge_length"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_body_shorter_than_promised_is_an_incomplete_answer(
    runs: Runs, llm: HostileLLM, baseline_mb: float, provider: str, mode: str
) -> None:
    url = chat_url(llm, mode, provider)
    message = (
        f"the stream from {url} ended before the answer was complete "
        "(the connection closed mid-body); the partial answer is kept and marked incomplete"
    )
    run = runs[("ask", mode, provider)]
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"{mode}/{provider}")


@pytest.mark.parametrize("mode", ["chunked_endless", "gzip_bomb", "malformed"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_endless_body_stops_at_the_response_cap(
    runs: Runs, llm: HostileLLM, baseline_mb: float, provider: str, mode: str
) -> None:
    """Never the last chunk / 16 MiB decoded per 16 KiB sent / unparsable events forever."""
    url = chat_url(llm, mode, provider)
    message = f"{url} sent more than 8 MiB (llm.max_response_bytes); stopped"
    run = runs[("ask", mode, provider)]
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"{mode}/{provider}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_giant_error_body_is_read_only_for_its_excerpt(
    runs: Runs, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    url = chat_url(llm, "error500", provider)
    excerpt = ('{"error": {"message": "boom ' + "x" * 4096)[:200] + "…"
    run = runs[("ask", "error500", provider)]
    message = f"codeask: {url} answered HTTP 500: {excerpt}"
    check(run, EXIT_USER, message, baseline_mb, f"error500/{provider}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_redirect_to_another_host_is_reported_not_followed(
    runs: Runs, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    url = chat_url(llm, "redirect", provider)
    target = url.replace("127.0.0.1", "localhost").replace("/redirect/", "/steal/")
    message = (
        f"codeask: {url} answered HTTP 307, a redirect to {target}; redirects are not followed "
        "(the API key must not go elsewhere): set llm.base_url to the final address"
    )
    run = runs[("ask", "redirect", provider)]
    check(run, EXIT_USER, message, baseline_mb, f"redirect/{provider}")
    # The configured endpoint got the key; the host it redirected to got nothing at all.
    keys = {r.headers.get("authorization") for r in llm.seen("redirect")}
    assert keys == {f"Bearer {API_KEY}"} and llm.seen("steal") == []
    assert API_KEY not in run.stderr + run.stdout


# ---------------------------------------------------------------- model list (non-streaming)

DRIVER = """
import asyncio, sys
from codeask.config import LLMSettings
from codeask.core.llm import LLMError, list_models
settings = LLMSettings(provider=sys.argv[1], base_url=sys.argv[2], model="tiny",
                       connect_timeout=1, read_timeout=2)
try:
    print(asyncio.run(list_models(settings)))
except LLMError as exc:
    print(exc.message, file=sys.stderr)
    sys.exit(1)
"""


@pytest.mark.parametrize("mode", list(MODEL_MODES))
@pytest.mark.parametrize("provider", PROVIDERS)
def test_model_list_is_bounded(runs: Runs, llm: HostileLLM, provider: str, mode: str) -> None:
    """`list_models` in a small driver process: a never-ending JSON, a drip, a bomb, 5 GB."""
    path = "/api/tags" if provider == "ollama" else "/v1/models"
    expected = MODEL_MODES[mode].format(url=llm.url(mode) + path)
    run = runs[("models", mode, provider)]
    print(f"\nmodels {mode}/{provider}: {run.seconds:.1f} s, peak {run.peak_mb:.0f} MB")
    assert run.code == 1 and run.stderr.strip().startswith(expected), run.stderr
    assert run.peak_mb < CEILING_MB


# ---------------------------------------------------------------- the language server


def llm_options(llm: HostileLLM, mode: str) -> dict[str, Any]:
    return {
        "llm": {
            "provider": "openai",
            "baseUrl": llm.url(mode),
            "model": "tiny",
            "connectTimeout": 2,
            "readTimeout": READ_TIMEOUT,
            "totalTimeout": TOTAL_TIMEOUT,
        }
    }


async def test_lsp_ask_against_a_flood_is_incomplete_and_the_server_lives_on(
    tmp_path: Path, llm: HostileLLM
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text('def add(a, b):\n    """Add two numbers."""\n    return a + b\n')
    cache = tmp_path / "xdg"
    cache.mkdir()
    async with session([root], cache, options=llm_options(llm, "flood")) as lsp:
        await wait_for(lsp.status, lambda s: s["state"] == "ready", 90)
        pid = lsp.client._server.pid
        before_kb = vm_kb(pid, "VmHWM")
        began = time.monotonic()
        result = await asyncio.wait_for(
            lsp.request("workspace/askCode", {"question": QUESTION}), TOTAL_TIMEOUT + SLACK_S
        )
        seconds = time.monotonic() - began
        url = chat_url(llm, "flood", "openai")
        assert result["error"] == (
            f"the endpoint {url} sent a line longer than 1 MiB; stopped (llm.max_line_bytes)"
        )
        assert result["incomplete"] is True and result["answer"] == PARTIAL
        growth_mb = (vm_kb(pid, "VmHWM") - before_kb) / 1024
        print(f"\nlsp flood: {seconds:.1f} s, peak grew {growth_mb:.0f} MB")
        assert growth_mb < GROWTH_MB
        status = await lsp.status()  # alive and answering
        assert status["state"] in ("ready", "indexing")
        again = await lsp.request("workspace/askCode", {"question": QUESTION})
        assert again["error"] == result["error"] and again["sources"]
