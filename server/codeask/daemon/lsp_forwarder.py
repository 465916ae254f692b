"""`codeask serve` as a forwarder: the editor's stdio piped to a language-server session in
the per-user daemon (docs/daemon.md), as thin as gopls' `-remote=auto` forwarder.

Standard library only: the process an editor starts stays small. Bytes pass both ways in order
and unchanged (what is not a frame too: the session's own framing reader answers it as
in-process). The only thing read is the editor's frames, for one fact: whether it asked the
session to end (`shutdown`, `exit`), which gives the exit code.

When the daemon goes away (a crash, `kill -9`, `codeask daemon --stop`) the session ends: the
forwarder exits with RESTART (75) and the editor starts the server again, which starts a
daemon. VS Code's language client restarts a server whose connection closed (up to 4 times in
3 minutes); the Neovim plugin restarts a client whose server exited with RESTART
(lua/codeask/restart.lua). Both then send `initialize`, the workspace folders, the settings and
every open document themselves, so nothing is replayed here (docs/daemon.md says what the user
sees, measured). After the editor's `exit`, or when it closes stdin, the exit code is the
in-process one: 0 after `shutdown`, else 1.
"""

from __future__ import annotations

import _socket
import _thread
import os
import sys

from codeask import __version__
from codeask.daemon import protocol
from codeask.daemon.relay import write_all

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The exit code when the daemon ends the session before the editor did: "start me again"
#: (EX_TEMPFAIL, sysexits.h). lua/codeask/restart.lua restarts on it.
RESTART = 75
#: After the editor closed stdin or sent `exit`: seconds to wait for the answers still due.
CLOSE_SECONDS = 10.0
CHUNK = 65536
#: Frames up to this size are read for `shutdown`/`exit`; larger ones pass through unread (the
#: session's reader refuses them itself: framing.py's MAX_MESSAGE_BYTES).
MAX_FRAME = 64 * 1024 * 1024
MAX_HEADER = 8 * 1024
MARKER = b"Content-Length"
#: A header line is `Content-Length:[ \t]*(\d{1,32})[ \t]*\r\n` (read by `_length_at`).
MAX_DIGITS = 32
BLANKS = b" \t"
#: Bytes of an oversized body held back between reads: a header cut in two is still seen.
TAIL = 64
WENT_AWAY = "codeask: the daemon went away; the session ends (exit 75: the editor starts it again)"


def hello(verbose: int) -> dict[str, Any]:
    """The request that opens a language-server session (the cwd and environment are the
    editor's: the daemon refuses another environment, and the server runs as in-process)."""
    return {
        "protocol": protocol.PROTOCOL,
        "version": __version__,
        "command": "serve",
        "args": {"verbose": verbose},
        "cwd": os.getcwd(),
        "environment": protocol.environment(),
    }


class Frames:
    """Splits a byte stream into LSP frames. Each piece comes out as (bytes, message): the
    message is the parsed JSON object of a whole frame, else None (bytes that are not a frame,
    or a frame too large to read, pass through unread and in order)."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._raw_left = 0
        self._scanned = 0
        """How far the current frame's body was searched for a header (see _header_inside)."""

    def feed(self, chunk: bytes) -> list[tuple[bytes, dict[str, Any] | None]]:
        self._buf += chunk
        out: list[tuple[bytes, dict[str, Any] | None]] = []
        while self._buf:
            if self._raw_left:
                take = self._raw_take()
                if take:
                    out.append((bytes(self._buf[:take]), None))
                    del self._buf[:take]
                if self._raw_left:
                    return out  # the rest of the oversized body is still to come
                continue
            at = self._buf.find(MARKER)
            if at < 0:
                keep = len(MARKER)  # a marker may be split across two reads
                if len(self._buf) > keep:
                    out.append((bytes(self._buf[:-keep]), None))
                    del self._buf[:-keep]
                return out
            if at > 0:
                out.append((bytes(self._buf[:at]), None))
                del self._buf[:at]
                self._scanned = 0
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > MAX_HEADER:
                    out.append((bytes(self._buf[:1]), None))  # not a header: pass it on
                    del self._buf[:1]
                    self._scanned = 0
                    continue
                return out
            length = _length_at(self._buf, 0)
            if length is None or end > MAX_HEADER:
                out.append((bytes(self._buf[:1]), None))
                del self._buf[:1]
                self._scanned = 0
                continue
            start = end + 4
            if length > MAX_FRAME:
                out.append((bytes(self._buf[:start]), None))
                del self._buf[:start]
                self._scanned = 0
                self._raw_left = length
                continue
            cut = self._header_inside(start, min(len(self._buf), start + length))
            if cut >= 0:  # the body is shorter than announced: the session's reader cuts it at
                out.append((bytes(self._buf[:cut]), None))  # the next header, so does this
                del self._buf[:cut]
                self._scanned = 0
                continue
            if len(self._buf) < start + length:
                return out
            self._scanned = 0
            frame = bytes(self._buf[: start + length])
            del self._buf[: start + length]
            out.append((frame, _parse(frame[start:])))
        return out

    def _header_inside(self, start: int, end: int) -> int:
        """Where a complete header starts in buf[start:end] (-1: none). Scanned once: a big
        body read in many pieces is not searched from its start each time."""
        at = self._buf.find(MARKER, max(start, self._scanned - TAIL))
        while 0 <= at < end:
            if _length_at(self._buf, at) is not None:
                return at
            at = self._buf.find(MARKER, at + 1)
        self._scanned = end
        return -1

    def unfinished(self) -> bytes:
        """The bytes read but not given out yet (a frame's start, a possible header's)."""
        return bytes(self._buf)

    def _raw_take(self) -> int:
        """How many bytes of an oversized body pass now (`_raw_left` counts down). The
        session's reader stops skipping at the next real header (the announced length lied),
        so this stops there too."""
        at = self._buf.find(MARKER)
        while at >= 0:
            if at >= self._raw_left:
                break
            if _length_at(self._buf, at) is not None:
                self._raw_left = 0
                return at
            at = self._buf.find(MARKER, at + 1)
        if self._raw_left <= len(self._buf):
            take, self._raw_left = self._raw_left, 0
            return take
        take = max(0, len(self._buf) - TAIL)  # keep what may be a header cut by this read
        self._raw_left -= take
        return take


