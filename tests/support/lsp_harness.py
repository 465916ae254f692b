"""End-to-end harness: the real `codeask serve` over stdio, driven by pytest-lsp.

Every test builds a real git repository with pygit2 (tests/support/gitrepo.py) and starts the
server as a subprocess with its own XDG cache, unless it asks for the session-wide
`shared_cache` (embeddings of the same fixture files are then reused across tests, which
is the point of the content-hash cache and keeps the suite fast on two cores).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from . import gitrepo
from .cli import PYTHON_M
from .env import in_process_env

T = TypeVar("T")

#: pytest-lsp 1.0.1 ships these stored capability sets (names as `client_capabilities` wants).
CLIENTS = ("neovim", "visual-studio-code")

FILES: dict[str, str] = {
    "app/__init__.py": '"""A small demo application."""\n',
    "app/config.py": '''"""Configuration loading."""

import tomllib


def parse_config(path):
    """Read the TOML configuration file at `path` and return the settings as a dict."""
    with open(path, "rb") as handle:
        return tomllib.load(handle)


def merge_settings(defaults, overrides):
    """Combine default settings with user overrides; overrides win."""
    merged = dict(defaults)
    merged.update(overrides)
    return merged
''',
    "app/mathutil.py": '''"""Number helpers."""


def is_prime(number):
    """Check whether a number is a prime number."""
    if number < 2:
        return False
    return all(number % d for d in range(2, int(number**0.5) + 1))


def fibonacci(count):
    """The first `count` Fibonacci numbers."""
    values = [0, 1]
    while len(values) < count:
        values.append(values[-1] + values[-2])
    return values[:count]
''',
    "app/net.py": '''"""Downloading things."""

import time
import urllib.request


def retry(action, attempts=3, delay=0.5):
    """Call `action` until it succeeds, sleeping between failed attempts."""
    for attempt in range(attempts):
        try:
            return action()
        except OSError:
            if attempt == attempts - 1:
                raise
            time.sleep(delay)


def fetch_url(url, timeout=10):
    """Download the body of an HTTP URL, retrying on network errors."""
    return retry(lambda: urllib.request.urlopen(url, timeout=timeout).read())
''',
    "app/cache.py": '''"""An in-memory cache."""


class LruCache:
    """Keep the most recently used entries, evicting the oldest when full."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.entries = {}

    def get(self, key):
        """Return a cached value and mark it as recently used."""
        value = self.entries.pop(key)
        self.entries[key] = value
        return value

    def put(self, key, value):
        """Store a value, evicting the least recently used entry when over capacity."""
        self.entries.pop(key, None)
        self.entries[key] = value
        if len(self.entries) > self.capacity:
            oldest = next(iter(self.entries))
            del self.entries[oldest]
''',
    "app/text.py": '''"""Text helpers."""

import re


def slugify(title):
    """Turn a title into a lowercase URL slug with dashes."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def word_count(text):
    """Count the words in a piece of text."""
    return len(text.split())
''',
    "README.md": "# demo\n\nA tiny project used by the language-server tests.\n",
}

NEW_FUNCTION = '''

def reverse_words(sentence):
    """Reverse the order of the words in a sentence."""
    return " ".join(reversed(sentence.split()))
'''


def build_project(root: Path) -> Path:
    """A real git repository: two commits by two authors, a clean working tree."""
    repo = gitrepo.make_repo(root)
    first = {k: v for k, v in FILES.items() if k != "app/cache.py"}
    gitrepo.commit(repo, first, "Initial import", gitrepo.ALICE, gitrepo.EPOCH)
    gitrepo.commit(
        repo,
        {"app/cache.py": FILES["app/cache.py"]},
        "Add an LRU cache",
        gitrepo.BOB,
        gitrepo.EPOCH + 86_400,
    )
    return root


def plain(value: Any) -> Any:
    """pygls hands untyped results over as namedtuple-like objects; make them dicts."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def server_env(cache: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The server's environment: a private XDG cache, offline model, no CODEASK_ overrides
    (except what the test passes in `extra`, e.g. the team database's DSN)."""
    env = in_process_env()
    env.update(XDG_CACHE_HOME=str(cache), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.update(extra or {})
    return env


def make_client() -> LanguageClient:
    """pytest-lsp's client, plus a handler that records `client/registerCapability`."""
    client = make_test_lsp_client()
    registrations: list[types.Registration] = []
    client.registrations = registrations  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        registrations.extend(params.registrations)

    deltas: list[dict[str, Any]] = []
    client.deltas = deltas  # type: ignore[attr-defined]

    @client.feature("codeask/answerDelta")
    def answer_delta(params: Any) -> None:
        deltas.append(plain(params))

    return client


class Session:
    """A started server and the test-side helpers to drive it."""

    def __init__(self, client: LanguageClient, root: Path | None) -> None:
        self.client = client
        self.root = root

    def uri(self, rel: str) -> str:
        assert self.root is not None
        return (self.root / rel).as_uri()

    async def request(self, method: str, params: Any = None) -> Any:
        return plain(await self.client.protocol.send_request_async(method, params))

    async def status(self) -> dict[str, Any]:
        return await self.request("codeask/indexStatus", {})

    async def search(self, query: str, **extra: Any) -> list[dict[str, Any]]:
        result = await self.request("workspace/semanticSearch", {"query": query, **extra})
        return result["results"]

    async def command(self, name: str, *args: Any) -> Any:
        params = types.ExecuteCommandParams(command=name, arguments=list(args))
        return plain(await self.client.workspace_execute_command_async(params))

    async def hover(self, uri: str, line: int, character: int = 4) -> types.Hover | None:
        params = types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
        return await self.client.text_document_hover_async(params)

    async def symbols(self, query: str) -> list[Any]:
        params = types.WorkspaceSymbolParams(query=query)
        return list(await self.client.workspace_symbol_async(params) or [])

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=uri, language_id="python", version=version, text=text
                )
            )
        )

    def save(self, uri: str) -> None:
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )

    def watched(self, *changes: tuple[str, types.FileChangeType]) -> None:
        events = [types.FileEvent(uri=uri, type=kind) for uri, kind in changes]
        self.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(changes=events)
        )

    async def wait_ready(self, timeout: float = 90.0) -> dict[str, Any]:
        """Until every folder is indexed and embedded."""
        return await wait_for(
            self.status, lambda s: s["state"] == "ready" and not s["warming"], timeout
        )

    def log_lines(self, needle: str) -> list[str]:
        return [m.message for m in self.client.log_messages if needle in m.message]


