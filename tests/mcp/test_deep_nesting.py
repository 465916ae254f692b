"""Round 3, item 3: a JSON-RPC line nested 1,000 deep (2 KB) killed `codeask mcp` with a
RecursionError. Now every line nested past json_depth.MAX_DEPTH is answered -32600 under its
own id and the session goes on: a real `codeask mcp` process over stdio, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeask.json_depth import MAX_DEPTH
from support.mcp_harness import RawPipe, build_project, server_env

pytestmark = pytest.mark.slow


def nested_call(message_id: int, depth: int) -> bytes:
    """A tools/call whose `k` argument is `depth` arrays inside each other."""
    nest = "[" * depth + "]" * depth
    params = '{"name":"search_code","arguments":{"query":"cache","k":' + nest + "}}"
    return f'{{"jsonrpc":"2.0","id":{message_id},"method":"tools/call","params":{params}}}'.encode()


def assert_refused(answer: dict[str, object], message_id: int) -> None:
    assert answer["id"] == message_id, answer
    error = answer["error"]
    assert isinstance(error, dict) and error["code"] == -32600, answer
    assert f"nested more than {MAX_DEPTH} levels deep" in error["message"]


def test_deeply_nested_lines_are_answered_and_the_session_goes_on(tmp_path: Path) -> None:
    project = build_project(tmp_path / "shop")
    stderr = tmp_path / "mcp.log"
    pipe = RawPipe(project, server_env(), stderr=stderr).start()
    try:
        for message_id, depth in enumerate((1_000, 990, 101, 1_000, 20_000, 1_000), start=50):
            line = nested_call(message_id, depth)
            assert depth != 1_000 or len(line) < 2_200  # the 2 KB line of the report
            pipe.send_line(line)
            assert_refused(pipe.read(), message_id)
        ok = pipe.request("tools/call", {"name": "index_status", "arguments": {}})
        assert ok["result"].get("isError") is not True
        assert json.loads(ok["result"]["content"][0]["text"])["folders"]
        shallow = pipe.request(
            "tools/call", {"name": "search_code", "arguments": {"query": "cache", "k": 3}}
        )
        assert "result" in shallow, shallow
    finally:
        assert pipe.close() == 0
    assert "RecursionError" not in stderr.read_text()
