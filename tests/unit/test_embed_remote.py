"""The embedding endpoint client's bounds and errors, against real loopback HTTP servers.

The servers here are small stand-ins (standard-library HTTP servers that hang, redirect, refuse
or answer fixed vectors): they play the failures a real server rarely shows on demand. The
provider against llama.cpp's real server is tested in tests/llm/test_embed_remote_real.py.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from codeask.config import DEFAULT_EMBED_MODEL, EmbedSettings, Settings
from codeask.core.embedding import remote as embed_remote
from codeask.core.embedding.embed import load_embedder, tier_dim
from codeask.core.embedding.remote import (
    NO_VECTOR,
    RemoteEmbedder,
    RemoteError,
    cache_stem,
    remote_spec,
)
from support.loopback import send_json

Reply = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


def vectors_of(dim: int) -> Reply:
    """Answer `dim`-sized OpenAI-style vectors (row i is all i+1)."""

    def reply(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        rows = [{"index": i, "embedding": [float(i + 1)] * dim} for i in range(len(body["input"]))]
        send_json(handler, status=200, payload={"data": rows})

    return reply


class StandIn:
    """A loopback HTTP server with a chosen reply; counts connections and keeps the requests."""

    def __init__(self, reply: Reply, host: str = "127.0.0.1") -> None:
        self.connections = 0
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                outer.connections += 1
                super().setup()

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                outer.requests.append({"path": self.path, "headers": headers, "body": body})
                reply(self, body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], StandIn]]:
    started: list[StandIn] = []

    def start(reply: Reply) -> StandIn:
        started.append(StandIn(reply))
        return started[-1]

    yield start
    for server in started:
        server.close()


def embed_settings(url: str, **fields: Any) -> EmbedSettings:
    return EmbedSettings(provider="openai", endpoint=url, model="code-model", **fields)


def embedder(url: str, dim: int = 0, **fields: Any) -> RemoteEmbedder:
    settings = embed_settings(url, **fields)
    return RemoteEmbedder(settings, remote_spec(settings), dim)


# ---- settings ----------------------------------------------------------------------------
def test_spec_needs_an_endpoint_and_a_model_name() -> None:
    with pytest.raises(RemoteError, match=r"needs embed\.endpoint"):
        remote_spec(EmbedSettings(provider="openai", model="m"))
    with pytest.raises(RemoteError, match=r"needs embed\.model"):
        remote_spec(EmbedSettings(provider="ollama", model=DEFAULT_EMBED_MODEL))
    with pytest.raises(RemoteError, match="http:// or https://"):
        remote_spec(EmbedSettings(provider="openai", endpoint="file:///etc", model="m"))
    ollama = remote_spec(EmbedSettings(provider="ollama", model="nomic-embed-text"))
    assert ollama.url == "http://127.0.0.1:11434/api/embed"
    pasted = remote_spec(EmbedSettings(provider="openai", endpoint="http://h:8080/v1/", model="m"))
    assert pasted.url == "http://h:8080/v1/embeddings"


def test_every_endpoint_and_model_gets_its_own_cache_file() -> None:
    specs = [
        remote_spec(EmbedSettings(provider=p, endpoint=e, model=m))  # type: ignore[arg-type]
        for p in ("openai", "ollama")
        for e in ("http://a:1", "http://b:1")
        for m in ("m", "m2")
    ]
    assert len({cache_stem(s) for s in specs}) == len(specs)


def test_invalid_bounds_fall_back_to_defaults() -> None:
    for bad in ({"request_texts": 0}, {"max_input_chars": 0}, {"request_timeout": 0}):
        with pytest.raises(ValueError):
            EmbedSettings(**bad)  # type: ignore[arg-type]


# ---- requests ------------------------------------------------------------------------------
def test_batches_are_bounded_and_rows_come_back_unit_length(
    serve: Callable[[Reply], StandIn],
) -> None:
    server = serve(vectors_of(4))
    rows = embedder(server.url, request_texts=2, max_input_chars=5).embed(["a" * 50] * 5)
    assert [len(r["body"]["input"]) for r in server.requests] == [2, 2, 1]
    assert all(t == "aaaaa" for r in server.requests for t in r["body"]["input"])
    assert rows.shape == (5, 4)
    assert abs(float(rows[0] @ rows[0]) - 1.0) < 1e-6


def test_the_key_goes_in_the_header_and_an_unset_variable_is_named(
    serve: Callable[[Reply], StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = serve(vectors_of(3))
    monkeypatch.setenv("TEAM_EMBED_KEY", "k-123")
    embedder(server.url, api_key_env="TEAM_EMBED_KEY").embed(["x"])
    assert server.requests[0]["headers"]["authorization"] == "Bearer k-123"
    monkeypatch.delenv("TEAM_EMBED_KEY")
    with pytest.raises(RemoteError, match=r"\$TEAM_EMBED_KEY, which is not set"):
        embedder(server.url, api_key_env="TEAM_EMBED_KEY").embed(["x"])


def test_a_redirect_is_not_followed_so_the_key_stays(
    serve: Callable[[Reply], StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = serve(vectors_of(3))

    def redirect(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        handler.send_response(307)
        handler.send_header("location", elsewhere.url + "/v1/embeddings")
        handler.send_header("content-length", "0")
        handler.end_headers()

    first = serve(redirect)
    monkeypatch.setenv("TEAM_EMBED_KEY", "k-123")
    with pytest.raises(RemoteError, match="HTTP 307"):
        embedder(first.url, api_key_env="TEAM_EMBED_KEY").embed(["x"])
    assert elsewhere.connections == 0


def test_a_refusal_is_one_line_with_the_servers_words_and_a_hint(
    serve: Callable[[Reply], StandIn],
) -> None:
    def refuse(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        send_json(
            handler, status=401, payload={"error": {"message": "bad key\x1b[31m\nforged line"}}
        )

    server = serve(refuse)
    with pytest.raises(RemoteError) as refused:
        embedder(server.url).embed(["x"])
    message = str(refused.value)
    assert "HTTP 401" in message and "bad key" in message and "embed.api_key_env" in message
    assert "\n" not in message and "\x1b" not in message


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"data": [{"embedding": [1.0, 2.0]}]}, "1 vectors"),  # 2 texts asked
        ({"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]}, "sizes"),
        ({"data": [{"embedding": [1.0, "NaN"]}, {"embedding": [1.0, 2.0]}]}, "not embeddings"),
        ({"object": "list"}, "not embeddings"),
    ],
)
def test_a_malformed_answer_is_refused(
    serve: Callable[[Reply], StandIn], answer: dict[str, Any], why: str
) -> None:
    server = serve(lambda handler, body: send_json(handler, status=200, payload=answer))
    with pytest.raises(RemoteError, match=why):
        embedder(server.url).embed(["a", "b"])


def test_another_size_under_the_same_name_is_refused(serve: Callable[[Reply], StandIn]) -> None:
    server = serve(vectors_of(8))
    with pytest.raises(RemoteError, match="now answers 8-dimensional vectors of 'code-model'"):
        embedder(server.url, dim=4).embed(["x"])


def test_vectors_wider_than_the_cap_are_refused_and_never_remembered(
    serve: Callable[[Reply], StandIn], tmp_path: Path
) -> None:
    """50,000 floats a row would grow a 2.4 MB index to 121 MB: the cap is named in the error,
    the size is not remembered, and a row exactly at the cap is taken."""
    wide = serve(vectors_of(50_000))
    with pytest.raises(RemoteError, match=r"50000-dimensional vectors .* at most 8,192"):
        embedder(wide.url).embed(["x"])
    settings = Settings(embed=embed_settings(wide.url, cache_dir=str(tmp_path)))
    assert tier_dim(settings) == 0
    assert not list((tmp_path / "embeddings").glob("*.json"))
    at_cap = serve(vectors_of(embed_remote.MAX_DIM))
    assert embedder(at_cap.url).embed(["x"]).shape == (1, embed_remote.MAX_DIM)


def test_an_endless_answer_is_cut(
    serve: Callable[[Reply], StandIn], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed_remote, "MAX_ANSWER_BYTES", 1 << 16)
    server = serve(vectors_of(20_000))
    with pytest.raises(RemoteError, match="more than"):
        embedder(server.url).embed(["x"])


# ---- a dead or hanging endpoint never holds up search ---------------------------------------
@pytest.fixture
def hanging() -> Iterator[tuple[str, list[socket.socket]]]:
    """A loopback port that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    stop.set()
    thread.join()
    for conn in accepted:
        conn.close()
    listener.close()


