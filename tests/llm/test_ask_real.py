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
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest

from codeask.core.ask import AskRequest, ask
from codeask.core.indexer import FolderIndex
from llama_server import CANCELLED

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
    cmd = [sys.executable, "-m", "codeask", "ask", QUESTION, "--root", str(core_copy.root)]
    env = {**os.environ, **llm_env(llama_server, max_tokens=48)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    reads: list[tuple[float, bytes]] = []
    while piece := os.read(proc.stdout.fileno(), 4096):
        reads.append((time.monotonic(), piece))
    stderr = proc.communicate(timeout=180)[1].decode()
    assert proc.returncode == 0, stderr
    out = b"".join(piece for _, piece in reads).decode()
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
    assert result.error is None
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
    assert again.error is None and again.answer.strip()
