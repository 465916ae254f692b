"""The server reads only what is inside a workspace folder (issue 11, item 3).

A file outside the workspace carries a marker string. Whatever a client asks (askCode with
its URI, `../` traversal, an in-workspace symlink to it, another scheme, hover, code lens,
related, search globs, reindex, didOpen/didSave/watched events of outside paths), the marker
must never reach the LLM (a real loopback endpoint records every request body) and never
appear in any response the server sends.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _fake_llm import Recorder, fake_llm

from support.llm_stub import llm_options
from support.lsp_wire import Wire

pytestmark = pytest.mark.slow

MARKER = "OUTSIDE_MARKER_5f1c9e"
#: Low-entropy values no secret detector would catch: only the file-name rules keep them out.
SKIPPED_MARKER = "SKIPPED_FILE_MARKER_a41e"
OPENED_MARKER = "OPENED_OUTSIDE_MARKER_8b2d"
SELECTION = {"start": {"line": 0, "character": 0}, "end": {"line": 6, "character": 0}}


@dataclass
class Setup:
    wire: Wire
    llm: Recorder
    root: Path
    outside: Path
    opened: Path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    base = tmp_path_factory.mktemp("hostile-paths")
    root = base / "ws"
    (root / "app").mkdir(parents=True)
    (root / "app" / "config.py").write_text(
        'def parse_config(path):\n    """Read the configuration file."""\n'
        "    return open(path).read()\n"
    )
    (root / ".env").write_text(f"DB_PASSWORD={SKIPPED_MARKER}\n")
    (root / ".aws").mkdir()
    (root / ".aws" / "credentials").write_text(f"[default]\nnote = {SKIPPED_MARKER}\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text(f'X = "{SKIPPED_MARKER}"\n')
    outside = base / "outside" / "secret.py"
    outside.parent.mkdir()
    outside.write_text(f'def secret_function():\n    """{MARKER}"""\n    return "{MARKER}"\n')
    opened = base / "outside" / "opened.py"
    opened.write_text(f'def opened_function():\n    return "{OPENED_MARKER}"\n')
    (root / "app" / "link.py").symlink_to(outside)
    cache = base / "xdg"
    cache.mkdir()
    with fake_llm() as llm:
        wire = Wire(cache)
        wire.initialize([root], llm_options(llm.port))
        wire.wait_ready()
        yield Setup(wire, llm, root, outside, opened)
        assert wire.close() == 0
    every_response = b"\n".join(wire.raw).decode("utf-8", "replace")
    assert MARKER not in every_response
    assert MARKER not in llm.text()
    assert SKIPPED_MARKER not in every_response
    assert SKIPPED_MARKER not in llm.text()


def _error(reply: dict[str, Any], code: int = -32602) -> str:
    assert reply.get("error", {}).get("code") == code, reply
    return str(reply["error"]["message"])


def _ask(setup: Setup, uri: str, with_range: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"question": "What does this code do?", "uri": uri}
    if with_range:
        params["range"] = SELECTION
    return setup.wire.request("workspace/askCode", params, timeout=60)


def _outside_uris(setup: Setup) -> dict[str, str]:
    root_uri = setup.root.as_uri()
    return {
        "absolute": setup.outside.as_uri(),
        "traversal": f"{root_uri}/app/../../outside/secret.py",
        "encoded-traversal": f"{root_uri}/%2E%2E/outside/secret.py",
        "symlink": (setup.root / "app" / "link.py").as_uri(),
        "other-scheme": "untitled:" + str(setup.outside),
        "vscode-remote": "vscode-remote://host" + str(setup.outside),
    }


@pytest.mark.parametrize(
    "kind",
    ["absolute", "traversal", "encoded-traversal", "symlink", "other-scheme", "vscode-remote"],
)
def test_ask_with_an_outside_selection_is_refused(setup: Setup, kind: str) -> None:
    calls = len(setup.llm.bodies)
    message = _error(_ask(setup, _outside_uris(setup)[kind]))
    assert "neither open in the editor nor a file the server may read" in message
    assert len(setup.llm.bodies) == calls  # refused before any LLM call
    assert MARKER not in setup.llm.text()


@pytest.mark.parametrize("kind", ["absolute", "symlink", "traversal"])
def test_ask_without_range_never_reads_the_outside_file(setup: Setup, kind: str) -> None:
    calls = len(setup.llm.bodies)
    reply = _ask(setup, _outside_uris(setup)[kind], with_range=False)
    assert reply["result"]["answer"] == "An answer.", reply
    assert len(setup.llm.bodies) == calls + 1
    assert MARKER not in setup.llm.text()


@pytest.mark.parametrize("rel", [".env", ".aws/credentials", "build/out.py"])
def test_files_the_index_skips_are_not_read_from_disk_either(setup: Setup, rel: str) -> None:
    """Inside the workspace, a disk read obeys discovery's rules (secret names, .gitignore)."""
    calls = len(setup.llm.bodies)
    message = _error(_ask(setup, (setup.root / rel).as_uri()))
    assert "neither open in the editor nor a file the server may read" in message
    assert len(setup.llm.bodies) == calls
    assert SKIPPED_MARKER not in setup.llm.text()