async def wait_for(
    probe: Callable[[], Awaitable[T]], done: Callable[[T], bool], timeout: float, step: float = 0.1
) -> T:
    """Poll `probe` until `done(value)`; fail with the last value after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = await probe()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s; last value: {value!r}")
        await asyncio.sleep(step)


def init_params(
    roots: list[Path], client: str = "visual-studio-code", options: Any = None
) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=client_capabilities(client),
        workspace_folders=[types.WorkspaceFolder(uri=r.as_uri(), name=r.name) for r in roots],
        initialization_options=options,
    )


@asynccontextmanager
async def session(
    roots: list[Path],
    cache: Path,
    *,
    client: str = "visual-studio-code",
    options: Any = None,
    initialize: bool = True,
    env: Mapping[str, str] | None = None,
    serve_args: Sequence[str] = (),
) -> AsyncIterator[Session]:
    """Start `python -m codeask serve [serve_args]`, optionally initialize it, always stop it."""
    config = ClientServerConfig(
        server_command=[*PYTHON_M, "serve", *serve_args],
        client_factory=make_client,
        server_env=server_env(cache, env),
    )
    lsp = await config.start()
    assert isinstance(lsp, LanguageClient)
    try:
        if initialize:
            await lsp.initialize_session(init_params(roots, client, options))
        yield Session(lsp, roots[0] if roots else None)
        if initialize:
            await asyncio.wait_for(lsp.shutdown_session(), 30)
    finally:
        await stop_server(lsp, 10.0 if initialize else 2.0)


async def stop_server(lsp: LanguageClient, grace: float = 10.0) -> None:
    """pygls' stop() waits for the server to exit by itself; end it if it does not."""
    process = lsp._server
    if process is not None and process.returncode is None:
        try:
            await asyncio.wait_for(asyncio.shield(process.wait()), grace)
        except TimeoutError:
            process.kill()
    await lsp.stop()


async def raw_send(client: LanguageClient, payload: dict[str, Any]) -> None:
    """Write one JSON-RPC message exactly as given (no client-side typing)."""
    writer = client.protocol.writer
    assert writer is not None
    data = json.dumps({"jsonrpc": "2.0", **payload}).encode()
    written = writer.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
    if asyncio.iscoroutine(written) or isinstance(written, asyncio.Future):
        await written


async def raw_request(client: LanguageClient, method: str, params: Any) -> Any:
    """Send params exactly as given (no client-side typing), await the response."""
    protocol = client.protocol
    msg_id = str(uuid.uuid4())
    future: Future[Any] = Future()
    protocol._request_futures[msg_id] = future
    await raw_send(client, {"id": msg_id, "method": method, "params": params})
    return plain(await asyncio.wait_for(asyncio.wrap_future(future), 30))


async def hover_text(lsp: Session, uri: str, line: int, character: int = 4) -> str:
    """Hover is budgeted (null when not ready in time); a loaded machine may need a retry."""
    for _ in range(10):
        hover = await lsp.hover(uri, line, character)
        if hover is not None:
            assert isinstance(hover.contents, types.MarkupContent)
            return hover.contents.value
    raise AssertionError("hover never answered")


def check_related_hover(hover: str, root: Path) -> None:
    """The hover inside `LruCache.get` of FILES: related code in other files (at most 5 links,
    the first into `root`'s app/), then the last commit that touched it."""
    lines = hover.splitlines()
    assert lines[0] == "**Related code**"
    links = [line for line in lines if line.startswith("- [")]
    assert 1 <= len(links) <= 5
    assert all("app/cache.py" not in link for link in links)
    assert f"({root.as_uri()}/app/" in links[0] and "#L" in links[0]
    assert "by Bob Builder, 2024-03-02: Add an LRU cache" in hover