def test_a_hanging_endpoint_costs_one_search_its_timeout_then_rests(
    hanging: tuple[str, list[socket.socket]], caplog: pytest.LogCaptureFixture
) -> None:
    url, accepted = hanging
    model = embedder(url, dim=4, request_timeout=1.0)
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        assert model.embed_query("where are invoices totalled") is NO_VECTOR
    assert 0.9 < time.monotonic() - started < 5
    assert "search without the model tier" in caplog.text and url in caplog.text
    started = time.monotonic()
    assert model.embed_query("and refunds?") is NO_VECTOR
    assert time.monotonic() - started < 0.1
    assert len(accepted) == 1  # the second search did not even connect


def test_a_dead_endpoint_opens_the_index_with_no_size_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    settings = Settings(embed=embed_settings(url, cache_dir=str(tmp_path)))
    with caplog.at_level(logging.WARNING):
        assert tier_dim(settings) == 0
    assert "model tier waits for its server" in caplog.text and url in caplog.text
    with pytest.raises(
        RemoteError, match="the model tier has no size yet: cannot reach the openai"
    ):
        load_embedder(settings)


def test_a_dead_endpoint_keeps_the_size_the_index_holds(tmp_path: Path) -> None:
    """Another URL for the same model name (nothing remembered for it) while the server is down:
    the index opens with the size it holds (no rebuild), and its vectors wait for the server."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    settings = Settings(embed=embed_settings(url, cache_dir=str(tmp_path / "kept")))
    assert tier_dim(settings, built=384) == 384
    embedder = load_embedder(settings)
    assert embedder.dim == 384
    with pytest.raises(RemoteError, match="cannot reach"):
        embedder.embed_keyed(["h"], ["def f(): pass"])


def _outward_address() -> str:
    """This machine's address on its first non-loopback interface ('' when it has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks a route
        except OSError:
            return ""
        address = str(probe.getsockname()[0])
    return "" if address.startswith("127.") else address


