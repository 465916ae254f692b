"""Hostile LSP input against the real server over real stdio pipes (issue 11, item 6).

One server for the module (each case also proves the previous ones left it healthy): every
case sends its hostile bytes, then checks the server still answers, and that its peak memory
(VmHWM) stays under MEMORY_CEILING_MB. Framing errors are answered (id null when the message
had no usable id) and the stream resynchronises at the next `Content-Length` header.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codeask.json_depth import MAX_DEPTH
from support.lsp_wire import MEMORY_CEILING_MB, Wire, frame, frame_bytes

pytestmark = pytest.mark.slow

SOURCE = '''"""Configuration helpers."""


def parse_config(path):
    """Read the TOML configuration file at `path`."""
    with open(path, "rb") as handle:
        return handle.read()


def merge_settings(defaults, overrides):
    """Combine default settings with user overrides."""
    merged = dict(defaults)
    merged.update(overrides)
    return merged
'''


def make_workspace(root: Path) -> Path:
    (root / "app").mkdir(parents=True)
    (root / "app" / "config.py").write_text(SOURCE)
    (root / "app" / "mathutil.py").write_text(
        'def is_prime(number):\n    """Whether a number is prime."""\n'
        "    return number > 1 and all(number % d for d in range(2, number))\n"
    )
    return root


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    base = tmp_path_factory.mktemp("hostile-fuzz")
    cache = base / "xdg"
    cache.mkdir()
    server = Wire(cache)
    server.initialize([make_workspace(base / "ws")])
    server.wait_ready()
    yield server
    peak = server.vm_hwm_mb()
    print(f"\nserver VmHWM after the hostile cases: {peak:.0f} MB (ceiling {MEMORY_CEILING_MB})")
    assert server.close() == 0


def check_alive(wire: Wire) -> None:
    """The server answers a real request, and its peak memory is under the ceiling."""
    assert wire.alive()["state"] == "ready"
    assert wire.proc.poll() is None
    peak = wire.vm_hwm_mb()
    assert peak < MEMORY_CEILING_MB, f"VmHWM {peak:.0f} MB >= {MEMORY_CEILING_MB} MB"


def status_request(msg_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "codeask/indexStatus", "params": {}}


# ---- framing --------------------------------------------------------------------------------
def test_huge_content_length_is_rejected_and_skipped(wire: Wire) -> None:
    wire.write(b"Content-Length: 100000000000\r\n\r\n" + json.dumps(status_request("x")).encode())
    error = wire.null_error()
    assert error["error"]["code"] == -32600
    assert "exceeds the maximum" in error["error"]["message"]
    check_alive(wire)  # resynchronised at the next header: the lie is not waited for
    assert "x" not in wire.replies


def test_honest_oversized_message_is_drained_not_buffered(wire: Wire) -> None:
    """A real body over the 64 MiB limit is read through in pieces and dropped."""
    text = "x = 1\n" * (65 * 1024 * 1024 // 6 + 1000)
    item = {"uri": "untitled:over", "languageId": "python", "version": 1, "text": text}
    payload = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}}
    before = wire.vm_hwm_mb()
    wire.write(frame(payload))
    assert "exceeds the maximum" in wire.null_error()["error"]["message"]
    check_alive(wire)
    assert wire.vm_hwm_mb() - before < 50


@pytest.mark.parametrize("delta", [-10, +10, +5000])
def test_wrong_content_length_resynchronises(wire: Wire, delta: int) -> None:
    body = json.dumps(status_request(f"wrong{delta}")).encode()
    wire.write(frame_bytes(body, len(body) + delta))
    check_alive(wire)
    assert wire.null_error()["error"]["code"] == -32700


def test_garbage_between_messages(wire: Wire) -> None:
    wire.write(b"\x00\xff garbage\r\n\r\nContent-Type: nothing\r\nhello\n" * 100)
    check_alive(wire)
    wire.write(b"Content-Length: 12\r\nContent-Length: x\r\n")  # a header with no end
    check_alive(wire)


def test_long_garbage_is_not_buffered(wire: Wire) -> None:
    wire.write(b"x" * (20 * 1024 * 1024))  # no header at all: scanned and dropped
    check_alive(wire)


@pytest.mark.parametrize(
    ("body", "code", "reply_id"),
    [
        (b'{"jsonrpc":"2.0","id":5,"method":"\xff\xfe"}', -32700, None),
        (b'{"jsonrpc": "2.0", "id": 6, "method":', -32700, None),
        (b"[" * 100_000 + b"]" * 100_000, -32600, None),  # nested past MAX_DEPTH
        (json.dumps({"id": 7, "method": "codeask/indexStatus"}).encode(), -32600, 7),
        (json.dumps({"jsonrpc": "2.0", "id": 8, "method": 42}).encode(), -32600, 8),
        (json.dumps({"jsonrpc": "1.0", "id": 9, "method": "shutdown"}).encode(), -32600, 9),
        (json.dumps([status_request(10), status_request(11)]).encode(), -32600, None),
        (json.dumps({"jsonrpc": "2.0", "id": {"a": 1}, "method": "x"}).encode(), -32600, None),
        (b'"just a string"', -32600, None),
        (json.dumps({"jsonrpc": "2.0"}).encode(), -32600, None),
    ],
    ids=[
        "invalid-utf8",
        "invalid-json",
        "deep-nesting",
        "missing-jsonrpc",
        "numeric-method",
        "wrong-jsonrpc",
        "batch",
        "object-id",
        "not-an-object",
        "no-method",
    ],
)
def test_bad_body_gets_an_error_reply(
    wire: Wire, body: bytes, code: int, reply_id: int | None
) -> None:
    wire.write(frame_bytes(body))
    reply = wire.wait_reply(reply_id) if reply_id is not None else wire.null_error()
    assert reply["error"]["code"] == code, reply
    assert reply["error"]["message"].startswith("codeask: ")
    check_alive(wire)
    assert 10 not in wire.replies and 11 not in wire.replies  # no batch member ran


@pytest.mark.parametrize("depth", [101, 985, 1_000, 50_000])
def test_deeply_nested_request_is_answered_by_its_id(wire: Wire, depth: int) -> None:
    """Round 3, item 3: 1,000 deep got a null-id parse error (the request itself was never
    answered) and 985 deep passed the framing but failed inside pygls, unanswered. Every
    request nested past MAX_DEPTH is answered -32600 under its own id."""
    msg_id = wire.new_id()
    nest = b"[" * depth + b"]" * depth
    body = b'{"jsonrpc":"2.0","id":%d,"method":"codeask/indexStatus","params":{"x":%s}}' % (
        msg_id,
        nest,
    )
    wire.write(frame_bytes(body))
    reply = wire.wait_reply(msg_id)
    assert reply["error"]["code"] == -32600, reply
    assert f"nested more than {MAX_DEPTH} levels deep" in reply["error"]["message"]
    check_alive(wire)


# ---- parameter limits -----------------------------------------------------------------------
def _invalid_params(reply: dict[str, Any], *needles: str) -> None:
    assert reply.get("error", {}).get("code") == -32602, reply
    for needle in needles:
        assert needle in reply["error"]["message"], reply


def test_ten_megabyte_path_glob_is_invalid_params_at_once(wire: Wire) -> None:
    started = time.monotonic()
    params = {"query": "config", "filters": {"pathGlob": "*a" * 5_000_000}}
    _invalid_params(wire.request("workspace/semanticSearch", params), "pathGlob", "1000")
    command = {"command": "codeask.search", "arguments": [params]}
    _invalid_params(wire.request("workspace/executeCommand", command), "pathGlob")
    assert time.monotonic() - started < 10
    check_alive(wire)


def test_longest_allowed_path_glob_is_cheap(wire: Wire) -> None:
    started = time.monotonic()
    params = {"query": "config", "filters": {"pathGlob": "*a" * 500}}
    reply = wire.request("workspace/semanticSearch", params)
    assert reply["result"]["results"] == []
    assert time.monotonic() - started < 10
    check_alive(wire)


@pytest.mark.parametrize("query", ["\u0000\ud800", "\ud800", "a\u0000b"])
def test_nul_and_lone_surrogate_are_invalid_params(wire: Wire, query: str) -> None:
    _invalid_params(wire.request("workspace/semanticSearch", {"query": query}), "query")
    command = {"command": "codeask.search", "arguments": [query]}
    _invalid_params(wire.request("workspace/executeCommand", command), "query")
    check_alive(wire)


def test_giant_question_and_query(wire: Wire) -> None:
    giant = "why " * 2_500_000
    _invalid_params(wire.request("workspace/askCode", {"question": giant}), "50000")
    _invalid_params(wire.request("workspace/semanticSearch", {"query": giant}), "20000")
    _invalid_params(wire.request("workspace/symbol", {"query": giant}), "symbolQuery")
    _invalid_params(
        wire.request("workspace/askCode", {"question": "q", "uri": "file:///" + "a" * 10_000}),
        "4096",
    )
    check_alive(wire)


# ---- huge documents ---------------------------------------------------------------------------
def huge_source(megabytes: int) -> str:
    block = SOURCE.replace("parse_config", "parse_config_{n}").replace(
        "merge_settings", "merge_settings_{n}"
    )
    parts, size, n = [], 0, 0
    while size < megabytes * 1024 * 1024:
        text = block.replace("{n}", str(n))
        parts.append(text)
        size += len(text)
        n += 1
    return "".join(parts)


def test_hover_five_times_on_a_ten_megabyte_document(wire: Wire, tmp_path: Path) -> None:
    text = huge_source(10)
    lines = text.count("\n")
    uri = (tmp_path / "huge.py").as_uri()
    item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    wire.notify("textDocument/didOpen", {"textDocument": item})
    check_alive(wire)
    before = wire.vm_hwm_mb()
    for line in (lines // 2 + 4, 5, lines - 3, lines // 3, lines + 1000):
        started = time.monotonic()
        params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": 8}}
        reply = wire.request("textDocument/hover", params)
        assert "result" in reply, reply
        assert time.monotonic() - started < 2.0
        check_alive(wire)
    command = {"command": "codeask.related", "arguments": [uri, lines // 2 + 4]}
    started = time.monotonic()
    related = wire.request("workspace/executeCommand", command)["result"]
    assert time.monotonic() - started < 5.0
    assert any(item["uri"].endswith("app/config.py") for item in related), related
    growth = wire.vm_hwm_mb() - before
    assert growth < 100, f"five hovers raised the peak by {growth:.0f} MB"
    everything = {"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}}
    ask = {"question": "what is this?", "uri": uri, "range": everything}
    _invalid_params(wire.request("workspace/askCode", ask), "selected range", "200000")
    wire.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    check_alive(wire)


def test_one_giant_line_document(wire: Wire, tmp_path: Path) -> None:
    uri = (tmp_path / "minified.js").as_uri()
    text = "var a=function(){return parse_config(1)};" * 200_000  # ~8 MB, no newline
    item = {"uri": uri, "languageId": "javascript", "version": 1, "text": text}
    wire.notify("textDocument/didOpen", {"textDocument": item})
    started = time.monotonic()
    params = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 4_000_000}}
    assert "result" in wire.request("textDocument/hover", params)
    assert time.monotonic() - started < 2.0
    wire.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    check_alive(wire)


def test_message_at_the_size_limit_boundary_is_read(wire: Wire) -> None:
    """A legitimate large message (a 20 MB document) is accepted, not skipped."""
    text = "x = 1\n" * (20 * 1024 * 1024 // 6)
    uri = "untitled:big"
    item = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    wire.write(
        frame(
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}}
        )
    )
    params = {"textDocument": {"uri": uri}, "position": {"line": 5, "character": 0}}
    assert "result" in wire.request("textDocument/hover", params)
    wire.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert wire.null_id_errors.empty()
    check_alive(wire)
