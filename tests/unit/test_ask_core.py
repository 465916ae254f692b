"""ask(): retrieval → editor → git history → prompt → streamed answer, and `codeask ask`.

Real parts throughout: a small project indexed with the real packaged embedder (or lexically
where dense does not matter), real git repositories (pygit2), and a loopback HTTP server that
speaks the OpenAI streaming protocol (a protocol fake: the real llama.cpp server is in tests/llm).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import msgspec
import pygit2
import pytest

from codeask.config import Settings
from codeask.core.ask.answer import AskRequest, AskResult, ask, prepare
from codeask.core.ask.prompt import EditorContext
from codeask.core.indexer import FolderIndex
from codeask.core.llm import resolve
from codeask.core.search.retrieve import Filters
from codeask.core.storage.lexical.index import expand_query as retrieval_query
from codeask.core.storage.lexical.index import stems
from support import codeask, in_process_env
from support.gitrepo import BOB, EPOCH, commit, make_repo, write_files

# ---------------------------------------------------------------- the fixture project

EMBEDDING = '''"""Turn text chunks into vectors."""

BATCH = 16


def embed_chunks(chunks, model):
    """Embed chunks in batches of BATCH with the model; one vector per chunk."""
    vectors = []
    for start in range(0, len(chunks), BATCH):
        vectors.extend(model.encode(chunks[start : start + BATCH]))
    return [normalise(v) for v in vectors]


def normalise(vector):
    """Scale a vector to unit length so cosine similarity is a dot product."""
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]
'''

STORAGE = '''"""Vectors on disk."""


class VectorStore:
    """Keeps vectors by id and finds the nearest ones."""

    def __init__(self):
        self.rows = {}

    def add(self, ids, vectors):
        """Store vectors under their ids."""
        self.rows.update(zip(ids, vectors))

    def query(self, vector, k):
        """The k nearest stored vectors by dot product."""
        scored = sorted(self.rows.items(), key=lambda kv: -dot(kv[1], vector))
        return scored[:k]

    def remove(self, ids):
        """Forget vectors."""
        for i in ids:
            self.rows.pop(i, None)


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))
'''

TOKENIZER = '''"""Words and limits."""

TOKEN_LIMIT = 512


def split_words(text):
    """Split text into lower-case words."""
    return text.lower().split()


def clip_tokens(words, limit=TOKEN_LIMIT):
    """Keep the first `limit` words."""
    return words[:limit]
'''

SETTINGS = '''"""Application settings."""

DATABASE_URL = "postgres://app:hunter2pass@db.internal/app"
aws_access_key_id = "AKIAIOSFODNN7EXAMPLE"
password = "correct-horse-battery"


def load_settings(path):
    """Read the settings file and the database password."""
    with open(path) as handle:
        return dict(line.split("=", 1) for line in handle)
'''

README = """# Tiny vectors

## Usage

Call `embed_chunks` then store the vectors in a `VectorStore`.
"""

PROJECT = {
    "pkg/embedding.py": EMBEDDING,
    "pkg/storage.py": STORAGE,
    "pkg/tokenizer.py": TOKENIZER,
    "pkg/settings.py": SETTINGS,
    "README.md": README,
}


def write_project(root: Path, files: dict[str, str] = PROJECT) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def llm_settings(folder: FolderIndex, **llm: Any) -> Settings:
    """The folder's settings with some LLM fields replaced."""
    return msgspec.structs.replace(
        folder.settings, llm=msgspec.structs.replace(folder.settings.llm, **llm)
    )


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FolderIndex]:
    """The project indexed with the real packaged embedder (~20 chunks)."""
    root = write_project(tmp_path_factory.mktemp("dense"))
    # Module scope runs before the per-test cache fixture: name a private cache explicitly
    # (in the project file, so `codeask ask` subprocesses read the same settings).
    cache = tmp_path_factory.mktemp("dense-cache")
    (root / ".codeask.toml").write_text(
        f"[embed]\ncache_dir = {json.dumps(str(cache))}\n[history]\nenabled = false\n"
    )
    # embed.cache_dir is a protected setting: the (test) user trusts this folder in their config.
    config_home = tmp_path_factory.mktemp("dense-config")
    (config_home / "codeask").mkdir()
    trusted = f"trusted_folders = [{json.dumps(str(root))}]\n"
    (config_home / "codeask" / "config.toml").write_text(trusted)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_CONFIG_HOME", str(config_home))
        folder = FolderIndex.open(root)
        report = folder.refresh()
        assert report.chunks_embedded == folder.storage.chunk_count() > 10
        yield folder
        folder.close()


