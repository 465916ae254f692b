"""stdio for the MCP server: stdout carries only the protocol, and every request is answered.

One JSON-RPC message per line. Two kinds of line are answered here, before the protocol
(protocol.py) parses anything, through the same writer: a line with an unpaired surrogate
escape (`"\\ud800"`: valid JSON, not valid text; msgspec refuses it) and a runaway line (only
its start is kept in memory). A `tools/call` with such text gets a tool error naming the
argument, anything else a JSON-RPC error.

stdout: the protocol gets a private copy of fd 1; fd 1 itself then points at stderr, so a
stray print or a C library's output lands in the log, never in the protocol. fd 0 likewise
points at /dev/null once the protocol has its copy (child processes read nothing of it).
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import threading
from typing import Any, BinaryIO, Protocol

from codeask.core.runtime.pipe_write import write_fd
from codeask.core.source.limits import MAX_LINE_BYTES
from codeask.core.source.names import bad_text
from codeask.json_depth import too_deep

log = logging.getLogger("codeask.mcp")

#: A `\uD800`-`\uDFFF` escape: the only way a JSON line can carry an unpaired surrogate.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
#: The request id near the start of a runaway line (clients write it before the params).
LEADING_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")')
INVALID_REQUEST, INVALID_PARAMS = -32600, -32602


class WholeWrites:
    """A descriptor every write goes to whole (`pipe_write.write_fd`): an unbuffered pipe's
    write may take part of an answer (a full non-blocking pipe, a signal, a stop and continue),
    and the rest was dropped, leaving the agent a line cut in two."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def write(self, data: bytes, /) -> int:
        write_fd(self.fd, data)
        return len(data)


def claim_stdio() -> tuple[BinaryIO, WholeWrites]:
    """Private copies of stdin and stdout for the protocol; fd 0 → /dev/null, fd 1 → stderr."""
    wire_in = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
    wire_out = WholeWrites(os.dup(sys.stdout.fileno()))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, sys.stdin.fileno())
    os.close(null)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    return wire_in, wire_out


class RawIn(Protocol):
    """What the protocol reads from: stdin's copy, or a daemon connection (mcp/remote.py)."""

    def read(self, size: int, /) -> bytes: ...


class RawOut(Protocol):
    """What the protocol writes to (each write whole: `WholeWrites`, a socket's `sendall`)."""

    def write(self, data: bytes, /) -> object: ...


class Output:
    """The protocol's stdout: whole lines, one writer at a time (any thread). A peer gone
    mid-answer loses that answer only (logged)."""

    def __init__(self, raw: RawOut) -> None:
        self._raw = raw
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        with self._lock:
            try:
                self._raw.write(data)
            except OSError as exc:  # the agent closed its end
                log.info("an answer was not delivered: %s", exc)


class Input:
    """The protocol's stdin as lines (blank lines skipped); lines the protocol should never
    see are answered here."""

    def __init__(self, raw: RawIn, output: Output) -> None:
        self._raw = raw
        self._output = output
        self._buffer = b""

    def __iter__(self) -> Input:
        return self

    def __next__(self) -> str:
        while True:
            read = self._readline()
            if read is None:
                raise StopIteration
            line, size = read
            if size > MAX_LINE_BYTES:
                self._refuse_runaway(line[:65536])
                continue
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            if SURROGATE_ESCAPE.search(text) and self._answered_bad_text(text):
                continue
            return text

    def _readline(self) -> tuple[bytes, int] | None:
        """(the line, its size in bytes); of a line over MAX_LINE_BYTES only the start is
        kept in memory, the rest is read and dropped. None at end of input."""
        kept = bytearray()
        size = 0
        while True:
            if not self._buffer:
                self._buffer = self._raw.read(65536)
                if not self._buffer:
                    return (bytes(kept), size) if size else None
            newline = self._buffer.find(b"\n")
            end = newline + 1 if newline >= 0 else len(self._buffer)
            part, self._buffer = self._buffer[:end], self._buffer[end:]
            size += len(part)
            if size <= MAX_LINE_BYTES:
                kept += part
            if newline >= 0:
                return bytes(kept), size

    def _refuse_runaway(self, head: bytes) -> None:
        found = LEADING_ID.search(head)
        log.warning("refused a message over %d bytes", MAX_LINE_BYTES)
        if found is None:
            return
        message_id = json.loads(found.group(1))
        reason = f"message over {MAX_LINE_BYTES // (1024 * 1024)} MB refused"
        self._send({"id": message_id, "error": {"code": INVALID_REQUEST, "message": reason}})

    def _answered_bad_text(self, text: str) -> bool:
        """A request whose arguments hold an unpaired surrogate: answer it (True); anything
        else passes on to the protocol (False), a too-deep one included (it answers it)."""
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return False
        if too_deep(message):
            return False
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            return False
        where = _bad_field(message.get("params"), "params")
        if where is None:
            return False  # paired surrogates: valid text, the protocol reads them
        params = message.get("params") or {}
        if message["method"] == "tools/call" and isinstance(params, dict):
            field = where.removeprefix("params.arguments.")
            result = {
                "content": [{"type": "text", "text": f"`{field}` {_BAD}; send valid Unicode text"}],
                "isError": True,
            }
            self._send({"id": message["id"], "result": result})
        else:
            error = {"code": INVALID_PARAMS, "message": f"`{where}` {_BAD}"}
            self._send({"id": message["id"], "error": error})
        return True

    def _send(self, payload: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **payload}, ensure_ascii=True)
        self._output.write(body.encode("ascii") + b"\n")


_BAD = "contains an unpaired surrogate (not valid Unicode text)"


def _bad_field(value: Any, where: str) -> str | None:
    """The dotted name of the first string in `value` that is not well-formed text."""
    if isinstance(value, str):
        return where if bad_text(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            found = _bad_field(item, f"{where}.{key}")
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _bad_field(item, f"{where}[{index}]")
            if found:
                return found
    return None
