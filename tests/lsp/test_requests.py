"""Custom requests and commands, settings handling, symbols and code lenses."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from lsprotocol import types

from support.lsp_harness import (
    FILES,
    NEW_FUNCTION,
    Session,
    build_project,
    gitrepo,
    session,
    wait_for,
)

pytestmark = pytest.mark.slow


def _ended_tokens(lsp: Session) -> set[str]:
    return {
        str(token)
        for token, values in lsp.client.progress_reports.items()
        if values and values[-1].kind == "end"
    }


async def test_status_search_command_symbols_reindex(project: Path, shared_cache: Path) -> None:
    async with session([project], shared_cache) as lsp:
        status = await lsp.wait_ready()
        assert set(status) == {
            "state", "warming", "percent", "files", "chunks", "embedded", "folders",
            "tiersAnswered", "tiersNote",
        }  # fmt: skip
        assert status["percent"] == 100
        assert status["tiersNote"] == ""  # every tier complete: nothing to say
        folder = status["folders"][0]
        assert folder["indexDir"] == str(project / ".codeask")
        assert folder["model"] == "codeask/all-MiniLM-L6-v2-int8"
        assert folder["files"] == len(FILES) and folder["updates"] == 0
        assert folder["tiers"] == ["static", "minilm"]
        assert folder["staticEmbedded"] == folder["chunks"] > 0  # complete after the first pass

        # codeask.search: positional [query, k] and the object form with filters
        result = await lsp.command("codeask.search", "download a web page", 2)
        assert result["results"][0]["symbol"] == "fetch_url" and len(result["results"]) <= 2
        assert result["indexState"]["state"] == "ready"
        query = {"query": "retry", "k": 5, "filters": {"pathGlob": "app/cache.py"}}
        result = await lsp.command("codeask.search", query)
        assert result["results"] and all(
            r["uri"].endswith("app/cache.py") for r in result["results"]
        )

        # semanticSearch filters: kind, language; history scope carries commit facts
        hits = await lsp.search("evict entries", filters={"kind": "class"})
        assert [h["symbol"] for h in hits] == ["LruCache"]
        hits = await lsp.search("cache", filters={"language": "markdown"})
        assert all(h["uri"].endswith(".md") for h in hits)
        hits = await lsp.search("add an lru cache", filters={"scope": "history"})
        assert hits and hits[0]["kind"] in ("commit", "hunk")
        assert any(h["meta"].get("author") == "Bob Builder" for h in hits)

        # workspace/symbol from the chunk index
        found = await lsp.symbols("fetch")
        assert [s.name for s in found] == ["fetch_url"]
        assert found[0].location.uri == lsp.uri("app/net.py")
        methods = {s.name: s.container_name for s in await lsp.symbols("put")}
        assert methods == {"put": "LruCache"}

        # code lenses are off by default
        params = types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=lsp.uri("app/net.py"))
        )
        assert list(await lsp.client.text_document_code_lens_async(params) or []) == []

        # codeask.reindex: a full rebuild with its own progress, back to the same index
        before = _ended_tokens(lsp)
        state = await lsp.command("codeask.reindex")
        assert state["state"] in ("indexing", "ready")

        async def new_tokens() -> set[str]:
            return _ended_tokens(lsp) - before

        await wait_for(new_tokens, bool, 60)
        again = await lsp.wait_ready()
        assert again["chunks"] == status["chunks"] and again["embedded"] == again["chunks"]
        assert (await lsp.search("download a web page"))[0]["symbol"] == "fetch_url"
        cancelled = await lsp.command("codeask.cancelIndexing")
        assert cancelled["state"] == "ready"


async def test_per_folder_settings_list_and_code_lens(project: Path, shared_cache: Path) -> None:
    options = [
        {"scopeUri": project.as_uri(), "settings": {"server": {"codeLens": True}}},
        {"settings": {"retrieve": {"k": 3}}},
    ]
    async with session([project], shared_cache, client="neovim", options=options) as lsp:
        await lsp.wait_ready()
        assert lsp.client.messages == []  # both list entries were valid
        assert len(await lsp.search("numbers")) <= 3  # the global entry applied
        uri = lsp.uri("app/net.py")
        params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
        lenses = await lsp.client.text_document_code_lens_async(params)
        assert lenses and all(lens.command is not None for lens in lenses)
        fetch = next(lens for lens in lenses if lens.range.start.line == 17)  # def fetch_url
        assert fetch.command is not None and fetch.command.title.endswith(" related")
        assert fetch.command.command == "codeask.related"
        items = await lsp.command("codeask.related", *fetch.command.arguments or [])
        assert 1 <= len(items) <= 5
        assert all(not item["uri"].endswith("app/net.py") for item in items)


async def test_invalid_settings_warn_and_fall_back(project: Path, shared_cache: Path) -> None:
    options = {"server": {"debounceMs": "soon"}, "retrieve": {"k": 4}, "bogus": {"x": 1}}
    async with session([project], shared_cache, options=options) as lsp:
        await lsp.wait_ready()

        async def warnings() -> list[str]:
            return [m.message for m in lsp.client.messages if m.type == types.MessageType.Warning]

        shown = await wait_for(warnings, lambda w: len(w) >= 2, 10)
        assert any("invalid 'server' settings" in w and "debounce_ms" in w for w in shown)
        assert any("unknown settings section 'bogus'" in w for w in shown)
        assert len(shown) == len(set(shown))  # each warning once
        assert len(await lsp.search("numbers")) <= 4  # the valid section still applied
        hits = await lsp.search("is this number prime")
        assert hits[0]["symbol"] == "is_prime"  # everything else works on defaults

        # a later change: pulled through workspace/configuration (VS Code supports it)
        lsp.client.set_configuration({"retrieve": {"k": "many"}}, section="codeask")
        lsp.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"codeask": None})
        )
        shown = await wait_for(
            warnings, lambda w: any("invalid 'retrieve' settings" in x for x in w), 10
        )
        assert len(await lsp.search("numbers")) > 4  # retrieve back on its defaults (k=10)

        # not an object at all
        lsp.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=["nonsense"])
        )
        await wait_for(warnings, lambda w: any("entry ignored" in x for x in w), 10)


async def test_workspace_folders_added_and_removed(tmp_path: Path, shared_cache: Path) -> None:
    first = build_project(tmp_path / "first")
    second = build_project(tmp_path / "second")
    (second / "app/extra.py").write_text(
        'def compress_archive(files):\n    """Pack files into a zip archive."""\n    return files\n'
    )
    async with session([first], shared_cache) as lsp:
        await lsp.wait_ready()
        event = types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(uri=second.as_uri(), name="second")], removed=[]
        )
        lsp.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(event=event)
        )
        status = await wait_for(
            lsp.status, lambda s: len(s["folders"]) == 2 and s["state"] == "ready", 60
        )
        hits = await lsp.search("pack files into a zip archive")
        assert hits[0]["uri"] == second.joinpath("app/extra.py").as_uri()
        event = types.WorkspaceFoldersChangeEvent(
            added=[], removed=[types.WorkspaceFolder(uri=first.as_uri(), name="first")]
        )
        lsp.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(event=event)
        )
        status = await wait_for(lsp.status, lambda s: len(s["folders"]) == 1, 10)
        assert status["folders"][0]["root"] == str(second)
        hits = await lsp.search("is this number prime")
        assert all(h["uri"].startswith(second.as_uri()) for h in hits)


async def test_head_move_rechecks_changed_files(project: Path, shared_cache: Path) -> None:
    """A commit (or pull) and a checkout of the old commit, with no editor events at all."""
    repo = pygit2.Repository(str(project))
    before = str(repo.head.target)
    async with session([project], shared_cache, client="neovim") as lsp:
        await lsp.wait_ready()
        source = FILES["app/net.py"] + NEW_FUNCTION
        gitrepo.commit(repo, {"app/net.py": source}, "Add reverse_words", gitrepo.CAROL)

        async def found() -> list[str]:
            return [h["symbol"] for h in await lsp.search("reverse the order of words", k=3)]

        await wait_for(found, lambda symbols: "reverse_words" in symbols, 15)
        await wait_for(
            lambda: lsp.search("add reverse_words", filters={"scope": "history"}),
            lambda hits: any(h["meta"].get("author") == "Carol Danvers" for h in hits),
            15,
        )
        gitrepo.detach(repo, before)  # switch back: the function is gone again
        await wait_for(found, lambda symbols: "reverse_words" not in symbols, 15)
        assert lsp.log_lines("HEAD of ")


async def test_cancel_indexing_from_the_progress_ui(tmp_path: Path, private_cache: Path) -> None:
    """The editor's cancel button on `$/progress` stops the pass; what is done stays usable."""
    root = build_project(tmp_path / "big")
    for n in range(20):
        body = "\n\n".join(
            f"def handler_{n}_{m}(value):\n"
            f'    """Step {m} of pipeline {n}: scale the value by {m + n}."""\n'
            f"    return value * {m + n} + {n}\n"
            for m in range(15)
        )
        (root / f"app/pipeline_{n}.py").write_text(body)
    async with session([root], private_cache) as lsp:

        async def embedding_token() -> str | None:
            for token, values in lsp.client.progress_reports.items():
                if any("chunks embedded" in (v.message or "") for v in values):
                    return str(token)
            return None

        token = await wait_for(embedding_token, bool, 60, 0.05)
        assert token is not None
        lsp.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))

        async def ended() -> list[object]:
            return [v for v in lsp.client.progress_reports[token] if v.kind == "end"]

        end = (await wait_for(ended, bool, 20))[0]
        assert end.message == "cancelled"
        status = await wait_for(lsp.status, lambda s: s["state"] == "ready", 10)
        assert status["warming"] and status["embedded"] < status["chunks"]
        hits = await lsp.search("scale the value by 7 in pipeline 3")  # lexical still works
        assert hits
        # Item 19: what answered is said, not "lexical until every chunk has a vector": the
        # first pass gave every chunk a static vector; MiniLM stopped part way.
        found = await lsp.request(
            "workspace/semanticSearch", {"query": "scale the value by 7 in pipeline 3"}
        )
        state = found["indexState"]
        answered = state["tiersAnswered"]
        assert answered[0] == "lexical" and set(answered) <= {"lexical", "static", "minilm"}
        dense = {"static": "static", "dense": "minilm"}
        used = {dense[r] for hit in found["results"] for r in hit["retrievers"] if r in dense}
        assert used <= set(answered), (used, answered)
        labels = {"lexical": "lexical", "static": "static", "minilm": "MiniLM"}
        chunks = state["chunks"]
        assert state["tiersNote"].startswith(
            "answered by " + " + ".join(labels[t] for t in answered) + " ("
        ), state["tiersNote"]
        assert f"static: all {chunks} chunks; MiniLM: " in state["tiersNote"]
        assert "filling in" in state["tiersNote"]
        assert (await lsp.status())["tiersNote"].startswith("answered by lexical")
