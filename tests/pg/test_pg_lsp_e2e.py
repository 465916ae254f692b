"""The language server's end-to-end scenarios over both backends: the real `codeask serve` over
stdio (pytest-lsp), once with `index.backend = "local"` and once with `"postgres"`.

For postgres, CI has indexed and published the workspace's HEAD into the embedded PostgreSQL
(module-scoped: one published revision for every test here); each test's workspace is a fresh
copy of that repository (a developer's clone), and the server reads the team's revision through
a read-only role whose DSN is in an environment variable the settings name. The scenarios must
come out the same on both backends: search, hover links, didSave (the new text searchable, the
old gone), deletions, askCode, codeask/health. The overlay scenario edits, deletes and adds
files before the server starts: with postgres, the uncommitted text must win over the published
one, a deleted file must never appear, and an untracked file must be searchable.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2
import pytest
from lsprotocol import types
from pgserver import PgServer

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.storage.postgres.publish import publish_folder
from support import gitrepo
from support.llm_stub import fake_llm, llm_options
from support.lsp_harness import (
    FILES,
    NEW_FUNCTION,
    Session,
    build_project,
    check_related_hover,
    hover_text,
    session,
    wait_for,
)

pytestmark = pytest.mark.slow

#: Not CODEASK_-prefixed on purpose: that would read as a settings override.
DSN_ENV = "TEAM_INDEX_DSN"
ORIGIN = "git@github.com:Acme/Demo.git"
IDENTITY = "github.com/acme/demo"
#: app/text.py after the save: word_count replaced by reverse_words.
SAVED_TEXT = FILES["app/text.py"].split("\n\ndef word_count")[0] + "\n" + NEW_FUNCTION


@dataclass
class Backend:
    """How the server is started for one backend."""

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    password: str = ""


@dataclass
class Team:
    """The published revision: the read-only editor DSN and its role's password."""

    dsn: str
    password: str


@pytest.fixture(scope="module")
def ci_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository as committed (clean tree), with the origin that names it for the team."""
    repo = build_project(tmp_path_factory.mktemp("ci") / "demo")
    pygit2.Repository(str(repo)).remotes.create("origin", ORIGIN)
    return repo


@pytest.fixture(scope="module")
def xdg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One XDG cache for the module's servers (and CI's index): warm embeddings of the same
    texts, so the local backend does not embed the same files again in every test."""
    return tmp_path_factory.mktemp("xdg-lsp-pg")


@pytest.fixture(scope="module")
def team(pg_server: PgServer, ci_repo: Path, xdg: Path) -> Iterator[Team]:
    """CI: a database, HEAD indexed in full and published (writer role), and a read-only
    login role for the editors."""
    db = f"t_{uuid.uuid4().hex[:12]}"
    role, password = f"r_{uuid.uuid4().hex[:10]}", f"pw-{uuid.uuid4().hex[:8]}"
    with pg_server.admin() as admin:
        admin.execute(f"CREATE DATABASE {db}")
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    with pg_server.admin(db) as admin:
        admin.execute("CREATE EXTENSION vector")
    settings, _ = build_settings(
        {
            "index": {"location": str(ci_repo.parent / "ci-index")},
            "embed": {"cache_dir": str(xdg / "codeask")},
        }
    )
    with pytest.MonkeyPatch.context() as env:
        env.setenv(DSN_ENV, pg_server.dsn(db))
        ci = FolderIndex(ci_repo, settings, read_team=False)
        try:
            ci.refresh()
            result = publish_folder(ci.root, ci.storage, DSN_ENV)
        finally:
            ci.close()
    assert result.created
    with pg_server.admin(db) as admin:
        admin.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        admin.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    yield Team(pg_server.dsn(db, role, password), password)
    with pg_server.admin() as admin:
        admin.execute(f"DROP DATABASE {db} WITH (FORCE)")
        admin.execute(f"DROP ROLE {role}")