@pytest.fixture
def lexical(tmp_path: Path) -> Iterator[FolderIndex]:
    """The project chunked and searchable, nothing embedded yet (a warming index)."""
    folder = FolderIndex(write_project(tmp_path / "lexical"), Settings())
    folder.refresh(embed=False, history=False)
    yield folder
    folder.close()


def user_message(result: AskResult) -> str:
    messages = result.prompt.messages
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


def header(result: AskResult, index: int) -> str:
    """The `path:start-end` header a source's block starts with (when not merged)."""
    chunk = result.sources[index].chunk
    if chunk.start_line == chunk.end_line:
        return f"{chunk.path}:{chunk.start_line} ("
    return f"{chunk.path}:{chunk.start_line}-{chunk.end_line} ("


# ---------------------------------------------------------------- prompt-only


async def test_prompt_only_holds_the_right_block_under_a_path_line_header(
    dense: FolderIndex,
) -> None:
    result = await ask(
        AskRequest("how are chunks embedded into vectors?", [dense], prompt_only=True)
    )
    assert result.answer == "" and result.error is None
    # the model the provider would be asked for: an empty llm.model means the provider's default
    assert result.model == resolve(dense.settings.llm).model != ""
    top = result.sources[0].chunk
    assert (top.path, top.symbol) == ("pkg/embedding.py", "embed_chunks")
    text = user_message(result)
    assert f"pkg/embedding.py:{top.start_line}-{top.end_line} (python, embed_chunks)" in text
    assert "vectors.extend(model.encode(chunks[start : start + BATCH]))" in text
    assert text.rstrip().endswith("## Question\nhow are chunks embedded into vectors?")
    assert "## Index" not in text  # fully embedded: no warming note
    assert 0 < result.prompt_tokens == result.prompt.prompt_tokens


async def test_sources_are_the_blocks_in_prompt_order(dense: FolderIndex) -> None:
    result = await ask(AskRequest("vector store query nearest", [dense], prompt_only=True))
    text = user_message(result)
    assert len(result.sources) >= 3
    positions = [text.index(header(result, i)) for i in range(len(result.sources))]
    assert positions == sorted(positions)
    assert len(result.sources) == len(result.prompt.sources)  # nothing merged in this project


async def test_k_and_filters_narrow_the_context(dense: FolderIndex) -> None:
    narrow = Filters(path_glob="pkg/storage.py")
    result = await ask(AskRequest("vectors", [dense], k=2, filters=narrow, prompt_only=True))
    assert 1 <= len(result.sources) <= 2
    assert {hit.path for hit in result.sources} == {"pkg/storage.py"}


@pytest.mark.parametrize("question", ["", "   \n\t"])
async def test_empty_question_is_a_value_error(dense: FolderIndex, question: str) -> None:
    with pytest.raises(ValueError, match="empty question"):
        await ask(AskRequest(question, [dense], prompt_only=True))


async def test_editor_cursor_symbol_and_selection_bring_their_code(dense: FolderIndex) -> None:
    editor = EditorContext(
        path="pkg/storage.py",
        selection="scored[:k]",
        selection_start_line=18,
        cursor_symbol="VectorStore.query",
    )
    request = AskRequest("what does this do?", [dense], editor=editor, prompt_only=True)
    result = await ask(request)
    first = result.sources[0]
    assert (first.path, first.chunk.symbol, first.retrievers) == (
        "pkg/storage.py",
        "query",
        ["editor"],
    )
    text = user_message(result)
    assert "Cursor is in: VectorStore.query" in text
    assert "Selected code (pkg/storage.py:18-18)" in text


