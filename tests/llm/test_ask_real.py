"""`codeask ask` and `ask()` end to end against the real llama.cpp server (SmolLM2-135M).

The index is a real hybrid (lexical + dense) index of a copy of part of this repository's own
core package: the embedding module and its neighbours (~230 chunks, so embedding takes seconds,
not the minute the whole repository would). The question is the issue's acceptance question.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest

from codeask.core.ask.answer import AskRequest, ask
from codeask.core.indexer import FolderIndex
from llama_server import CANCELLED
from support import PYTHON_M, codeask

if TYPE_CHECKING:  # the fixture's type (tests/llama_server.py)
    from llama_server import LlamaServer

pytestmark = pytest.mark.llm

#: A fixed copy of part of codeask (the benchmark smoke test's corpus): the live source grows
#: with every change, and a test of the LLM path must not move with retrieval on a moving corpus.
MINI = Path(__file__).resolve().parents[1] / "data" / "mini_eval" / "corpus" / "codeask-mini"
CORE = "codeask/core"
QUESTION = "where is the embedding model loaded and its vectors cached?"


@pytest.fixture(scope="module")
def core_copy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FolderIndex]:
    """The fixed mini corpus, indexed lexically and densely (real model)."""
    root = tmp_path_factory.mktemp("codeask-src") / "codeask-mini"
    shutil.copytree(MINI, root)
    cache = tmp_path_factory.mktemp("embed-cache")  # module scope: name the cache explicitly
    (root / ".codeask.toml").write_text(f"[embed]\ncache_dir = {json.dumps(str(cache))}\n")
    # embed.cache_dir is a protected setting: the (test) user trusts this folder in their config.
    config_home = tmp_path_factory.mktemp("config")
    (config_home / "codeask").mkdir()
    trusted = f"trusted_folders = [{json.dumps(str(root))}]\n"
    (config_home / "codeask" / "config.toml").write_text(trusted)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_CONFIG_HOME", str(config_home))  # also for the CLI's subprocess
        folder = FolderIndex.open(root)
        folder.refresh()
        embedded, chunks = folder.embedded_counts()
        assert embedded == chunks > 100
        yield folder
        folder.close()


def llm_env(server: LlamaServer, max_tokens: int) -> dict[str, str]:
    """Settings for the real server, as a user would give them (environment variables)."""
    return {
        "CODEASK_LLM__PROVIDER": "openai",
        "CODEASK_LLM__BASE_URL": server.base_url,
        "CODEASK_LLM__MODEL": "smollm2",
        "CODEASK_LLM__CONTEXT_TOKENS": str(server.n_ctx),
        "CODEASK_LLM__MAX_TOKENS": str(max_tokens),
        "CODEASK_LLM__TEMPERATURE": "0.0",
        "CODEASK_LLM__READ_TIMEOUT": "120",
    }


#: How `codeask ask` reports an answer the model's token cap cut off (exit 3).
CUT_BY_MAX_TOKENS = "codeask: incomplete answer: the model stopped at its token limit"


def run_ask(env: dict[str, str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`codeask ask QUESTION ARGS` as a real subprocess; no CODEASK_LLM__ setting inherited."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CODEASK_LLM__")}
    return codeask("ask", QUESTION, "--root", str(root), *args, env={**clean, **env}, timeout=240)


def answered_or_cut(done: subprocess.CompletedProcess[str]) -> None:
    """A whole answer (exit 0), or one the token cap cut (exit 3, said so); never an error."""
    if done.returncode == 3:
        assert done.stderr.strip().splitlines()[-1].startswith(CUT_BY_MAX_TOKENS), done.stderr
    else:
        assert done.returncode == 0, done.stderr


def use_server(folder: FolderIndex, server: LlamaServer, max_tokens: int) -> object:
    """The folder's settings pointed at the real server."""
    llm = server.llm_settings(folder.settings.llm, max_tokens, read_timeout=120.0)
    return msgspec.structs.replace(folder.settings, llm=llm)


