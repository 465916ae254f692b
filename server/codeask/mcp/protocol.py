"""The MCP protocol as codeask serves it: the handshake, the methods, the two protocol eras.

What the MCP SDK's server did for us (mcp 2.3, measured against it: tests/mcp), written out
for five read-only tools so that `codeask mcp` and the daemon never load the SDK and pydantic
(~55 MB of every process that serves agents, issue 29):

- **Eras.** The client's first request decides, once. `initialize` (or any request without
  the 2026-07-28 envelope) opens the handshake era: `initialize` answers the client's version
  when it is one of HANDSHAKE_VERSIONS, else the latest of them. A request whose
  `params._meta` carries `io.modelcontextprotocol/protocolVersion` opens the 2026-07-28 era
  (`server/discover`, every request carries its own envelope; results are stamped with
  `resultType` and the server's identity). A claim from the other era is refused as the SDK
  refuses it.
- **Before `initialize`** only `ping` is served (other known methods: -32602, as the SDK).
- **Methods.** `tools/list`, `tools/call`, `ping` (handshake era only), and empty
  `prompts/list`, `resources/list`, `resources/templates/list` (the capabilities the SDK's
  server advertised). Anything else: -32601 "Method not found" with the method as `data`.
- **Calls** run on a worker thread each (the tools block on disk and indexes), several at
  once; `notifications/cancelled` drops the answer of the call it names (the spec: a cancelled
  request is never answered; the tool itself runs to its end, read-only).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from codeask.mcp import jsonrpc
from codeask.mcp.jsonrpc import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    Notification,
    Request,
    RequestId,
    RpcError,
)
from codeask.mcp.toolkit import Tool, error_result

log = logging.getLogger("codeask.mcp")

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS = ("2026-07-28",)
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
#: Tool calls of one session running at once (more wait their turn).
CALL_WORKERS = 8
#: The SDK's answer to a malformed or premature request (kept: clients match on it).
INVALID = RpcError(INVALID_PARAMS, "Invalid request parameters", "")
EMPTY_LISTS = {
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}


@dataclass(frozen=True)
class ServerInfo:
    name: str
    version: str
    title: str
    instructions: str
    tools: list[Tool] = field(default_factory=list)

    def identity(self) -> dict[str, str]:
        return {"name": self.name, "title": self.title, "version": self.version}

    def tool(self, name: str) -> Tool | None:
        return next((tool for tool in self.tools if tool.name == name), None)

    def listing(self) -> list[dict[str, Any]]:
        return [tool.listing() for tool in self.tools]


def capabilities() -> dict[str, Any]:
    """What the SDK's server advertised for our tools (prompts and resources: empty lists)."""
    return {
        "prompts": {"listChanged": False},
        "resources": {"listChanged": False, "subscribe": False},
        "tools": {"listChanged": False},
    }


def negotiate(requested: str) -> str:
    """The SDK's rule: the client's version if we speak it, else our latest."""
    return requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]


def has_modern_envelope(params: dict[str, Any] | None) -> bool:
    meta = (params or {}).get("_meta")
    return isinstance(meta, dict) and VERSION_KEY in meta