async def test_redaction_when_the_endpoint_is_not_loopback(
    dense: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "how are settings and the database password loaded?"
    local = await ask(AskRequest(question, [dense], prompt_only=True))
    # Known formats (the URL's password) never reach the index, so no prompt has them; named
    # literals are only blanked for a remote endpoint.
    assert "hunter2pass" not in user_message(local) and local.prompt.redactions == 0
    assert "«redacted:url-password»" in user_message(local)

    remote = llm_settings(dense, base_url="https://llm.example.com/v1", provider="openai")
    monkeypatch.setattr(dense, "settings", remote)
    result = await ask(AskRequest(question, [dense], prompt_only=True))
    text = user_message(result)
    assert any(hit.path == "pkg/settings.py" for hit in result.sources)
    assert result.prompt.redactions >= 2
    for secret in ("hunter2pass", "AKIAIOSFODNN7EXAMPLE", "correct-horse-battery"):
        assert secret not in text
    assert "[REDACTED]" in text and "def load_settings(path):" in text


async def test_context_over_the_budget_is_cut_and_says_so(
    dense: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dense, "settings", llm_settings(dense, context_tokens=700, max_tokens=100))
    result = await ask(
        AskRequest("vectors chunks store embed words settings", [dense], prompt_only=True)
    )
    assert result.truncated and result.prompt.left_out > 0
    assert result.prompt.prompt_tokens <= 700 - 100
    assert "left out to fit the budget" in user_message(result)
    assert len(result.sources) == len(result.prompt.sources)  # only what the prompt shows


async def test_multi_root_searches_every_folder_and_names_it(
    dense: FolderIndex, lexical: FolderIndex
) -> None:
    result = await ask(
        AskRequest("embed_chunks normalise", [dense, lexical], k=6, prompt_only=True)
    )
    roots = {hit.root for hit in result.sources}
    assert roots == {dense.root, lexical.root}
    text = user_message(result)
    for hit in result.sources:
        assert f"{hit.root.name}/{hit.path}:{hit.chunk.start_line}" in text
    assert "## Index\nIndex not complete: search answered by" in text  # no MiniLM in one


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("embedded", "embed"),
        ("cached", "cache"),
        ("parsing", "parse"),
        ("queries", "query"),
        ("classes", "class"),
        ("files", "file"),
        ("chunks", "chunk"),
    ],
)
def test_stems_find_the_base_form(word: str, expected: str) -> None:
    assert expected in stems(word)


@pytest.mark.parametrize("word", ["string", "class", "status", "analysis", "speed", "there"])
def test_stems_leave_non_inflections_alone(word: str) -> None:
    assert stems(word) == []


def test_retrieval_query_adds_stems_of_prose_words_only() -> None:
    query = retrieval_query("how are chunks embedded by `embed_chunks` or parse_files()?")
    question, extra = query.split("\n")
    assert question.startswith("how are chunks embedded")
    assert set(extra.split()) >= {"chunk", "embed"}
    assert "file" not in extra.split()  # identifiers are left as they are
    assert retrieval_query("where is VectorStore.query?") == "where is VectorStore.query?"


# ---------------------------------------------------------------- warming / empty index


async def test_warming_index_says_which_tiers_answered(lexical: FolderIndex) -> None:
    """Item 19: the first pass gave every chunk a static vector, so the search was dense
    already; the note says so, and that only MiniLM is still to come (never "mostly lexical")."""
    result = await ask(AskRequest("embed_chunks batches", [lexical], prompt_only=True))
    chunks = lexical.storage.chunk_count()
    text = user_message(result)
    assert (
        "## Index\nIndex not complete: search answered by lexical + static (static: all "
        f"{chunks} chunks; MiniLM: 0 of {chunks} chunks (0%), filling in); code related only "
        "in meaning may be missed."
    ) in text
    assert "mostly" not in text
    assert result.sources and result.sources[0].chunk.symbol == "embed_chunks"


async def test_empty_index_still_builds_a_prompt_and_says_why(tmp_path: Path) -> None:
    folder = FolderIndex(tmp_path, Settings())
    try:
        result = await ask(AskRequest("how does login work?", [folder], prompt_only=True))
    finally:
        folder.close()
    assert result.sources == []
    assert "The code index is empty or still warming up" in user_message(result)


# ---------------------------------------------------------------- git history


@pytest.fixture
def repo_folder(tmp_path: Path) -> Iterator[tuple[FolderIndex, list[str]]]:
    """A real repository: two commits by Alice, then Bob raises the token limit."""
    root = tmp_path / "repo"
    repo = make_repo(root)
    shas = [
        commit(repo, {"pkg/tokenizer.py": TOKENIZER}, "Add the tokenizer", when=EPOCH),
        commit(repo, {"pkg/storage.py": STORAGE}, "Add the vector store", when=EPOCH + 60),
    ]
    raised = TOKENIZER.replace("TOKEN_LIMIT = 512", "TOKEN_LIMIT = 2048")
    shas.append(
        commit(
            repo, {"pkg/tokenizer.py": raised}, "Raise the token limit to 2048", BOB, EPOCH + 120
        )
    )
    folder = FolderIndex(root, Settings())
    folder.refresh(embed=False, history=True)
    assert len(folder.storage.history_commits()) == 3
    yield folder, shas
    folder.close()


