"""A bounded, self-resynchronising LSP framing reader in front of pygls' stdio loop.

pygls reads `Content-Length` frames from any object with `readline()`/`read(n)` (the public
`start_io(stdin, stdout)` entry point). Its own loop trusts the header: a huge length is a
MemoryError, a wrong one desyncs the stream forever, and a body that is not a JSON-RPC object
gets no reply. `FramedStdin` sits in between: it parses raw stdin itself, answers broken
messages with a JSON-RPC error (id null unless the message had a usable id), skips what it
cannot use, and hands pygls only well-formed frames of valid JSON-RPC 2.0 objects that the
lifecycle and params gate (gate.py) admits.

Resynchronisation rests on one fact: a valid JSON body can never contain
`Content-Length: <digits>\\r\\n` (a raw CR/LF is not allowed inside a JSON string and the
words are not JSON tokens outside one), so that pattern always marks the next real header.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections import deque
from typing import Any, BinaryIO

from codeask.core.runtime.pipe_write import write_stream
from codeask.json_depth import MAX_DEPTH, too_deep, top_level_id
from codeask.lsp.gate import INVALID_REQUEST, MessageGate, Rejected

log = logging.getLogger("codeask.lsp")

#: Largest message accepted. The biggest legitimate one is a didOpen/didChange carrying a
#: whole document: VS Code stops syncing documents to extensions at 50 MB, JSON escaping adds
#: a little (ASCII-escaped non-ASCII text can add more), so 64 MiB leaves room without letting
#: one header allocate gigabytes. Larger bodies are skipped in READ_CHUNK pieces, never buffered.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
#: A header block (Content-Length line to the blank line) longer than this is garbage.
MAX_HEADER_BYTES = 8 * 1024
READ_CHUNK = 64 * 1024
HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,32})[ \t]*\r\n")
MARKER = b"Content-Length"
#: Any other line of a header block (Content-Type, ...); anything else means the
#: `Content-Length` line before it was not a real header.
OTHER_HEADER = re.compile(rb"[A-Za-z][A-Za-z0-9-]*:[^\r\n]*")
#: Bytes kept between reads while scanning, so a header split across two reads is still seen.
TAIL = 64

PARSE_ERROR = -32700


class LockedWriter:
    """stdout shared by pygls (event loop) and the framing thread: one frame per write."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, data: bytes) -> int:
        """Write a whole frame under the lock, every byte of it however many writes the pipe
        takes it in (`pipe_write`: a full non-blocking stdout, a write cut short by a stop and
        continue)."""
        with self._lock:
            write_stream(self._stream, data)
            return len(data)

    def flush(self) -> None:
        """Flush under the lock."""
        with self._lock:
            self._stream.flush()

    def close(self) -> None:
        """Close the underlying stream."""
        self._stream.close()


def frame(payload: dict[str, Any]) -> bytes:
    """A JSON-RPC payload as one LSP frame."""
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or type(value) is int