@pytest.fixture(params=["local", "postgres"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """The parametrised backend; postgres pulls in the published revision (and PostgreSQL)."""
    if request.param == "local":
        return Backend("local")
    published: Team = request.getfixturevalue("team")
    return Backend(
        "postgres",
        {"index": {"backend": "postgres", "dsnEnv": DSN_ENV}},
        {DSN_ENV: published.dsn},
        published.password,
    )


@pytest.fixture
def workspace(ci_repo: Path, tmp_path: Path) -> Path:
    """A developer's clone of the published repository (git metadata and all)."""
    return Path(shutil.copytree(ci_repo, tmp_path / "demo"))


def options(backend: Backend, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**backend.options, **(extra or {})}


async def started(lsp: Session, backend: Backend) -> dict[str, Any]:
    """Wait until ready; with postgres, check the folder really reads the team's revision
    (a fallback to a full local index would pass every search and prove nothing)."""
    status = await lsp.wait_ready()
    team_lines = lsp.log_lines(f"reading the team index of {IDENTITY}@")
    fallback = lsp.log_lines("indexing locally")
    if backend.name == "postgres":
        assert len(team_lines) == 1 and not fallback, lsp.log_lines("")
    else:
        assert not team_lines
    return status


async def symbols_named(lsp: Session, name: str) -> list[str]:
    """workspace/symbol hits whose name is exactly `name`, as `path:name`."""
    found = await lsp.symbols(name)
    return [f"{s.location.uri.rsplit('/app/', 1)[-1]}:{s.name}" for s in found if s.name == name]


async def test_index_search_hover_save_delete(backend: Backend, workspace: Path, xdg: Path) -> None:
    async with session([workspace], xdg, options=options(backend), env=backend.env) as lsp:
        status = await started(lsp, backend)
        assert status["files"] == len(FILES) and status["chunks"] >= 10
        assert status["embedded"] == status["chunks"]
        assert status["folders"][0]["root"] == str(workspace)

        # -- natural-language search finds the right function ------------------------------
        hits = await lsp.search("read the toml configuration file into a dictionary")
        assert hits[0]["symbol"] == "parse_config"
        assert hits[0]["uri"] == lsp.uri("app/config.py")
        assert hits[0]["range"]["start"]["line"] == 5
        hits = await lsp.search("is this number prime", k=3)
        assert hits[0]["symbol"] == "is_prime" and len(hits) <= 3

        # -- hover: related code in other files, and the last commit -----------------------
        hover = await hover_text(lsp, lsp.uri("app/cache.py"), 13)  # inside LruCache.get
        check_related_hover(hover, workspace)
        call = await hover_text(lsp, lsp.uri("app/net.py"), 19, 13)  # `retry(` in fetch_url
        first = next(line for line in call.splitlines() if line.startswith("- ["))
        assert "app/net.py:7](" in first and first.endswith(" retry"), first

        # -- didSave: the new function is searchable, the replaced one is gone -------------
        (workspace / "app/text.py").write_text(SAVED_TEXT)
        lsp.save(lsp.uri("app/text.py"))

        async def top_symbols() -> list[str]:
            return [h["symbol"] for h in await lsp.search("reverse the order of words", k=3)]

        await wait_for(top_symbols, lambda found: "reverse_words" in found, 5.0, 0.05)
        assert await symbols_named(lsp, "word_count") == []
        hits = await lsp.search("count the words in a piece of text")
        assert "word_count" not in [h["symbol"] for h in hits]
        assert "slugify" in [h["symbol"] for h in hits if h["uri"] == lsp.uri("app/text.py")]

        # -- a deleted file (watched-files event) never appears again -----------------------
        (workspace / "app/mathutil.py").unlink()
        lsp.watched((lsp.uri("app/mathutil.py"), types.FileChangeType.Deleted))

        async def prime() -> list[str]:
            return await symbols_named(lsp, "is_prime")

        await wait_for(prime, lambda found: found == [], 5.0)
        after = await lsp.status()
        assert after["files"] == len(FILES) - 1
        hits = await lsp.search("is this number prime")
        assert all(not h["uri"].endswith("app/mathutil.py") for h in hits)
        hits = await lsp.search("fibonacci numbers")
        assert all(not h["uri"].endswith("app/mathutil.py") for h in hits)


async def test_uncommitted_edits_deletions_and_new_files_win(
    backend: Backend, workspace: Path, xdg: Path
) -> None:
    """The overlay: changes made before the server starts (not committed) are what it serves;
    with postgres the published copies of those files never show."""
    net = workspace / "app/net.py"
    net.write_text(net.read_text().replace("fetch_url", "download_body"))
    (workspace / "app/text.py").unlink()
    (workspace / "app/units.py").write_text(
        '"""Unit conversions."""\n\n\ndef celsius_to_fahrenheit(degrees):\n'
        '    """Convert a temperature from degrees Celsius to degrees Fahrenheit."""\n'
        "    return degrees * 9 / 5 + 32\n"
    )
    async with session([workspace], xdg, options=options(backend), env=backend.env) as lsp:
        status = await started(lsp, backend)
        assert status["files"] == len(FILES)  # one deleted, one new
        if backend.name == "postgres":
            assert lsp.log_lines("3 file(s) differ"), lsp.log_lines("team index")

        # the edited file: its uncommitted text wins over the published one
        assert await symbols_named(lsp, "download_body") == ["net.py:download_body"]
        assert await symbols_named(lsp, "fetch_url") == []
        hits = await lsp.search("download the body of an HTTP URL")
        assert hits[0]["symbol"] == "download_body"
        assert "fetch_url" not in [h["symbol"] for h in hits]

        # the deleted file never appears
        assert await symbols_named(lsp, "slugify") == []
        hits = await lsp.search("turn a title into a lowercase url slug with dashes")
        assert all(not h["uri"].endswith("app/text.py") for h in hits)

        # the untracked file is searchable
        hits = await lsp.search("convert a temperature from celsius to fahrenheit")
        assert hits[0]["symbol"] == "celsius_to_fahrenheit"
        assert hits[0]["uri"] == lsp.uri("app/units.py")


async def test_ask_code_cites_the_right_sources(
    backend: Backend, workspace: Path, xdg: Path
) -> None:
    pieces = ["The cache ", "evicts the ", "oldest entry."]
    async with (
        fake_llm(pieces) as llm,
        session(
            [workspace], xdg, options=options(backend, llm_options(llm.port)), env=backend.env
        ) as lsp,
    ):
        await started(lsp, backend)
        params = {
            "question": "How does the cache decide what to evict?",
            "uri": lsp.uri("app/cache.py"),
            "range": {"start": {"line": 17, "character": 0}, "end": {"line": 23, "character": 0}},
            "streamToken": "t1",
        }
        result = await lsp.request("workspace/askCode", params)
        assert result["answer"] == "The cache evicts the oldest entry." and "error" not in result
        assert any(s["uri"] == lsp.uri("app/cache.py") for s in result["sources"])
        assert result["indexState"]["state"] == "ready"
        deltas = lsp.client.deltas  # type: ignore[attr-defined]
        assert [d["delta"] for d in deltas] == pieces
        prompt = json.dumps(llm.requests[0]["messages"])
        assert "def put" in prompt  # the selection (and its file) reached the prompt
        # a question without a selection: retrieval alone must find the cache
        result = await lsp.request(
            "workspace/askCode", {"question": "which class evicts the least recently used entry?"}
        )
        assert result["sources"][0]["uri"] == lsp.uri("app/cache.py")


async def test_health_and_status_report_the_backend(
    backend: Backend, workspace: Path, xdg: Path
) -> None:
    async with session([workspace], xdg, options=options(backend), env=backend.env) as lsp:
        status = await started(lsp, backend)
        assert status["state"] == "ready" and not status["warming"]
        assert status["percent"] == 100
        folder = status["folders"][0]
        assert folder["root"] == str(workspace) and folder["state"] == "ready"
        assert folder["model"] == "codeask/all-MiniLM-L6-v2-int8"
        report = await lsp.request("codeask/health", {})
        assert report["indexState"]["files"] == len(FILES)
        assert report["embedding"]["model"] == "codeask/all-MiniLM-L6-v2-int8"
        if backend.name == "local":
            assert "team" not in report
            return
        team = report["team"]
        assert team["dsnEnv"] == DSN_ENV and team["reachable"] is True and team["error"] == ""
        assert team["where"].endswith(f"/{backend.env[DSN_ENV].rsplit('/', 1)[-1]}")
        assert team["modelDim"] == 384 and team["schemaVersion"] == team["schemaKnown"]
        assert team["writable"] is False  # the editors' read-only role
        assert backend.password not in json.dumps(report)


async def test_a_clean_clone_counts_what_a_local_index_counts(
    backend: Backend, workspace: Path, xdg: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status of a clean clone matches a local index of the same tree; with postgres the
    published revision serves everything, history included: the local overlay stays empty
    (it once re-diffed and embedded the whole history window, `history.max_commits` = 2000
    commits by default, and the status counted those chunks twice)."""
    reference = Path(shutil.copytree(workspace, workspace.parent / "reference"))
    local, _ = build_settings({"index": {"location": str(workspace.parent / "ref-index")}})
    expected = FolderIndex(reference, local)
    try:
        expected.refresh(embed=False)
        want = expected.storage.counts()
    finally:
        expected.close()
    async with session([workspace], xdg, options=options(backend), env=backend.env) as lsp:
        status = await started(lsp, backend)
        assert (status["files"], status["chunks"]) == (want.files, want.chunks)
        assert status["embedded"] == want.chunks
        hits = await lsp.search("add an lru cache", filters={"scope": "history"})
        assert hits and hits[0]["kind"] in ("commit", "hunk")
        assert any(h["meta"].get("author") == "Bob Builder" for h in hits)
    if backend.name == "postgres":
        monkeypatch.setenv(DSN_ENV, backend.env[DSN_ENV])
        team, _ = build_settings({"index": {"backend": "postgres", "dsn_env": DSN_ENV}})
        opened = FolderIndex(workspace, team, mode="read")
        try:
            assert opened.team.reader is not None
            assert opened.local.counts().chunks == 0 and opened.local.history_commits() == []
        finally:
            opened.close()


async def test_a_commit_on_top_of_the_published_revision(
    backend: Backend, workspace: Path, xdg: Path
) -> None:
    """HEAD moves past what CI published (a local commit, no editor events): the new function
    and the new commit are searchable; with postgres the base stays one commit behind HEAD."""
    repo = pygit2.Repository(str(workspace))
    async with session([workspace], xdg, options=options(backend), env=backend.env) as lsp:
        await started(lsp, backend)
        source = FILES["app/net.py"].replace("fetch_url", "download_body")
        gitrepo.commit(repo, {"app/net.py": source}, "Rename fetch_url", gitrepo.CAROL)

        async def found() -> list[str]:
            return [h["symbol"] for h in await lsp.search("download the body of an HTTP URL")]

        symbols = await wait_for(found, lambda names: "download_body" in names, 15)
        assert "fetch_url" not in symbols
        assert await symbols_named(lsp, "fetch_url") == []
        hits = await wait_for(
            lambda: lsp.search("rename fetch_url", filters={"scope": "history"}),
            lambda hits: any(h["meta"].get("author") == "Carol Danvers" for h in hits),
            15,
        )
        assert hits
        hits = await lsp.search("add an lru cache", filters={"scope": "history"})
        assert any(h["meta"].get("author") == "Bob Builder" for h in hits)
        status = await lsp.status()
        assert status["files"] == len(FILES)