async def test_history_question_pulls_commits_diff_and_history_hits(
    repo_folder: tuple[FolderIndex, list[str]],
) -> None:
    folder, shas = repo_folder
    prepared = prepare(AskRequest("who changed the token limit recently?", [folder]))
    assert prepared.history
    text = prepared.prompt.messages[1]["content"]
    assert "## Recent commits (newest first)\n" in text
    assert f"- {shas[2][:10]} 2024-03-01 Bob Builder: Raise the token limit to 2048" in text
    assert "## Latest commit\ncommit " + shas[2] in text
    assert "+TOKEN_LIMIT = 2048" in text and "-TOKEN_LIMIT = 512" in text
    kinds = {hit.chunk.kind for hit in prepared.sources}
    assert kinds & {"commit", "hunk"}, [hit.chunk for hit in prepared.sources]


async def test_a_named_commit_brings_its_diff(repo_folder: tuple[FolderIndex, list[str]]) -> None:
    folder, shas = repo_folder
    prepared = prepare(AskRequest(f"what is {shas[1][:8]} about?", [folder]))
    text = prepared.prompt.messages[1]["content"]
    assert prepared.history
    assert f"## Commit {shas[1][:10]}\ncommit {shas[1]}" in text
    assert "+class VectorStore:" in text
    assert "## Latest commit" not in text


async def test_my_uncommitted_changes_bring_the_working_tree_diff(
    repo_folder: tuple[FolderIndex, list[str]],
) -> None:
    folder, _ = repo_folder
    repo_root = folder.root
    edited = TOKENIZER + "\n\ndef shout(w):\n    ...\n"
    write_files(pygit2.Repository(str(repo_root)), {"pkg/tokenizer.py": edited})
    prepared = prepare(AskRequest("summarise my uncommitted changes", [folder]))
    text = prepared.prompt.messages[1]["content"]
    assert "## Uncommitted changes (diff of HEAD to the working tree)" in text
    assert "+def shout(w):" in text


async def test_code_question_in_a_repository_gets_no_git_context(
    repo_folder: tuple[FolderIndex, list[str]],
) -> None:
    folder, _ = repo_folder
    prepared = prepare(AskRequest("how does split_words turn text into words?", [folder]))
    text = prepared.prompt.messages[1]["content"]
    assert not prepared.history
    assert "Recent commits" not in text and "Latest commit" not in text
    assert all(hit.chunk.kind not in ("commit", "hunk") for hit in prepared.sources)
    assert prepared.sources[0].chunk.symbol == "split_words"


# ---------------------------------------------------------------- the model: protocol fakes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class OpenAIFake:
    """A loopback server speaking OpenAI's streaming chat protocol (SSE, `data: [DONE]`).

    Threaded (not on the test's event loop) so it serves `codeask ask` subprocesses too.
    `stall` keeps the stream open after the first word, sending SSE comments, until the
    client hangs up (recorded in `disconnected`).
    """

    def __init__(
        self,
        words: list[str],
        *,
        stall: bool = False,
        prompt_tokens: int = 123,
        status: int = 200,
        finish: str = "stop",
    ) -> None:
        self.words = words
        self.finish = finish
        self.status = status
        self.error_body = {"error": {"message": "The model `tiny` does not exist"}}
        self.stall = stall
        self.prompt_tokens = prompt_tokens
        self.requests: list[dict[str, Any]] = []
        self.disconnected = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                fake.requests.append({"path": self.path, **json.loads(body)})
                if fake.status != 200:
                    self.send_error(fake.status, explain=json.dumps(fake.error_body))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    fake.stream(self)
                except (BrokenPipeError, ConnectionResetError):
                    fake.disconnected.set()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def event(self, handler: BaseHTTPRequestHandler, payload: dict[str, Any] | str) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        handler.wfile.write(f"data: {data}\n\n".encode())
        handler.wfile.flush()

    def stream(self, handler: BaseHTTPRequestHandler) -> None:
        for word in self.words[:1] if self.stall else self.words:
            self.event(handler, {"choices": [{"index": 0, "delta": {"content": word}}]})
            time.sleep(0.01)
        deadline = time.monotonic() + 20
        while self.stall and time.monotonic() < deadline:
            handler.wfile.write(b": still thinking\n\n")
            handler.wfile.flush()
            time.sleep(0.05)
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": len(self.words)}
        last = {"choices": [{"index": 0, "delta": {}, "finish_reason": self.finish}]}
        self.event(handler, last)
        self.event(handler, {"choices": [], "usage": usage})
        self.event(handler, "[DONE]")

    def __enter__(self) -> OpenAIFake:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


