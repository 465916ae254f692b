"""A server's vectors shared through the team database (`index.backend = "postgres"` with
`embed.provider = "openai"`): real PostgreSQL + pgvector, real llama.cpp server in embedding mode.

The team key is the model's name (`embed.model`), as for published revisions: a teammate who
reaches the same server by another URL gets every vector from the database and asks the server
nothing but its vector size (one short probe), while each local cache stays keyed by provider +
endpoint + model.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest

from codeask.config import EmbedSettings, Settings
from codeask.core.storage.factory import load_embedder
from codeask.core.storage.postgres.layered import LayeredCache
from codeask.core.storage.postgres.schema import MODEL_TABLE
from llama_for_tests import llama_for_tests
from llama_server import LlamaServer

pytestmark = [pytest.mark.slow]

DSN_ENV = "CODEASK_TEST_TEAM_DSN"
TEXTS = [f"def handler_{i}(request):\n    return route(request, {i})" for i in range(12)]


@pytest.fixture(scope="module")
def embed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    with llama_for_tests(tmp_path_factory.mktemp("llama-embed"), embedding=True) as server:
        yield server


def machine(cache: Path, endpoint: str) -> Settings:
    embed = EmbedSettings(
        provider="openai", endpoint=endpoint, model="smollm2-embed", cache_dir=str(cache)
    )
    settings = Settings(embed=embed)
    settings.index.backend = "postgres"
    settings.index.dsn_env = DSN_ENV
    return settings


def test_a_teammate_on_another_url_gets_the_servers_vectors_from_the_team(
    embed_server: LlamaServer, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    keys = [f"chunk-{i}" for i in range(len(TEXTS))]
    first = load_embedder(machine(tmp_path / "a", embed_server.base_url))
    vectors_a = first.embed_keyed(keys, TEXTS)
    assert first.computed == len(TEXTS)
    other_url = embed_server.base_url.replace("127.0.0.1", "localhost")
    offset = embed_server.log_size()
    second = load_embedder(machine(tmp_path / "b", other_url))
    assert isinstance(second.cache, LayeredCache)
    vectors_b = second.embed_keyed(keys, TEXTS)
    assert (second.computed, second.reused) == (0, len(TEXTS))
    assert np.abs(vectors_a - vectors_b).max() < 1e-3  # halfvec in the database
    # the server was asked once, for its size (the probe); no chunk went to it
    assert embed_server.log_since(offset).count("stop processing") == 1
    assert second.cache.local.path.name != first.cache.local.path.name  # type: ignore[attr-defined]
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(f"SELECT model, dim FROM {MODEL_TABLE}").fetchall()
    assert rows == [("smollm2-embed", 576)]