def _length_at(buf: bytearray, at: int) -> int | None:
    r"""The length a header line at `buf[at:]` announces, else None: the match of
    `Content-Length:[ \t]*(\d{1,32})[ \t]*\r\n` there, by hand (`re` is ~1 MB of the
    forwarder's resident memory)."""
    if not buf.startswith(b"Content-Length:", at):
        return None
    end = len(buf)
    i = at + 15
    while i < end and buf[i] in BLANKS:
        i += 1
    digits = i
    while i < end and 48 <= buf[i] <= 57 and i - digits < MAX_DIGITS:  # ASCII 0-9, as \d in bytes
        i += 1
    if i == digits:
        return None
    length = int(buf[digits:i])
    while i < end and buf[i] in BLANKS:
        i += 1
    return length if buf.startswith(b"\r\n", i) else None


def _parse(body: bytes) -> dict[str, Any] | None:
    try:
        message = protocol.decode(body, "surrogatepass")
    except (ValueError, RecursionError):  # deep nesting: passed on unread, never fatal
        return None
    return message if isinstance(message, dict) else None


def frame(message: dict[str, Any]) -> bytes:
    body = protocol.encode(message)  # json.dumps(message, separators=(",", ":")), ASCII
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Pipe:
    """The editor's stdin → the session, the session → the editor's stdout, until either ends.
    The session's bytes are not read at all; the editor's are cut into frames only to notice
    `shutdown` and `exit`."""

    def __init__(self, sock: _socket.socket, *, stdin_fd: int = 0, stdout_fd: int = 1) -> None:
        self._sock = sock
        self._in, self._out = stdin_fd, stdout_fd
        self._frames = Frames()
        self._lock = _thread.allocate_lock()
        self._ending = False
        """The editor ended the session (`exit` or stdin closed): the daemon's hang-up is due."""
        self.shutdown = False
        self.exit = False
        self._done = _thread.allocate_lock()
        self._done.acquire()  # released when the session's side ends

    def run(self) -> int:
        """Pipe until the editor sends `exit` or closes stdin, then wait for the session's
        last bytes (CLOSE_SECONDS at most) and return the in-process exit code. The daemon
        going away first ends the process from the reader thread (`_session_ended`)."""
        _thread.start_new_thread(self._pump, ())
        while not self.exit:
            try:
                chunk = os.read(self._in, CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            self._note(chunk)  # before sending: `exit` is known before the daemon hangs up
            try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
                self._sock.sendall(chunk)
            except OSError:  # the daemon is gone: the reader ends the process
                pass
        with self._lock:
            self._ending = True
        try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
            self._sock.shutdown(_socket.SHUT_WR)
        except OSError:
            pass
        self._done.acquire(timeout=CLOSE_SECONDS)
        self._sock.close()
        return 0 if self.shutdown else 1

    def _note(self, chunk: bytes) -> None:
        for _, message in self._frames.feed(chunk):
            if message is None:
                continue
            method = message.get("method")
            if method == "shutdown" and "id" in message:
                self.shutdown = True
            elif method == "exit":
                with self._lock:
                    self.exit = self._ending = True

    def _pump(self) -> None:
        while True:
            try:
                chunk = self._sock.recv(CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            write_all(self._out, chunk)
        self._session_ended()

    def _session_ended(self) -> None:
        """The daemon hung up: after the editor's `exit` (or closed stdin) that is the end
        `run` waits for; else the daemon went away and the process exits RESTART at once (the
        main thread sits in a read of the editor's stdin)."""
        with self._lock:
            expected = self._ending
        if expected:
            self._done.release()
            return
        sys.stderr.write(WENT_AWAY + "\n")
        sys.stderr.flush()
        os._exit(RESTART)