WORDS = ["Chunks ", "are ", "embedded ", "in ", "batches ", "(pkg/embedding.py:6)."]


async def test_openai_protocol_fake_streams_deltas_in_order(
    dense: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIFake(WORDS) as fake:
        settings = llm_settings(dense, provider="openai", base_url=fake.url, model="tiny")
        monkeypatch.setattr(dense, "settings", settings)
        seen: list[str] = []
        result = await ask(AskRequest("how are chunks embedded?", [dense]), seen.append)
    assert seen == WORDS
    assert result.answer == "".join(WORDS) and result.error is None
    assert result.prompt_tokens == 123  # the server's count wins over the estimate
    assert result.model == "tiny"
    sent = fake.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["stream"] is True
    assert sent["messages"] == result.prompt.messages  # the assembled prompt went out as is
    assert result.sources[0].path == "pkg/embedding.py"


async def test_openai_protocol_fake_cancel_mid_stream_closes_the_connection(
    dense: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIFake(WORDS, stall=True) as fake:
        monkeypatch.setattr(
            dense, "settings", llm_settings(dense, provider="openai", base_url=fake.url)
        )
        first = asyncio.Event()
        task = asyncio.create_task(
            ask(AskRequest("how are chunks embedded?", [dense]), lambda _: first.set())
        )
        await asyncio.wait_for(first.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await asyncio.to_thread(fake.disconnected.wait, 10)


async def test_openai_protocol_fake_unknown_model_is_an_error_result(
    dense: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    with OpenAIFake(WORDS, status=404) as fake:
        settings = llm_settings(dense, provider="openai", base_url=fake.url, model="tiny")
        monkeypatch.setattr(dense, "settings", settings)
        result = await ask(AskRequest("how are chunks embedded?", [dense]))
    assert result.answer == "" and result.sources
    assert result.error is not None and "model 'tiny' not found" in result.error
    assert "/v1/models" in result.error  # how to list the models


@pytest.mark.parametrize(
    ("finish", "why"),
    [("length", "its token limit"), ("content_filter", "the server's content filter")],
)
async def test_openai_protocol_fake_cut_by_the_server_is_an_incomplete_answer(
    dense: FolderIndex, monkeypatch: pytest.MonkeyPatch, finish: str, why: str
) -> None:
    """Issue 26 item 13: finish_reason "length" / "content_filter" ends a stream properly, but
    the answer is not whole: the part that arrived is kept, marked incomplete, and why."""
    with OpenAIFake(WORDS, finish=finish) as fake:
        settings = llm_settings(dense, provider="openai", base_url=fake.url, model="tiny")
        monkeypatch.setattr(dense, "settings", settings)
        result = await ask(AskRequest("how are chunks embedded?", [dense]))
    assert result.answer == "".join(WORDS) and result.incomplete
    assert result.error is not None and why in result.error and f'"{finish}"' in result.error
    assert not result.endpoint_down and result.sources


async def test_dead_endpoint_is_an_error_naming_the_url_quickly(
    dense: FolderIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ask(AskRequest("warm up the query path", [dense], prompt_only=True))
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setattr(dense, "settings", llm_settings(dense, provider="openai", base_url=url))
    seen: list[str] = []
    began = time.monotonic()
    result = await ask(AskRequest("how are chunks embedded?", [dense]), seen.append)
    assert time.monotonic() - began < 2.5
    assert result.error is not None and url in result.error and "refused" in result.error
    assert "\n" not in result.error
    assert result.answer == "" and seen == []
    assert result.sources  # the context is still reported


# ---------------------------------------------------------------- the CLI


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return codeask("ask", *args, timeout=120, env=in_process_env(**(env or {})))


@pytest.mark.slow
def test_cli_prompt_only_prints_messages_and_sources(dense: FolderIndex) -> None:
    done = run_cli(
        "how are chunks embedded into vectors?", "--root", str(dense.root), "--prompt-only"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("----- system -----\nYou are codeask")
    assert (
        "----- user -----\n" in out and "## Question\nhow are chunks embedded into vectors?" in out
    )
    sources = out.split("\nSources:\n", 1)[1].splitlines()
    assert re.fullmatch(r"  pkg/embedding\.py:\d+ embed_chunks", sources[0])


@pytest.mark.slow
def test_cli_json_prompt_only(dense: FolderIndex) -> None:
    done = run_cli(
        "vector store query",
        "--root",
        str(dense.root),
        "--prompt-only",
        "--json",
        "-k",
        "3",
        "--path",
        "pkg/*.py",
        "--lang",
        "python",
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert set(payload) >= {"answer", "sources", "model", "prompt_tokens", "truncated", "error"}
    assert payload["answer"] == "" and payload["error"] is None and payload["prompt_tokens"] > 0
    assert 1 <= len(payload["sources"]) <= 3
    src = payload["sources"][0]
    assert set(src) >= {"path", "start_line", "end_line", "symbol", "score"}
    assert src["path"] == str(dense.root / "pkg/storage.py")
    assert [m["role"] for m in payload["messages"]] == ["system", "user"]


@pytest.mark.slow
def test_cli_streams_the_answer_then_the_sources(dense: FolderIndex) -> None:
    with OpenAIFake(WORDS) as fake:
        env = {"CODEASK_LLM__PROVIDER": "openai", "CODEASK_LLM__BASE_URL": fake.url}
        done = run_cli("how are chunks embedded?", "--root", str(dense.root), env=env)
    assert done.returncode == 0, done.stderr
    answer, sources = done.stdout.split("\nSources:\n", 1)
    assert answer.strip() == "".join(WORDS)
    assert re.search(r"^  pkg/embedding\.py:\d+ embed_chunks$", sources, re.M)


@pytest.mark.slow
def test_cli_answer_stopped_by_a_content_filter_exits_3_and_says_so(dense: FolderIndex) -> None:
    """A stand-in endpoint (no filtering server runs here; the token-cap case runs against
    the real llama.cpp server in tests/llm) ends with finish_reason "content_filter"."""
    with OpenAIFake(WORDS, finish="content_filter") as fake:
        env = {"CODEASK_LLM__PROVIDER": "openai", "CODEASK_LLM__BASE_URL": fake.url}
        done = run_cli("how are chunks embedded?", "--root", str(dense.root), env=env)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "codeask: incomplete answer: the server's content filter stopped the answer "
        '(finish reason "content_filter")'
    )
    assert done.stdout.split("\nSources:\n", 1)[0].strip() == "".join(WORDS)


@pytest.mark.slow
def test_cli_llm_error_keeps_the_sources_and_says_how_to_point_elsewhere(
    dense: FolderIndex,
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    env = {"CODEASK_LLM__PROVIDER": "openai", "CODEASK_LLM__BASE_URL": url}
    done = run_cli("how are chunks embedded?", "--root", str(dense.root), env=env)
    assert done.returncode == 1
    assert re.search(r"^  pkg/embedding\.py:\d+ embed_chunks$", done.stdout, re.M), done.stdout
    lines = done.stderr.strip().splitlines()
    assert url in lines[0] and lines[0].startswith("codeask: cannot connect to ")
    assert not any(url in line for line in lines[2:])  # the error is one line; then the help
    assert "CODEASK_LLM__BASE_URL=" in done.stderr and "--prompt-only" in done.stderr


@pytest.mark.slow
def test_cli_json_with_llm_error(dense: FolderIndex) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    env = {"CODEASK_LLM__PROVIDER": "openai", "CODEASK_LLM__BASE_URL": url}
    done = run_cli("how are chunks embedded?", "--root", str(dense.root), "--json", env=env)
    assert done.returncode == 1
    payload = json.loads(done.stdout)
    assert payload["answer"] == "" and url in payload["error"] and payload["sources"]


@pytest.mark.slow
def test_cli_empty_question_and_missing_index_exit_1(tmp_path: Path) -> None:
    empty = run_cli("  ", "--root", str(tmp_path))
    assert empty.returncode == 1 and "empty question" in empty.stderr
    missing = run_cli("how does it work?", "--root", str(tmp_path))
    assert missing.returncode == 1
    assert "no index here yet: run `codeask index`" in missing.stderr
