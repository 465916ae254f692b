"""stream_chat and build_prompt against a real llama.cpp OpenAI-compatible server (SmolLM2-135M).

Small max_tokens keep each answer well under a second of CPU. The server streams no usage, so
"the request carried our prompt" is checked from llama.cpp's own log: the prompt tokens it
evaluated must equal the tokenizer's count of our messages in the model's chat template.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING

import msgspec
import pytest

from codeask import config
from codeask.config import LLMSettings
from codeask.core.ask.prompt import ContextBlock, Prompt, build_prompt
from codeask.core.llm import (
    ChatUsage,
    ContextExceeded,
    cut_short,
    fit_context,
    list_models,
    server_context_tokens,
    stream_chat,
)
from llama_server import CANCELLED

if TYPE_CHECKING:  # the fixture's type (tests/llama_server.py)
    from llama_server import LlamaServer

pytestmark = pytest.mark.llm

QUESTION = "What does snake_case do? Answer in one sentence."


def settings(server: LlamaServer, suffix: str = "", max_tokens: int = 24) -> LLMSettings:
    return LLMSettings(
        provider="openai",
        base_url=server.base_url + suffix,
        model="smollm2",
        max_tokens=max_tokens,
        context_tokens=server.n_ctx,
        temperature=0.0,
        read_timeout=60.0,
    )


def real_block(func: object, score: float) -> ContextBlock:
    """A ContextBlock holding a real function of codeask's own source."""
    lines, start = inspect.getsourcelines(func)  # type: ignore[arg-type]
    return ContextBlock(
        path="server/codeask/config.py",
        start_line=start,
        end_line=start + len(lines) - 1,
        language="python",
        symbol=getattr(func, "__name__", ""),
        kind="function",
        text="".join(lines),
        score=score,
    )


def prompt_with(n_blocks: int, s: LLMSettings) -> Prompt:
    funcs = [config.snake_case, config.build_settings, config.read_env, config.load_settings]
    blocks = [real_block(f, 1.0 - i / 10) for i, f in enumerate(funcs[:n_blocks])]
    return build_prompt(QUESTION, blocks, s)


def chatml(messages: list[dict[str, str]]) -> str:
    """The prompt text SmolLM2's chat template (ChatML) makes of our messages."""
    turns = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return turns + "<|im_start|>assistant\n"


async def test_streamed_answer_arrives_in_several_deltas(llama_server: LlamaServer) -> None:
    s = settings(llama_server, suffix="/v1")
    usage = ChatUsage()
    deltas = [d async for d in stream_chat(s, prompt_with(1, s).messages, usage=usage)]
    assert len(deltas) >= 3, deltas
    assert "".join(deltas).strip()
    assert usage.finish_reason in ("stop", "length")


async def test_the_server_evaluated_our_assembled_prompt(llama_server: LlamaServer) -> None:
    s = settings(llama_server, max_tokens=4)
    seen: list[int] = []
    for n_blocks in (1, 4):
        prompt = prompt_with(n_blocks, s)
        assert len(prompt.sources) == n_blocks and not prompt.truncated
        offset = llama_server.log_size()
        assert [d async for d in stream_chat(s, prompt.messages)]
        evaluated = llama_server.prompt_tokens_since(offset)
        assert evaluated == llama_server.count_tokens(chatml(prompt.messages))
        # The estimate errs high (so the budget holds), but not wildly.
        assert evaluated <= prompt.prompt_tokens <= 1.6 * evaluated
        seen.append(evaluated)
    assert seen[1] > seen[0] + 100


async def test_budgeted_prompt_fits_the_real_window(llama_server: LlamaServer) -> None:
    window = 1024  # half the server's: the check is cheaper and an overflow still runs
    s = msgspec.structs.replace(settings(llama_server, max_tokens=8), context_tokens=window)
    huge = real_block(config, 1.0)  # the whole config module, far over the window
    prompt = build_prompt(QUESTION, [huge, real_block(config.snake_case, 0.5)], s)
    assert prompt.truncated and len(prompt.sources) == 1  # snake_case merged into the module
    offset = llama_server.log_size()
    assert [d async for d in stream_chat(s, prompt.messages)]
    assert llama_server.prompt_tokens_since(offset) + s.max_tokens <= window


async def test_cancel_mid_stream_then_the_next_request_is_served(
    llama_server: LlamaServer,
) -> None:
    long = settings(llama_server, max_tokens=400)
    prompt = build_prompt("Write a long essay about configuration files.", [], long)
    first = asyncio.Event()
    received: list[str] = []

    async def consume() -> None:
        async for delta in stream_chat(long, prompt.messages):
            received.append(delta)
            first.set()

    offset = llama_server.log_size()
    task = asyncio.create_task(consume())
    await asyncio.wait_for(first.wait(), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    llama_server.wait_log(offset, CANCELLED)  # llama.cpp saw us hang up
    assert 1 <= len(received) < 400

    short = settings(llama_server, max_tokens=8)
    nxt = [d async for d in stream_chat(short, prompt_with(1, short).messages)]
    assert nxt and "".join(nxt).strip()


async def test_list_models(llama_server: LlamaServer) -> None:
    models = await list_models(settings(llama_server))
    assert len(models) == 1 and "SmolLM2" in models[0]


async def test_the_servers_window_is_read_from_its_props(llama_server: LlamaServer) -> None:
    """llama.cpp's GET /props says `default_generation_settings.n_ctx`; it bounds the budget."""
    configured = msgspec.structs.replace(settings(llama_server), context_tokens=8192)
    assert await server_context_tokens(configured) == llama_server.n_ctx == 2048
    assert (await fit_context(configured)).context_tokens == 2048


async def test_a_capped_real_answer_ends_with_length_and_is_cut_short(
    llama_server: LlamaServer,
) -> None:
    s = settings(llama_server, max_tokens=2)
    usage = ChatUsage()
    deltas = [d async for d in stream_chat(s, prompt_with(1, s).messages, usage=usage)]
    assert deltas and usage.finish_reason == "length"
    failure = cut_short(usage, s)
    assert failure is not None and "llm.max_tokens (now 2)" in failure.message


async def test_a_prompt_over_the_real_window_names_the_setting_and_the_servers_size(
    llama_server: LlamaServer,
) -> None:
    """A prompt budgeted for 8192 tokens sent as is (no probe): llama.cpp refuses it with
    HTTP 400 and its n_ctx; the message says which setting to change, and to what."""
    s = msgspec.structs.replace(settings(llama_server, max_tokens=8), context_tokens=8192)
    big = [{"role": "user", "content": "configuration " * 3000}]
    with pytest.raises(ContextExceeded) as err:
        _ = [d async for d in stream_chat(s, big)]
    assert "HTTP 400" in err.value.message
    assert f"set llm.context_tokens to {llama_server.n_ctx}" in err.value.message
