"""A hostile LLM endpoint against the real CLI and the real language server (issue 11, item 5).

The endpoint (`_hostile_llm.py`) is real HTTP on loopback; the client is the installed
`codeask ask`, a separate process whose peak memory is its VmHWM, polled every 10 ms from
/proc/<pid>/status (not `wait4`'s ru_maxrss: Linux carries the forking parent's high-water mark
over the exec, so it would report pytest's size). The folder is indexed lexical-only
and is not a git repository, so `ask` loads no embedding model: its baseline is ~70 MB and the
300 MB ceiling measures what the attack adds. Every case checks the exit code, the exact
message, the partial answer, the time taken and the peak memory.

Deadlines are small here (read 2 s, total 4 s); the size caps are the shipped defaults
(1 MiB line, 32 MiB response, 65536-character answer).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _hostile_llm import PARTIAL, HostileLLM

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lsp"))
from lsp_harness import session, wait_for

pytestmark = pytest.mark.slow

CODEASK = Path(sys.executable).with_name("codeask")
CEILING_MB = 300.0
#: What the attack may add to the CLI's own peak (its baseline is measured, ~70 MB).
GROWTH_MB = 100.0
READ_TIMEOUT, TOTAL_TIMEOUT = 2, 4
#: Start-up, retrieval and a loaded machine, on top of the deadline.
SLACK_S = 15.0
PROVIDERS = ["openai", "ollama"]
QUESTION = "what does add do?"
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
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEASK_")}
    env.update(
        XDG_CONFIG_HOME=str(base / "config"),
        XDG_CACHE_HOME=str(base / "cache"),
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
    )
    env.update({f"CODEASK_LLM__{k.upper()}": str(v) for k, v in llm.items()})
    return env


def run_cli(args: list[str], env: dict[str, str], cwd: Path, timeout: float) -> Run:
    """Run `codeask ARGS`; output to files (a 64k answer must not block on a pipe)."""
    out, err = cwd.parent / "stdout.txt", cwd.parent / "stderr.txt"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        began = time.monotonic()
        proc = subprocess.Popen(
            [str(CODEASK), *args], stdout=stdout, stderr=stderr, env=env, cwd=cwd
        )
        status, peak_kb = _wait(proc, timeout)
        seconds = time.monotonic() - began
    code = os.waitstatus_to_exitcode(status)
    return Run(code, out.read_text(), err.read_text(), seconds, peak_kb / 1024)


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


def ask(project: Path, llm: HostileLLM, mode: str, provider: str, **extra: Any) -> Run:
    settings = {
        "provider": provider,
        "base_url": llm.url(mode),
        "model": "tiny",
        "read_timeout": READ_TIMEOUT,
        "total_timeout": TOTAL_TIMEOUT,
        **extra,
    }
    env = cli_env(project.parent, settings)
    return run_cli(["ask", QUESTION], env, project, TOTAL_TIMEOUT + SLACK_S)


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


@pytest.mark.parametrize("provider", PROVIDERS)
def test_flood_without_newlines_stops_at_the_line_cap(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    run = ask(project, llm, "flood", provider)
    url = chat_url(llm, "flood", provider)
    message = f"the endpoint {url} sent a line longer than 1 MiB; stopped (llm.max_line_bytes)"
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"flood/{provider}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_slow_drip_stops_at_the_total_timeout(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    run = ask(project, llm, "drip", provider)
    url = chat_url(llm, "drip", provider)
    message = f"no answer from {url} within llm.total_timeout={TOTAL_TIMEOUT} s; stopped"
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"drip/{provider}")
    assert run.seconds >= TOTAL_TIMEOUT  # one byte per 0.5 s never tripped read_timeout (2 s)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_endless_valid_events_stop_at_the_answer_cap(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    run = ask(project, llm, "endless", provider)
    message = "the answer exceeded llm.max_answer_chars=65536; stopped"
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"endless/{provider}")
    answer = run.stdout.split("\n\nSources:")[0]
    assert len(answer.rstrip("\n")) == 65536


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cut_mid_event_is_an_incomplete_answer(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    run = ask(project, llm, "cut", provider)
    url = chat_url(llm, "cut", provider)
    marker = "no done:true" if provider == "ollama" else "no [DONE]"
    message = (
        f"the stream from {url} ended before the answer was complete ({marker}); "
        "the partial answer is kept and marked incomplete"
    )
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"cut/{provider}")


def test_json_output_carries_the_partial_answer_and_the_flag(
    project: Path, llm: HostileLLM, baseline_mb: float
) -> None:
    settings = {"provider": "openai", "base_url": llm.url("cut"), "model": "tiny"}
    env = cli_env(project.parent, settings)
    run = run_cli(["ask", "--json", QUESTION], env, project, SLACK_S)
    payload = json.loads(run.stdout)
    assert run.code == EXIT_INCOMPLETE and payload["incomplete"] is True
    assert (
        payload["answer"] == PARTIAL and "ended before the answer was complete" in payload["error"]
    )
    assert payload["sources"] and run.peak_mb - baseline_mb < GROWTH_MB


@pytest.mark.parametrize("mode", ["cut_chunked", "huge_length"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_body_shorter_than_promised_is_an_incomplete_answer(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str, mode: str
) -> None:
    run = ask(project, llm, mode, provider)
    url = chat_url(llm, mode, provider)
    message = (
        f"the stream from {url} ended before the answer was complete "
        "(the connection closed mid-body); the partial answer is kept and marked incomplete"
    )
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"{mode}/{provider}")


@pytest.mark.parametrize("mode", ["chunked_endless", "gzip_bomb", "malformed"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_endless_body_stops_at_the_response_cap(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str, mode: str
) -> None:
    """Never the last chunk / 16 MiB decoded per 16 KiB sent / unparsable events forever."""
    run = ask(project, llm, mode, provider)
    url = chat_url(llm, mode, provider)
    message = f"{url} sent more than 32 MiB (llm.max_response_bytes); stopped"
    check(run, EXIT_INCOMPLETE, INCOMPLETE + message, baseline_mb, f"{mode}/{provider}")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_giant_error_body_is_read_only_for_its_excerpt(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    run = ask(project, llm, "error500", provider)
    url = chat_url(llm, "error500", provider)
    excerpt = ('{"error": {"message": "boom ' + "x" * 4096)[:200] + "…"
    check(run, EXIT_USER, f"codeask: {url} answered HTTP 500: {excerpt}", baseline_mb, "error500")
    assert run.seconds < SLACK_S


@pytest.mark.parametrize("provider", PROVIDERS)
def test_redirect_to_another_host_is_reported_not_followed(
    project: Path, llm: HostileLLM, baseline_mb: float, provider: str
) -> None:
    before = len(llm.seen("steal"))
    run = ask(project, llm, "redirect", provider, api_key_env="HOSTILE_TEST_KEY")
    url = chat_url(llm, "redirect", provider)
    target = url.replace("127.0.0.1", "localhost").replace("/redirect/", "/steal/")
    message = (
        f"codeask: {url} answered HTTP 307, a redirect to {target}; redirects are not followed "
        "(the API key must not go elsewhere): set llm.base_url to the final address"
    )
    check(run, EXIT_USER, message, baseline_mb, f"redirect/{provider}")
    assert len(llm.seen("steal")) == before  # nothing, let alone the Authorization header


def test_the_key_reaches_the_endpoint_but_never_the_redirect_target(
    project: Path, llm: HostileLLM
) -> None:
    """The redirect case above with a key set: the first host gets it, the second nothing."""
    settings = {
        "provider": "openai",
        "base_url": llm.url("redirect"),
        "model": "tiny",
        "api_key_env": "HOSTILE_TEST_KEY",
    }
    env = {**cli_env(project.parent, settings), "HOSTILE_TEST_KEY": "sk-hostile-test"}
    before = len(llm.seen("steal"))
    run = run_cli(["ask", QUESTION], env, project, SLACK_S)
    assert run.code == EXIT_USER and "redirects are not followed" in run.stderr
    assert llm.seen("redirect")[-1].headers["authorization"] == "Bearer sk-hostile-test"
    assert len(llm.seen("steal")) == before and "sk-hostile-test" not in run.stderr


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


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("endless_json", "{url} sent more than 8 MiB; stopped"),
        ("drip", "no model list from {url} within 3 s; stopped"),
        ("gzip_bomb", "{url} sent more than 8 MiB; stopped"),
        ("error500", "{url} answered HTTP 500: "),
    ],
)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_model_list_is_bounded(
    project: Path, llm: HostileLLM, provider: str, mode: str, expected: str
) -> None:
    """`list_models` in a small driver process: a never-ending JSON, a drip, a bomb, 5 GB."""
    path = "/api/tags" if provider == "ollama" else "/v1/models"
    url = llm.url(mode) + path
    env = cli_env(project.parent, {})
    began = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-c", DRIVER, provider, llm.url(mode)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    status, peak_kb = _wait(proc, SLACK_S)
    assert proc.stderr is not None
    message = proc.stderr.read().decode().strip()
    peak = peak_kb / 1024
    print(f"\nmodels {mode}/{provider}: {time.monotonic() - began:.1f} s, peak {peak:.0f} MB")
    assert os.waitstatus_to_exitcode(status) == 1
    assert message.startswith(expected.format(url=url)), message
    assert peak < CEILING_MB


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
