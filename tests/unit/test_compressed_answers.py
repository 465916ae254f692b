"""A compressed answer is inflated under the same cap by both HTTP clients (one bounded reader).

A real loopback server (tests/support/embed_endpoint.py) answers every POST with a body of 1.8 KB
that inflates to 1 GiB (`Content-Encoding: gzip, gzip`), or 1 MB that inflates to 1 GiB (plain
gzip). The embedding client and the LLM client run in a child process that then reports its own
peak resident memory (VmHWM from /proc): both refuse with a clear error, and the peak stays far
below the gigabyte the body would inflate to (before, the embedding client let httpx inflate a
whole read at once: 2.15 GB peak).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from support import in_process_env
from support.embed_endpoint import Endpoint, gzip_of, stacked_gzip

#: Peak resident memory allowed to the child (~100 MB of it is Python, numpy and httpx; the
#: body cap is 64 MiB): far under the 1 GiB the body inflates to.
PEAK_BOUND_MB = 400
STACKED = "sent Content-Encoding 'gzip, gzip', which is not decoded"

CHILD = r"""
import asyncio, json, sys
from codeask.config import EmbedSettings, LLMSettings
from codeask.core.embedding.remote import RemoteEmbedder, RemoteError, remote_spec
from codeask.core.llm import LLMError, stream_chat

url = sys.argv[1]
said = {}
settings = EmbedSettings(provider="openai", endpoint=url, model="code-model", request_timeout=60)
try:
    RemoteEmbedder(settings, remote_spec(settings)).embed(["def f(): pass"])
    said["embed"] = "accepted"
except RemoteError as exc:
    said["embed"] = str(exc)

async def chat():
    llm = LLMSettings(provider="openai", base_url=url, model="m", read_timeout=60)
    async for _ in stream_chat(llm, [{"role": "user", "content": "hi"}]):
        pass

try:
    asyncio.run(chat())
    said["llm"] = "accepted"
except LLMError as exc:
    said["llm"] = exc.message
with open("/proc/self/status") as status:
    peak = next(line for line in status if line.startswith("VmHWM:"))
said["peak_mb"] = int(peak.split()[1]) // 1024
print(json.dumps(said))
"""


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    """The two bodies, made once (~3 s of compression)."""
    plain = gzip_of(1024)
    return {"gzip": plain, "gzip, gzip": stacked_gzip(1)}


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint().start()
    yield served
    served.close()


@pytest.mark.parametrize(
    ("encoding", "refusal", "llm_refusal"),
    [
        ("gzip, gzip", STACKED, STACKED),
        ("gzip", "sent more than 64 MiB; stopped", "sent a line longer than 1 MiB"),
    ],
)
def test_a_compressed_bomb_is_refused_with_memory_bounded_by_both_clients(
    encoding: str, refusal: str, llm_refusal: str, bombs: dict[str, bytes], endpoint: Endpoint
) -> None:
    """Stacked gzip is refused at the headers; plain gzip is inflated 64 KiB at a time until
    a cap (the embedding answer's 64 MiB, the chat stream's 1 MiB line) stops it."""
    endpoint.mode, endpoint.encoding, endpoint.body = "bomb", encoding, bombs[encoding]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, endpoint.url],
        env=in_process_env(HF_HUB_OFFLINE="1"),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert refusal in said["embed"] and "embedding endpoint" in said["embed"], said
    assert llm_refusal in said["llm"], said
    assert said["peak_mb"] < PEAK_BOUND_MB, said
    assert endpoint.requests == 2