class Session:
    """One MCP session: messages in (`receive`), answers out through `send` (whole lines,
    callable from any thread). `close` waits for the calls in flight and answers them."""

    def __init__(self, server: ServerInfo, send: Callable[[bytes], None]) -> None:
        self.server = server
        self._send = send
        self.era: str | None = None
        """None until the first request; then "handshake" or "modern"."""
        self.initialized = False
        self._lock = threading.Lock()
        self._in_flight: dict[RequestId, bool] = {}
        """Calls running: id → cancelled."""
        self._pool = ThreadPoolExecutor(CALL_WORKERS, thread_name_prefix="codeask-mcp-call")

    # ---- input ----------------------------------------------------------------------------------
    def receive(self, line: str | bytes) -> None:
        """One line from the client."""
        message = jsonrpc.parse(line)
        if isinstance(message, jsonrpc.Invalid):
            log.info("invalid message: %s", message.error.message)
            self._send(jsonrpc.error_line(message.id, message.error))
        elif isinstance(message, Notification):
            self._notification(message)
        elif isinstance(message, Request):
            self._request(message)

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    # ---- requests -------------------------------------------------------------------------------
    def _request(self, request: Request) -> None:
        log.debug("request %s (id %r)", request.method, request.id)
        if self.era is None:
            modern = request.method != "initialize" and has_modern_envelope(request.params)
            self.era = "modern" if modern else "handshake"
        try:
            if self.era == "modern":
                self._modern(request)
            else:
                self._handshake(request)
        except RpcError as error:
            self._send(jsonrpc.error_line(request.id, error))

    def _handshake(self, request: Request) -> None:
        method, params = request.method, request.params or {}
        if has_modern_envelope(request.params):
            raise RpcError(
                INVALID_REQUEST,
                "this connection serves the handshake protocol era; requests carrying the "
                "2026-07-28 envelope are not accepted on it",
            )
        if method == "initialize":
            self._answer(request.id, self._initialize(params))
        elif method == "ping":
            self._answer(request.id, {})
        elif method not in ("tools/list", "tools/call", *EMPTY_LISTS):
            raise RpcError(METHOD_NOT_FOUND, "Method not found", method)
        elif not self.initialized:
            raise INVALID
        else:
            self._method(request, stamp=None)

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        version = params.get("protocolVersion")
        info = params.get("clientInfo")
        if (
            not isinstance(version, str)
            or not isinstance(params.get("capabilities"), dict)
            or not isinstance(info, dict)
            or not isinstance(info.get("name"), str)
            or not isinstance(info.get("version"), str)
        ):
            raise INVALID
        self.initialized = True
        log.info("client %s %s, protocol %s", info["name"], info["version"], version)
        return {
            "protocolVersion": negotiate(version),
            "capabilities": capabilities(),
            "serverInfo": self.server.identity(),
            "instructions": self.server.instructions,
        }

    def _modern(self, request: Request) -> None:
        method, params = request.method, request.params or {}
        if method == "initialize":
            raise RpcError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "connection is serving the 2026-07-28 protocol; the initialize handshake is "
                "not accepted",
                {"supported": list(MODERN_VERSIONS), "requested": params.get("protocolVersion")},
            )
        check_envelope(params)
        stamp = {"resultType": "complete", "_meta": {SERVER_INFO_KEY: self.server.identity()}}
        if method == "server/discover":
            self._answer(
                request.id,
                {
                    "supportedVersions": list(MODERN_VERSIONS),
                    "capabilities": capabilities(),
                    "instructions": self.server.instructions,
                    "cacheScope": "private",
                    "ttlMs": 0,
                    **stamp,
                },
            )
        elif method in ("tools/list", "tools/call", *EMPTY_LISTS):
            self._method(request, stamp=stamp)
        else:  # ping and the handshake's methods are gone in 2026-07-28
            raise RpcError(METHOD_NOT_FOUND, "Method not found", method)

    def _method(self, request: Request, stamp: dict[str, Any] | None) -> None:
        """tools/list, tools/call or an empty list, in either era (`stamp`: the modern
        era's fields on every result)."""
        params = request.params or {}
        listed = {"cacheScope": "private", "ttlMs": 0} if stamp else {}
        if request.method == "tools/call":
            self._call(request.id, params, stamp or {})
            return
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise INVALID
        if request.method == "tools/list":
            result: dict[str, Any] = {"tools": self.server.listing()}
        else:
            result = {EMPTY_LISTS[request.method]: []}
        self._answer(request.id, {**result, **listed, **(stamp or {})})

    def _call(self, request_id: RequestId, params: dict[str, Any], stamp: dict[str, Any]) -> None:
        name = params.get("name")
        given = params.get("arguments")
        if not isinstance(name, str) or not isinstance(given, dict | None):
            raise INVALID
        tool = self.server.tool(name)
        if tool is None:
            self._answer(request_id, {**error_result(f"Unknown tool: {name}"), **stamp})
            return
        with self._lock:
            self._in_flight[request_id] = False
        self._pool.submit(self._run, tool, request_id, given or {}, stamp)

    def _run(
        self, tool: Tool, request_id: RequestId, given: dict[str, Any], stamp: dict[str, Any]
    ) -> None:
        result = tool.call(given)
        with self._lock:
            cancelled = self._in_flight.pop(request_id, False)
        if cancelled:
            log.info("call %r was cancelled: its answer is dropped", request_id)
            return
        self._answer(request_id, {**result, **stamp})

    def _answer(self, request_id: RequestId, result: dict[str, Any]) -> None:
        self._send(jsonrpc.result_line(request_id, result))

    # ---- notifications --------------------------------------------------------------------------
    def _notification(self, note: Notification) -> None:
        log.debug("notification %s", note.method)
        params = note.params or {}
        if note.method == "notifications/initialized":
            return  # `initialize` already opened the session (the SDK serves before it too)
        if note.method == "notifications/cancelled":
            request_id = params.get("requestId")
            with self._lock:
                if isinstance(request_id, int | str) and request_id in self._in_flight:
                    self._in_flight[request_id] = True
                    return
            log.debug("cancel of %r: no such call in flight", request_id)
            return


def check_envelope(params: dict[str, Any]) -> None:
    """A 2026-07-28 request's `_meta` envelope, as the SDK checks it."""
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta must be an object carrying the required {VERSION_KEY!r} and "
            f"{CAPABILITIES_KEY!r} envelope keys",
        )
    missing = [key for key in (VERSION_KEY, CAPABILITIES_KEY) if key not in meta]
    if missing:
        raise RpcError(
            INVALID_PARAMS,
            f"params._meta is missing the required envelope key(s): {', '.join(missing)}",
        )
    version = meta[VERSION_KEY]
    if not isinstance(version, str):
        raise RpcError(INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version not in MODERN_VERSIONS:
        raise RpcError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": list(MODERN_VERSIONS), "requested": version},
        )