def chatml(messages: list[dict[str, str]]) -> str:
    """The prompt text SmolLM2's chat template (ChatML) makes of our messages."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


def test_cli_streams_an_answer_and_cites_the_embedding_module(
    core_copy: FolderIndex, llama_server: LlamaServer
) -> None:
    cmd = [*PYTHON_M, "ask", QUESTION, "--root", str(core_copy.root)]
    env = {**os.environ, **llm_env(llama_server, max_tokens=48)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    reads: list[tuple[float, bytes]] = []
    while piece := os.read(proc.stdout.fileno(), 4096):
        reads.append((time.monotonic(), piece))
    stderr = proc.communicate(timeout=180)[1].decode()
    out = b"".join(piece for _, piece in reads).decode()
    answered_or_cut(subprocess.CompletedProcess(cmd, proc.returncode, out, stderr))
    answer, _, sources = out.partition("\nSources:\n")
    assert answer.strip(), out
    before_sources = [piece for _, piece in reads if b"Sources:" not in piece]
    assert len(before_sources) >= 2, reads  # the answer arrived piece by piece
    assert f"{CORE}/embed.py:" in sources, sources


async def test_ask_streams_deltas_of_our_prompt(
    core_copy: FolderIndex, llama_server: LlamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_copy, "settings", use_server(core_copy, llama_server, 24))
    deltas: list[str] = []
    offset = llama_server.log_size()
    result = await ask(AskRequest(QUESTION, [core_copy]), deltas.append)
    assert result.error is None or (result.incomplete and "llm.max_tokens" in result.error)
    assert len(deltas) >= 3 and result.answer == "".join(deltas) and result.answer.strip()
    assert any(hit.path == f"{CORE}/embed.py" for hit in result.sources)
    # The server evaluated exactly our assembled prompt (its own token count of it).
    evaluated = llama_server.prompt_tokens_since(offset)
    assert evaluated == llama_server.count_tokens(chatml(result.prompt.messages))
    assert evaluated + 24 <= llama_server.n_ctx  # the budget held on the real tokenizer


async def test_cancelling_ask_mid_stream_then_the_server_keeps_serving(
    core_copy: FolderIndex, llama_server: LlamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_copy, "settings", use_server(core_copy, llama_server, 400))
    first = asyncio.Event()
    received: list[str] = []

    def on_delta(delta: str) -> None:
        received.append(delta)
        first.set()

    offset = llama_server.log_size()
    essay = "Write a long essay about how the index store saves files."
    request = AskRequest(essay, [core_copy], k=2)  # a short prompt: prompt eval is slow here
    task = asyncio.create_task(ask(request, on_delta))
    await asyncio.wait_for(first.wait(), 120)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    llama_server.wait_log(offset, CANCELLED)  # llama.cpp saw us hang up
    assert 1 <= len(received) < 400

    monkeypatch.setattr(core_copy, "settings", use_server(core_copy, llama_server, 8))
    again = await ask(AskRequest(QUESTION, [core_copy], k=1))
    assert again.answer.strip()
    assert again.error is None or (again.incomplete and "llm.max_tokens" in again.error)


def test_cli_answer_cut_by_the_token_cap_exits_3_and_says_incomplete(
    core_copy: FolderIndex, llama_server: LlamaServer
) -> None:
    """Issue 26 item 13: llama.cpp ends a capped answer with finish_reason "length"; that
    answer is not complete, and `codeask ask` must not exit 0 as if it were."""
    done = run_ask(llm_env(llama_server, max_tokens=3), core_copy.root)
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(CUT_BY_MAX_TOKENS) and "llm.max_tokens" in last and "3" in last
    answer, _, sources = done.stdout.partition("\nSources:\n")
    assert answer.strip(), done.stdout  # the part that arrived is printed
    assert f"{CORE}/embed.py:" in sources  # and still cites its sources


def test_cli_with_the_default_context_setting_fits_a_2048_token_server(
    core_copy: FolderIndex, llama_server: LlamaServer
) -> None:
    """Issue 26 item 13: `llm.context_tokens` left at its default (8192) against a server that
    holds 2,048 tokens: the prompt is budgeted to what the server reports (llama.cpp's
    /props), so the first ask is answered instead of failing with HTTP 400. `-k 40` offers
    as much code as a large repository's ten hits do (this corpus's chunks are small)."""
    assert llama_server.n_ctx == 2048
    env = llm_env(llama_server, max_tokens=64)
    del env["CODEASK_LLM__CONTEXT_TOKENS"]
    offset = llama_server.log_size()
    done = run_ask(env, core_copy.root, "-k", "40")
    assert "HTTP 400" not in done.stderr, done.stderr
    answered_or_cut(done)
    assert done.stdout.partition("\nSources:\n")[0].strip(), done.stdout
    evaluated = llama_server.prompt_tokens_since(offset)
    # The budget was the server's window, filled (not a token-starved prompt), and it held.
    assert evaluated > 1024 and evaluated + 64 <= llama_server.n_ctx
