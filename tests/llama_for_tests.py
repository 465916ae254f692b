"""llama.cpp's server (tests/llama_server.py) as a test fixture wants it: skipped with the reason
when it cannot run here (opt-in CODEASK_LLM_TESTS=1, the llm-test extra, the GGUF), failed with
its log tail when it dies or hangs while starting. The real-LLM fixtures of tests/llm,
tests/lsp and tests/pg each wrap this; it is apart from llama_server.py because that one is
also the e2e's launcher, run where pytest is not installed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from llama_server import LlamaServer, ServerError, unavailable
from llama_server import llama_server as start_server


@contextmanager
def llama_for_tests(folder: Path, *, embedding: bool = False) -> Iterator[LlamaServer]:
    """The server (chat, or `embedding` mode) with its files in `folder`, until the block ends."""
    reason = unavailable(opt_in=True)
    if reason:
        pytest.skip(reason)
    try:
        with start_server(folder, embedding=embedding) as server:
            yield server
    except ServerError as exc:  # it died or hung while starting: fail with its log tail
        pytest.fail(str(exc))
