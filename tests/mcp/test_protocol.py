"""Issue 29: codeask's own MCP protocol layer (mcp/protocol.py, mcp/jsonrpc.py) on the wire.

The SDK's own client proves the common path in both eras (test_tools.py); here, raw JSON lines
prove what a client library never sends: each broken line gets the JSON-RPC 2.0 error the spec
names (with the request's id when it can be read, else null) and the same session answers the
next request. Then the contract agents are configured against: what `initialize`,
`server/discover`, `tools/list` and `tools/call` answer, field by field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.mcp_harness import TOOLS, RawPipe, build_project, server_env

pytestmark = pytest.mark.slow

HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_project(tmp_path_factory.mktemp("protocol") / "shop")


@pytest.fixture
def pipe(project: Path) -> Iterator[RawPipe]:
    """A raw session, not initialized yet."""
    raw = RawPipe(project, server_env())
    try:
        yield raw
    finally:
        assert raw.close() == 0


def send(pipe: RawPipe, message: dict[str, Any] | str) -> dict[str, Any]:
    """One line in, the next line out."""
    line = message if isinstance(message, str) else json.dumps(message)
    pipe.send_line(line.encode())
    return pipe.read()


def alive(pipe: RawPipe, request_id: int = 900) -> None:
    """The session still answers (and nothing else was written before this answer)."""
    answer = send(pipe, {"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    assert answer == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def error_of(answer: dict[str, Any], request_id: Any, code: int) -> dict[str, Any]:
    assert answer.get("jsonrpc") == "2.0" and answer["id"] == request_id, answer
    assert "result" not in answer and answer["error"]["code"] == code, answer
    return dict(answer["error"])


def call(pipe: RawPipe, request_id: int, name: str, arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return send(
        pipe, {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


def test_broken_lines_get_the_spec_errors_and_the_session_goes_on(pipe: RawPipe) -> None:
    pipe.start()
    error_of(send(pipe, '{"jsonrpc":"2.0","id":2,'), None, -32700)  # cut JSON
    error_of(send(pipe, "not json at all"), None, -32700)
    alive(pipe, 901)
    batch = [
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ]
    assert "batch" in error_of(send(pipe, json.dumps(batch)), None, -32600)["message"]
    error_of(send(pipe, "[]"), None, -32600)
    error_of(send(pipe, "5"), None, -32600)
    error_of(send(pipe, '{"jsonrpc":"1.0","id":5,"method":"ping"}'), 5, -32600)
    error_of(send(pipe, '{"id":6,"method":"ping"}'), 6, -32600)
    error_of(send(pipe, '{"jsonrpc":"2.0","id":7,"method":7}'), 7, -32600)
    for bad_id in ("null", '{"a":1}', "4.5", "true"):
        line = '{"jsonrpc":"2.0","id":' + bad_id + ',"method":"ping"}'
        error_of(send(pipe, line), None, -32600)
    alive(pipe, 902)
    answer = send(pipe, '{"jsonrpc":"2.0","id":"text-id","method":"ping"}')
    assert answer == {"jsonrpc": "2.0", "id": "text-id", "result": {}}


def test_unknown_methods_wrong_params_and_cancels(pipe: RawPipe) -> None:
    pipe.start()
    missing = error_of(send(pipe, {"jsonrpc": "2.0", "id": 2, "method": "foo/bar"}), 2, -32601)
    assert missing["message"] == "Method not found" and missing["data"] == "foo/bar"
    error_of(
        send(
            pipe,
            {"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "debug"}},
        ),
        3,
        -32601,
    )
    pipe.send_line(b'{"jsonrpc":"2.0","method":"notifications/foo"}')  # a notification: no answer
    alive(pipe, 901)
    for request_id, params in enumerate(
        (
            '{"name":5}',
            '"x"',
            "[1]",
            '{"name":"search_code","arguments":"q"}',
            '{"name":"search_code","arguments":[1]}',
        ),
        start=10,
    ):
        line = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{params}}}'
        error_of(send(pipe, line), request_id, -32602)
    error_of(send(pipe, {"jsonrpc": "2.0", "id": 20, "method": "tools/call"}), 20, -32602)
    error_of(
        send(pipe, {"jsonrpc": "2.0", "id": 21, "method": "tools/list", "params": {"cursor": 5}}),
        21,
        -32602,
    )
    # cancels of ids never seen (and a malformed one): notifications, never answered
    for params in ({"requestId": 99}, {"requestId": "nope"}, {}, {"requestId": [1]}):
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
        pipe.send_line(json.dumps(note).encode())
    alive(pipe, 902)
    listed = send(pipe, {"jsonrpc": "2.0", "id": 22, "method": "tools/list"})
    assert [tool["name"] for tool in listed["result"]["tools"]] == list(TOOLS)


def test_before_initialize_only_ping_is_served(pipe: RawPipe) -> None:
    """As the SDK's server: known methods before `initialize` are -32602, unknown ones -32601,
    ping answers; after the handshake everything is served."""
    alive(pipe, 1)
    error_of(send(pipe, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}), 2, -32602)
    early = call(pipe, 3, "index_status", {})
    error_of(early, 3, -32602)
    error_of(send(pipe, {"jsonrpc": "2.0", "id": 4, "method": "nope"}), 4, -32601)
    error_of(send(pipe, {"jsonrpc": "2.0", "id": 5, "method": "initialize"}), 5, -32602)
    bad = {"protocolVersion": 5, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}
    error_of(
        send(pipe, {"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": bad}), 6, -32602
    )
    pipe.start()
    answer = call(pipe, 7, "index_status", {})
    assert answer["result"]["isError"] is False
    assert json.loads(answer["result"]["content"][0]["text"])["folders"]


def initialize(pipe: RawPipe, version: str, request_id: int = 1) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    answer = send(
        pipe, {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}
    )
    return dict(answer["result"])


def test_the_handshake_contract(pipe: RawPipe) -> None:
    """`initialize` answers each version it speaks with that version, anything else with the
    latest (the SDK's rule); the result names the server, its tools capability and how to use
    it; an enveloped 2026 request on this session is refused."""
    for request_id, version in enumerate((*HANDSHAKE, "1999-01-01", MODERN), start=1):
        result = initialize(pipe, version, request_id)
        assert result["protocolVersion"] == (version if version in HANDSHAKE else "2025-11-25")
    assert result["serverInfo"]["name"] == "codeask" and result["serverInfo"]["version"]
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert "search_code" in result["instructions"]
    pipe.send_line(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    refused = send(
        pipe, {"jsonrpc": "2.0", "id": 20, "method": "tools/list", "params": {"_meta": ENVELOPE}}
    )
    error_of(refused, 20, -32600)
    alive(pipe)


def test_the_tools_contract(pipe: RawPipe) -> None:
    """tools/list: the five tools, each an inline object schema titled `<name>Arguments` with
    titled properties, read-only annotations, no output schema. tools/call: one text content
    and `isError`, no structured content; a bad argument or an unknown tool is an error
    result naming it, never a protocol error."""
    pipe.start()
    tools = send(pipe, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})["result"]["tools"]
    assert [tool["name"] for tool in tools] == list(TOOLS)
    for tool in tools:
        assert set(tool) == {"name", "description", "inputSchema", "annotations"}, tool
        assert tool["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
        schema = tool["inputSchema"]
        assert schema["type"] == "object" and schema["title"] == f"{tool['name']}Arguments"
        assert "$ref" not in json.dumps(schema) and "$defs" not in schema
        for name, spec in schema["properties"].items():
            assert spec["title"] == name.replace("_", " ").title() and spec["description"]
    status = tools[-1]["inputSchema"]
    assert status["properties"] == {} and "required" not in status
    search = tools[0]["inputSchema"]["properties"]
    assert search["k"] == {
        "default": 10,
        "description": "number of results (1-50)",
        "maximum": 50,
        "minimum": 1,
        "title": "K",
        "type": "integer",
    }
    assert search["path"]["anyOf"] == [{"type": "string", "maxLength": 4096}, {"type": "null"}]
    assert search["path"]["default"] is None

    found = call(pipe, 3, "search_code", {"query": "expiring cache", "k": "3", "unknown": 1})
    assert set(found["result"]) == {"content", "isError"} and found["result"]["isError"] is False
    [content] = found["result"]["content"]
    assert content["type"] == "text" and len(json.loads(content["text"])["results"]) <= 3
    for request_id, arguments, named in (
        (4, {"query": "x", "k": 0}, "`k`"),
        (5, {"query": "x", "k": "many"}, "`k`"),
        (6, {}, "`query`"),
        (7, {"query": "x", "max_tokens": 10}, "`max_tokens`"),
        (8, {"query": "x" * 20_001}, "20000"),
        (9, {"path": "src/shop/cache.py", "line": 0}, "`line`"),
    ):
        name = "find_related" if "line" in arguments else "search_code"
        result = call(pipe, request_id, name, arguments)["result"]
        assert result["isError"] is True, result
        text = result["content"][0]["text"]
        assert text.startswith(f"Error executing tool {name}: ") and named in text, text
    unknown = call(pipe, 10, "nope", {})["result"]
    assert unknown == {"content": [{"type": "text", "text": "Unknown tool: nope"}], "isError": True}
    refused = call(pipe, 11, "find_related", {"path": "/etc/passwd", "line": 1})["result"]
    assert refused["isError"] is True
    assert "outside every workspace folder" in refused["content"][0]["text"]
    alive(pipe)


def test_the_2026_era_contract(pipe: RawPipe) -> None:
    """A first request carrying the 2026-07-28 envelope opens that era: server/discover,
    stamped results, the envelope checked on every request, no handshake and no ping."""
    discover = send(
        pipe,
        {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": ENVELOPE}},
    )
    result = discover["result"]
    assert result["supportedVersions"] == [MODERN] and result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "codeask"
    assert result["capabilities"]["tools"] == {"listChanged": False} and result["instructions"]
    listed = send(
        pipe, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": ENVELOPE}}
    )
    assert [tool["name"] for tool in listed["result"]["tools"]] == list(TOOLS)
    assert (
        listed["result"]["cacheScope"] == "private" and listed["result"]["resultType"] == "complete"
    )
    params = {"name": "index_status", "arguments": {}, "_meta": ENVELOPE}
    called = send(pipe, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params})
    assert called["result"]["isError"] is False and called["result"]["resultType"] == "complete"
    other = dict(ENVELOPE, **{"io.modelcontextprotocol/protocolVersion": "2030-01-01"})
    unsupported = send(
        pipe, {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": other}}
    )
    assert error_of(unsupported, 4, -32022)["data"] == {
        "supported": [MODERN],
        "requested": "2030-01-01",
    }
    error_of(
        send(pipe, {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}}), 5, -32602
    )
    error_of(
        send(pipe, {"jsonrpc": "2.0", "id": 6, "method": "ping", "params": {"_meta": ENVELOPE}}),
        6,
        -32601,
    )
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "x", "version": "0"},
    }
    late = send(pipe, {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": init})
    assert error_of(late, 7, -32022)["data"]["supported"] == [MODERN]
    error_of(send(pipe, "{broken"), None, -32700)
    again = send(
        pipe, {"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": ENVELOPE}}
    )
    assert again["result"]["tools"]