def test_inside_selection_still_reaches_the_llm(setup: Setup) -> None:
    """The guard is not a blanket refusal: a workspace file's selection is used."""
    reply = _ask(setup, (setup.root / "app" / "config.py").as_uri())
    assert reply["result"]["answer"] == "An answer.", reply
    assert "Read the configuration file." in setup.llm.text()


def test_hover_lens_related_on_outside_files_read_nothing(setup: Setup) -> None:
    wire = setup.wire
    for uri in _outside_uris(setup).values():
        position = {"line": 1, "character": 8}
        hover = wire.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": position}
        )
        assert hover.get("result") is None, hover
        lens = wire.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        assert lens.get("result") == [], lens
        related = wire.request(
            "workspace/executeCommand", {"command": "codeask.related", "arguments": [uri, 1]}
        )
        assert related.get("result") == [], related
        reindex = wire.request(
            "workspace/executeCommand", {"command": "codeask.reindex", "arguments": [uri]}
        )
        assert "result" in reindex, reindex
    wire.wait_ready()


def test_symlinked_outside_file_is_not_indexed(setup: Setup) -> None:
    wire = setup.wire
    assert wire.request("workspace/symbol", {"query": "secret_function"})["result"] == []
    reply = wire.request("workspace/semanticSearch", {"query": "secret_function"})
    assert all("secret" not in item["uri"] for item in reply["result"]["results"])


@pytest.mark.parametrize("glob", ["../**", "/**/secret.py", "**/../outside/*", "../outside/*"])
def test_path_globs_cannot_escape_the_roots(setup: Setup, glob: str) -> None:
    params = {"query": "secret_function", "filters": {"pathGlob": glob}}
    reply = setup.wire.request("workspace/semanticSearch", params)
    for item in reply["result"]["results"]:
        assert item["uri"].startswith(setup.root.as_uri()), item


def test_did_open_save_and_watch_of_outside_paths_do_not_index(setup: Setup) -> None:
    wire = setup.wire
    uri = setup.opened.as_uri()
    item = {"uri": uri, "languageId": "python", "version": 1, "text": setup.opened.read_text()}
    wire.notify("textDocument/didOpen", {"textDocument": item})
    wire.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    link = setup.root / "app" / "link.py"
    changes = [{"uri": uri, "type": 2}, {"uri": link.as_uri(), "type": 2}]
    wire.notify("workspace/didChangeWatchedFiles", {"changes": changes})
    files = wire.alive()["files"]
    time.sleep(1.5)  # longer than the save debounce: an update would have run by now
    status = wire.wait_ready()
    assert status["files"] == files and status["folders"][0]["updates"] == 0
    assert wire.request("workspace/symbol", {"query": "opened_function"})["result"] == []
    reply = wire.request("workspace/semanticSearch", {"query": OPENED_MARKER})
    assert all(OPENED_MARKER not in item["preview"] for item in reply["result"]["results"])
    calls = len(setup.llm.bodies)
    assert "result" in wire.request("workspace/askCode", {"question": OPENED_MARKER.lower()})
    assert len(setup.llm.bodies) == calls + 1
    prompt = setup.llm.text()
    assert f'return "{OPENED_MARKER}"' not in prompt  # the question, yes; the file, never
    wire.notify("textDocument/didClose", {"textDocument": {"uri": uri}})


def test_open_document_text_is_what_the_editor_sent(setup: Setup) -> None:
    """An outside document the editor opened may be asked about: its text came from the
    editor, not from a disk read (the marker on disk differs from the sent text)."""
    uri = setup.outside.as_uri()
    sent = "def sent_by_editor():\n    return 42\n"
    item = {"uri": uri, "languageId": "python", "version": 1, "text": sent}
    setup.wire.notify("textDocument/didOpen", {"textDocument": item})
    reply = _ask(setup, uri)
    assert reply["result"]["answer"] == "An answer.", reply
    assert "sent_by_editor" in setup.llm.text()
    setup.wire.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert MARKER not in setup.llm.text()