SECRET_CODE = 'DB_PASSWORD = "hunter2-prod-7f3a9c"\nconnect(DB_PASSWORD)'


def test_a_remote_endpoint_gets_secret_literals_blanked_a_local_one_the_text() -> None:
    """As for a remote LLM: code sent off this machine loses literals assigned to secret-looking
    names (known token formats were already redacted at indexing, for every endpoint)."""
    address = _outward_address()
    if not address:
        pytest.skip("no non-loopback interface here to reach a server by")
    remote = StandIn(vectors_of(3), host=address)
    local = StandIn(vectors_of(3))
    try:
        embedder(remote.url).embed([SECRET_CODE])
        embedder(remote.url, dim=3).embed_query(SECRET_CODE)
        embedder(local.url).embed([SECRET_CODE])
    finally:
        remote.close()
        local.close()
    sent_off = [t for r in remote.requests for t in r["body"]["input"]]
    assert len(sent_off) == 2
    assert all("hunter2" not in t and "DB_PASSWORD" in t for t in sent_off)
    assert local.requests[0]["body"]["input"] == [SECRET_CODE]


def test_opening_an_index_waits_on_a_hanging_server_once_and_briefly(
    hanging: tuple[str, list[socket.socket]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing remembered, the server accepts and never answers: the size question gets a
    search's timeout (not `embed.request_timeout`), and opening again right after asks nothing."""
    monkeypatch.setattr(embed_remote, "QUERY_TIMEOUT", 1.0)
    url, accepted = hanging
    settings = Settings(embed=embed_settings(url, cache_dir=str(tmp_path), request_timeout=60.0))
    started = time.monotonic()
    assert tier_dim(settings, built=384) == 384
    assert time.monotonic() - started < 5
    started = time.monotonic()
    assert tier_dim(settings, built=384) == 384
    assert time.monotonic() - started < 0.1
    assert len(accepted) == 1


def test_a_trickling_answer_is_stopped_at_the_time_limit(
    serve: Callable[[Reply], StandIn],
) -> None:
    def trickle(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", "100000")
        handler.end_headers()
        for _ in range(40):  # a byte every 0.1 s: each read is quick, the answer never ends
            handler.wfile.write(b" ")
            handler.wfile.flush()
            time.sleep(0.1)

    server = serve(trickle)
    started = time.monotonic()
    with pytest.raises(RemoteError, match="still sending its answer"):
        embedder(server.url, request_timeout=1.0).embed(["x"])
    assert time.monotonic() - started < 2.5
