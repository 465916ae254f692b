"""JSON-RPC 2.0 messages, one per line, decoded and encoded with msgspec.

What the MCP server needs of JSON-RPC and nothing more: classify a decoded line (request,
notification, a response to us, or something invalid), and encode answers. The peer is a
model's client: every malformed line gets the error the JSON-RPC 2.0 spec names (parse error,
invalid request) with the request's id when it can be read, else `null`, and the session goes
on. Batches (arrays) were removed from MCP in 2025-06-18: one "invalid request" answers them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import msgspec

from codeask.json_depth import MAX_DEPTH, too_deep, top_level_id, valid_id

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: MCP's "unsupported protocol version" (2026-07-28 era), with `data.supported`/`requested`.
UNSUPPORTED_PROTOCOL_VERSION = -32022

RequestId = int | str
#: "No data member" (distinct from `data: null`).
NO_DATA: Any = object()

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()


class RpcError(Exception):
    """An error answer: JSON-RPC `code`, `message` and, when given, `data`."""

    def __init__(self, code: int, message: str, data: Any = NO_DATA) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def payload(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not NO_DATA:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True)
class Notification:
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True)
class Invalid:
    """A line that is no valid message: answered with `error`, to `id` (None: `null`)."""

    id: RequestId | None
    error: RpcError


@dataclass(frozen=True)
class Ignored:
    """A response from the client (this server sends no request): nothing to do."""


Message = Request | Notification | Invalid | Ignored


def parse(line: str | bytes) -> Message:
    """One line from the peer as a message (never raises)."""
    try:
        raw = _decoder.decode(line)
    except msgspec.DecodeError:
        return Invalid(None, RpcError(PARSE_ERROR, "Parse error"))
    except RecursionError:  # too deep for the decoder: its id read from the line's head
        return _too_deep(top_level_id(line))
    if too_deep(raw):
        return _too_deep(valid_id(raw.get("id")) if isinstance(raw, dict) else None)
    if isinstance(raw, list):
        return Invalid(
            None, RpcError(INVALID_REQUEST, "Invalid request: batches are not supported")
        )
    if not isinstance(raw, dict):
        return Invalid(None, RpcError(INVALID_REQUEST, "Invalid request: not an object"))
    return _classify(raw)


def _too_deep(answer_to: RequestId | None) -> Invalid:
    """A message nested past MAX_DEPTH: refused before anything walks it."""
    reason = f"Invalid request: nested more than {MAX_DEPTH} levels deep"
    return Invalid(answer_to, RpcError(INVALID_REQUEST, reason))


def _classify(raw: dict[str, Any]) -> Message:
    has_id = "id" in raw
    answer_to = valid_id(raw.get("id"))  # MCP ids: strings or integers (no null, float, bool)
    if raw.get("jsonrpc") != "2.0":
        return Invalid(
            answer_to, RpcError(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
        )
    method = raw.get("method")
    if method is None and ("result" in raw or "error" in raw):
        return Ignored()
    if not isinstance(method, str):
        return Invalid(
            answer_to, RpcError(INVALID_REQUEST, 'Invalid request: "method" must be a string')
        )
    if has_id and answer_to is None:
        reason = 'Invalid request: "id" must be a string or an integer'
        return Invalid(None, RpcError(INVALID_REQUEST, reason))
    params = raw.get("params")
    if params is not None and not isinstance(params, dict):
        error = RpcError(INVALID_PARAMS, 'Invalid params: "params" must be an object')
        return Invalid(answer_to, error) if has_id else Ignored()
    if answer_to is not None:
        return Request(answer_to, method, params)
    return Notification(method, params)


def result_line(message_id: RequestId, result: dict[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "id": message_id, "result": result})


def error_line(message_id: RequestId | None, error: RpcError) -> bytes:
    return encode({"jsonrpc": "2.0", "id": message_id, "error": error.payload()})


def encode(message: dict[str, Any]) -> bytes:
    """One line of JSON. A lone surrogate in a string (msgspec refuses it) is escaped as the
    standard library does, so an answer is never lost to it."""
    try:
        body = _encoder.encode(message)
    except (UnicodeEncodeError, msgspec.EncodeError):
        body = json.dumps(message, ensure_ascii=True).encode("ascii")
    return body + b"\n"