def parse_message(body: bytes) -> dict[str, Any]:
    """The JSON-RPC 2.0 object in `body`; `Rejected` says why it is not one."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Rejected(
            PARSE_ERROR, f"Parse error: the body is not valid UTF-8 (byte {exc.start})"
        ) from None
    deep = f"Invalid Request: nested more than {MAX_DEPTH} levels deep"
    try:
        message = json.loads(text)
    except RecursionError:  # too deep for the decoder: its id read from the body's head
        raise Rejected(INVALID_REQUEST, deep, top_level_id(text)) from None
    except ValueError as exc:
        raise Rejected(
            PARSE_ERROR, f"Parse error: the body is not valid JSON ({exc})"[:300]
        ) from None
    if too_deep(message):  # pygls decodes it again on a deeper stack: refused here, by its id
        reply_to = message.get("id") if isinstance(message, dict) else None
        raise Rejected(INVALID_REQUEST, deep, reply_to if _valid_id(reply_to) else None)
    if isinstance(message, list):
        reason = "Invalid Request: batches (JSON arrays) are not supported; LSP has none"
        raise Rejected(INVALID_REQUEST, reason)
    if not isinstance(message, dict):
        raise Rejected(INVALID_REQUEST, "Invalid Request: a message must be a JSON object")
    msg_id = message.get("id")
    reply_id = msg_id if _valid_id(msg_id) else None
    if message.get("jsonrpc") != "2.0":
        raise Rejected(INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"', reply_id)
    if not _valid_id(msg_id):
        raise Rejected(INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
    if "method" in message:
        if not isinstance(message["method"], str):
            raise Rejected(INVALID_REQUEST, 'Invalid Request: "method" must be a string', reply_id)
    elif "id" not in message or not ("result" in message or "error" in message):
        reason = 'Invalid Request: neither a request/notification ("method") nor a response'
        raise Rejected(INVALID_REQUEST, reason, reply_id)
    return message


class Framer:
    """Raw bytes → bodies of well-formed JSON-RPC messages; answers the broken ones itself."""

    def __init__(self, raw: BinaryIO, out: LockedWriter, gate: MessageGate | None = None) -> None:
        self._read = getattr(raw, "read1", raw.read)
        self._out = out
        self._gate = gate
        self._buf = bytearray()
        self._eof = False

    # ---- bytes in ---------------------------------------------------------------------------
    def _fill(self) -> bool:
        """Read what is available; False at end of input."""
        if self._eof:
            return False
        chunk = self._read(READ_CHUNK)
        if not chunk:
            self._eof = True
            return False
        self._buf += chunk
        return True

    def _find_header(self, start: int = 0) -> re.Match[bytes] | None:
        """The first complete `Content-Length: N\\r\\n` at or after `start`."""
        at = self._buf.find(MARKER, start)
        while at != -1:
            match = HEADER.match(self._buf, at)
            if match is not None:
                return match
            at = self._buf.find(MARKER, at + 1)
        return None

    # ---- replies ------------------------------------------------------------------------------
    def reply_error(self, code: int, reason: str, msg_id: Any = None) -> None:
        """Answer a message pygls never sees (logged too: the editor's output shows why)."""
        log.warning("rejected a message (%d): %s", code, reason)
        error = {"code": code, "message": f"codeask: {reason}"}
        payload = {"jsonrpc": "2.0", "id": msg_id, "error": error}
        try:
            self._out.write(frame(payload))
            self._out.flush()
        except (OSError, ValueError):
            log.warning("could not send the error reply (client gone)")

    # ---- frames -------------------------------------------------------------------------------
    def _next_length(self) -> int | None:
        """Skip to the next header block; its Content-Length, or None at end of input."""
        skipped = 0
        while True:
            match = self._find_header()
            if match is None:
                if len(self._buf) > TAIL:
                    skipped += len(self._buf) - TAIL
                    del self._buf[:-TAIL]
                if not self._fill():
                    return None
                continue
            end = self._buf.find(b"\r\n\r\n", match.end() - 2)
            if end == -1 and len(self._buf) - match.start() <= MAX_HEADER_BYTES:
                if not self._fill():
                    return None
                continue
            if end == -1 or not self._plain_headers(match.end(), end):
                skipped += match.end()  # not a header block: look for the next one
                del self._buf[: match.end()]
                continue
            skipped += match.start()
            length = int(match.group(1))
            del self._buf[: end + 4]
            if skipped:
                log.warning("skipped %d bytes that were not an LSP frame (resynchronised)", skipped)
            return length

    def _plain_headers(self, start: int, end: int) -> bool:
        """Lines between the Content-Length line and the blank line are other headers."""
        if end - start > MAX_HEADER_BYTES:
            return False
        for line in bytes(self._buf[start:end]).split(b"\r\n"):
            if line and (
                OTHER_HEADER.fullmatch(line) is None or line.lower().startswith(b"content-length")
            ):
                return False
        return True

    def _skip(self, length: int) -> None:
        """Drop an oversized body in pieces; stop early at a real header (the length lied)."""
        left = length
        while left > 0:
            match = self._find_header()
            if match is not None and match.start() < left:
                del self._buf[: match.start()]
                return
            if len(self._buf) >= left:
                del self._buf[:left]
                return
            keep = min(TAIL, len(self._buf))
            dropped = len(self._buf) - keep
            left -= dropped
            del self._buf[:dropped]
            if not self._fill():
                return

    def _body(self, length: int) -> bytes | None:
        """Exactly `length` bytes, or None when a header shows up first (body too short)."""
        scanned = 0
        while True:
            limit = min(len(self._buf), length)
            match = self._find_header(max(0, scanned - TAIL))
            if match is not None and match.start() < length:
                self.reply_error(
                    PARSE_ERROR,
                    f"Parse error: the body ended after {match.start()} of the "
                    f"{length} bytes its Content-Length announced",
                )
                del self._buf[: match.start()]
                return None
            scanned = limit
            if len(self._buf) >= length:
                body = bytes(self._buf[:length])
                del self._buf[:length]
                return body
            if not self._fill():
                return None

    def next_body(self) -> bytes | None:
        """The next valid message body; None at end of input."""
        while True:
            length = self._next_length()
            if length is None:
                return None
            if length > MAX_MESSAGE_BYTES:
                self.reply_error(
                    INVALID_REQUEST,
                    f"message of {length} bytes exceeds the maximum of "
                    f"{MAX_MESSAGE_BYTES} bytes; skipped",
                )
                self._skip(length)
                continue
            body = self._body(length)
            if body is None:
                if self._eof and not self._buf:
                    return None
                continue
            try:
                message = parse_message(body)
                if self._gate is None or self._gate.admit(message):
                    return body
            except Rejected as rejected:
                self.reply_error(rejected.code, rejected.reason, rejected.msg_id)


class FramedStdin:
    """What pygls' stdio loop reads: canonical frames of valid messages only."""

    def __init__(self, framer: Framer) -> None:
        self._framer = framer
        self._pending: deque[bytes] = deque()

    def readline(self) -> bytes:
        """A header line, the blank line, or b'' at end of input."""
        if not self._pending:
            body = self._framer.next_body()
            if body is None:
                log.info("stdin closed: the client is gone")
                return b""
            self._pending.extend((b"Content-Length: %d\r\n" % len(body), b"\r\n", body))
        return self._pending.popleft()

    def read(self, n: int) -> bytes:
        """The body announced by the header just returned."""
        return self._pending.popleft() if self._pending else b""
