"""`codeask serve` as a forwarder: the editor's stdio piped, frame by frame, to a language-server
session in the per-user daemon (docs/daemon.md), like `codeask mcp`'s forwarder.py.

Standard library only: the process an editor starts stays small. Bytes pass through in order
and unchanged (what is not a frame too: the session's own framing reader answers it as
in-process). The forwarder reads just enough of each frame to survive the daemon's death:

- from the editor: `initialize` and `initialized`, every workspace-folder change, the last
  pushed configuration, each open document's `didOpen` and the `didChange`s since (replayed
  verbatim, so the new server's text is the old one's by construction), `shutdown`/`exit`, and
  every request not answered yet (nor cancelled);
- from the server: its requests to the editor (an answer to a dead server's request is dropped,
  never handed to the next one), work-done progress begun and not ended (ended for the editor
  when the server dies, so no bar spins forever), and the capabilities it registered (the next
  server's identical registration is answered here: the editor keeps one file watcher).

When the connection drops it says so in the editor (window/showMessage), connects again
(starting a daemon; else `codeask serve` in a child process with the daemon off), replays
`initialize` under a private id (its answer is swallowed: the editor was answered once),
`initialized`, the folder changes, the configuration and the open documents, then sends every
unanswered request once more, except those that may act or stream (askCode, commands other
than search and related), which are answered "codeask daemon restarted; retry" (RequestFailed),
as is a request whose second send is lost too.
"""

from __future__ import annotations

import os
import time

from codeask import __version__
from codeask.daemon import protocol, relay
from codeask.daemon.relay import Pending, Relay, Signal, Upstream, request_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

PROBE_ID = "codeask-forwarder-probe-"
SEARCH = "workspace/semanticSearch"
#: Any query does: with vectors loaded, the dense tiers always return neighbours.
WARM_QUERY = "function"
#: After a replay: how long the editor's requests wait for the new server to open the folders'
#: indexes, and how long one status question may take.
OPEN_SECONDS = 60.0
PROBE_SECONDS = 5.0
#: LSP's RequestFailed: the request is valid but failed; the editor may ask again.
REQUEST_FAILED = -32803
#: Frames up to this size are read for bookkeeping; larger ones pass through unread (the
#: session's reader refuses them itself: framing.py's MAX_MESSAGE_BYTES).
MAX_FRAME = 64 * 1024 * 1024
MAX_HEADER = 8 * 1024
MARKER = b"Content-Length"
#: A header line is `Content-Length:[ \t]*(\d{1,32})[ \t]*\r\n` (read by `_length_at`).
MAX_DIGITS = 32
BLANKS = b" \t"
#: Bytes of an oversized body held back between reads: a header cut in two is still seen.
TAIL = 64
#: Requests never sent twice: they may act or stream (askCode's deltas would come twice).
NOT_RESENT = frozenset({"workspace/askCode"})
#: Commands that only read, safe to send twice.
READ_ONLY_COMMANDS = frozenset({"codeask.search", "codeask.related"})
INFO, WARNING = 3, 2


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


class EditorState:
    """What a new server must be told to stand where the dead one stood (see the module doc).
    Not thread-safe: the Proxy holds its lock around every call."""

    def __init__(self) -> None:
        self.initialize: bytes | None = None
        self.initialize_key = ""
        self.initialize_answered = False
        self.initialized: bytes | None = None
        self.folder_changes: list[bytes] = []
        self.configuration: bytes | None = None
        self.documents: dict[str, list[bytes]] = {}
        self.pending: dict[str, Pending] = {}
        self.shutdown = False
        self.exit = False
        self.searched = False
        """The editor searched: the server had its query model loaded (or loading)."""

    def from_editor(self, message: dict[str, Any], data: bytes) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            return
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" in message:
            self._request(message["id"], method, params, data)
            return
        if method == "initialized":
            self.initialized = data
        elif method == "exit":
            self.exit = True
        elif method == "$/cancelRequest" and "id" in params:
            self.pending.pop(request_key(params["id"]), None)
        elif method == "workspace/didChangeWorkspaceFolders":
            self.folder_changes.append(data)
        elif method == "workspace/didChangeConfiguration":
            self.configuration = data
        elif method.startswith("textDocument/did"):
            self._document(method, params, data)

    def _request(self, request_id: Any, method: str, params: dict[str, Any], data: bytes) -> None:
        resend = method not in NOT_RESENT
        if method == "workspace/executeCommand":
            resend = params.get("command") in READ_ONLY_COMMANDS
        key = request_key(request_id)
        self.pending[key] = Pending(request_id, method, data, resend)
        if method == "initialize":
            self.initialize, self.initialize_key = data, key
            self.initialize_answered = False
        elif method == "shutdown":
            self.shutdown = True
        elif method == SEARCH or (
            method == "workspace/executeCommand" and params.get("command") == "codeask.search"
        ):
            self.searched = True

    def _document(self, method: str, params: dict[str, Any], data: bytes) -> None:
        document = params.get("textDocument")
        uri = document.get("uri") if isinstance(document, dict) else None
        if not isinstance(uri, str):
            return
        if method == "textDocument/didOpen":
            self.documents[uri] = [data]
        elif method == "textDocument/didClose":
            self.documents.pop(uri, None)
        elif method == "textDocument/didChange" and uri in self.documents:
            changes = params.get("contentChanges")
            last = changes[-1] if isinstance(changes, list) and changes else None
            if isinstance(last, dict) and "range" not in last:  # the whole text: open it anew
                self.documents[uri] = [_reopen(self.documents[uri][0], last, params)]
            else:
                self.documents[uri].append(data)

    def answered(self, key: str) -> None:
        self.pending.pop(key, None)
        if key == self.initialize_key:
            self.initialize_answered = True


def _reopen(opened: bytes, change: dict[str, Any], params: dict[str, Any]) -> bytes:
    """A didOpen carrying a full-text change's text (the log of that document restarts)."""
    first = _parse(opened.split(b"\r\n\r\n", 1)[1]) or {}
    item = dict((first.get("params") or {}).get("textDocument") or {})
    item["text"] = change.get("text", "")
    version = (params.get("textDocument") or {}).get("version")
    if isinstance(version, int):
        item["version"] = version
    message = {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}}
    return frame(message)


class ServerState:
    """What the editor was asked or shown by the current server (the Proxy's lock held)."""

    def __init__(self) -> None:
        self.requests: set[str] = set()
        """Ids of this server's requests to the editor not answered yet."""
        self.progress: dict[str, Any] = {}
        """Work-done progress begun and not ended: key → token."""
        self.registered: set[str] = set()
        """Registration ids the editor holds (from any server: the editor keeps them)."""

    def stale_answer(self, message: dict[str, Any]) -> bool:
        """An answer to a request of a server that died (the next one never asked it)."""
        if "method" in message or "id" not in message:
            return False
        key = request_key(message["id"])
        if key in self.requests:
            self.requests.discard(key)
            return False
        return True

    def note(self, message: dict[str, Any], method: str) -> bytes | None:
        """Remember what the server asked or showed; the answer when answered here instead."""
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "$/progress":
            value = params.get("value")
            kind = value.get("kind") if isinstance(value, dict) else None
            token = params.get("token")
            if kind == "begin":
                self.progress[request_key(token)] = token
            elif kind == "end":
                self.progress.pop(request_key(token), None)
            return None
        if "id" not in message:
            return None
        if method == "client/registerCapability":
            ids = {r.get("id") for r in params.get("registrations", []) if isinstance(r, dict)}
            if ids and ids <= self.registered:  # the editor holds these already
                return frame({"jsonrpc": "2.0", "id": message["id"], "result": None})
            self.registered |= {i for i in ids if isinstance(i, str)}
        elif method == "client/unregisterCapability":
            for gone in params.get("unregisterations", []):
                if isinstance(gone, dict):
                    self.registered.discard(gone.get("id"))
        self.requests.add(request_key(message["id"]))
        return None


class Proxy(Relay):
    """The editor's stdin → upstream, upstream → the editor's stdout, surviving upstream deaths."""

    SESSION = "the language server"

    def __init__(self, upstream: Upstream, reconnect: Callable[[], Upstream], **fds: int) -> None:
        super().__init__(upstream, reconnect, **fds)
        self.editor = EditorState()
        self.server = ServerState()
        self._probes = 0
        self._resuming = False
        self._frames = Frames()
        """The editor's bytes, cut into frames to be noted (they pass on as they come)."""
        self._held: list[bytes] = []
        """The editor's frames while a new server opens its folders (sent after the resend)."""
        self._probing: dict[str, tuple[Signal, list[Any]]] = {}
        """Private indexStatus requests after a replay: key → (answered, [result])."""

    # ---- the editor's side -------------------------------------------------------------------
    def _from_client(self, chunk: bytes) -> bool:
        """Forward until the editor sends `exit` or closes stdin."""
        self._from_editor(chunk)
        with self._state:
            return self.editor.exit

    def _exit_code(self) -> int:
        """The in-process exit code: 0 after `shutdown`, else 1."""
        with self._state:
            return 0 if self.editor.shutdown else 1

    def _from_editor(self, chunk: bytes) -> None:
        """The editor's bytes go on as they come (a frame is never held for its end: a lying
        Content-Length must reach the session's reader, which answers it); the frames parsed
        from them are only noted. While a new server opens its folders the editor's answers
        go on and everything else waits (`_held`, then the parser's unfinished bytes)."""
        with self._send:
            with self._state:
                resuming = self._resuming
            if not resuming:
                try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
                    self._up.send(chunk)
                except OSError:  # the reader sees the drop; pending requests go again
                    pass
            for data, message in self._frames.feed(chunk):
                with self._state:
                    stale = message is not None and self.server.stale_answer(message)
                    if message is not None and not stale:
                        self.editor.from_editor(message, data)
                        if self.editor.exit:  # the session ends now: no reconnection after it
                            self._closing = True
                    if not resuming or stale:
                        continue
                    if message is None or "method" in message:
                        self._held.append(data)  # sent once the new server has its folders
                        continue
                try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
                    self._up.send(data)  # an answer to the new server's request
                except OSError:
                    pass

    # ---- the upstream's side -----------------------------------------------------------------
    def _upstream_reader(self, upstream: Upstream) -> Callable[[bytes], None]:
        frames = Frames()

        def take(chunk: bytes) -> None:
            for data, message in frames.feed(chunk):
                if message is not None:  # a cut frame never reaches the editor
                    self._to_editor(data, message, upstream)

        return take

    def _to_editor(self, data: bytes, message: dict[str, Any], upstream: Upstream) -> None:
        method = message.get("method")
        reply: bytes | None = None
        with self._state:
            if "id" in message and method is None:
                key = request_key(message["id"])
                if self._swallowed(key):
                    return
                probe = self._probing.get(key)
                if probe is not None:
                    probe[1].append(message.get("result"))
                    probe[0].set()
                    return
                self.editor.answered(key)
            elif isinstance(method, str):
                reply = self.server.note(message, method)
        if reply is None:
            self._write_out(data)
            return
        with self._send:
            try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
                upstream.send(reply)
            except OSError:
                pass

    # ---- a dropped upstream ------------------------------------------------------------------
    def _recover(self, generation: int) -> None:
        with self._send:
            upstream = self._replace_upstream(generation)
            if upstream is None:
                return
            generation = self._generation
            with self._state:
                self._resuming = True
                resend = list(self.editor.pending)
            ready = self._replay(upstream)
            self._start_reader(upstream, generation)
        if ready:  # the editor's answers pass meanwhile; its other frames are held
            self._await_open(upstream)
        with self._send:
            if generation != self._generation:
                return  # dropped again meanwhile: the next recovery resends and releases
            self._resend(upstream, ready, resend)
            with self._state:
                held, self._held = self._held, []
                self._resuming = False
            held.append(self._frames.unfinished())  # already cut into pieces: sent raw now
            for data in held:
                try:  # noqa: SIM105 - contextlib is ~0.3 MB of the forwarder
                    upstream.send(data)
                except OSError:
                    pass

    def _went_away(self) -> None:
        """End the dead server's progress bars; tell the editor it is reconnecting."""
        with self._state:
            tokens = list(self.server.progress.values())
            self.server.progress.clear()
            self.server.requests.clear()
            ready = self.editor.initialize_answered
        for token in tokens:
            end = {"token": token, "value": {"kind": "end", "message": "codeask reconnecting"}}
            self._write_out(frame({"jsonrpc": "2.0", "method": "$/progress", "params": end}))
        if ready:
            self._notify_editor(
                "window/showMessage", WARNING, "codeask: the daemon went away; reconnecting..."
            )

    def _notify_editor(self, method: str, kind: int, text: str) -> None:
        params = {"type": kind, "message": text}
        self._write_out(frame({"jsonrpc": "2.0", "method": method, "params": params}))

    def _replay(self, upstream: Upstream) -> bool:
        """The editor's state again (True when there was a session to restore)."""
        head: list[bytes] = []
        with self._state:
            state = self.editor
            ready = state.initialize is not None and state.initialize_answered
            if ready and state.initialize is not None:
                first = _parse(state.initialize.split(b"\r\n\r\n", 1)[1]) or {}
                first["id"] = self._replay_id()
                head.append(frame(first))
                if state.initialized is not None:
                    head.append(state.initialized)
                head += state.folder_changes
                if state.configuration is not None:
                    head.append(state.configuration)
                for log in state.documents.values():
                    head += log
        return relay.send_all(upstream, head) and ready  # dropped again: its reader recovers

    def _await_open(self, upstream: Upstream) -> None:
        """Until the new server stands where the dead one stood: every folder's index open
        (codeask/indexStatus; a request sent earlier would find no index and answer nothing)
        and, when the editor searched before, the query model loaded (a private search: the
        server loads it on its first search and answers lexically until then). Asked under
        private ids, answers swallowed; the editor's answers pass meanwhile, its other frames
        wait, for OPEN_SECONDS at most."""
        deadline = time.monotonic() + OPEN_SECONDS
        while True:
            status = self._ask(upstream, "codeask/indexStatus", {}, deadline)
            folders = status.get("folders") if isinstance(status, dict) else None
            if not isinstance(folders, list):
                return  # gone, late or unreadable: do not hold the editor
            if all(isinstance(f, dict) and f.get("state") != "loading" for f in folders):
                break
            time.sleep(0.1)
        with self._state:
            searched = self.editor.searched
        while searched:
            found = self._ask(upstream, SEARCH, {"query": WARM_QUERY, "k": 5}, deadline)
            items = found.get("results") if isinstance(found, dict) else None
            state = found.get("indexState") if isinstance(found, dict) else None
            if not isinstance(items, list) or not isinstance(state, dict):
                return
            if not state.get("embedded") or any(_dense(item) for item in items):
                return  # no vectors to wait for, or the vectors answer
            time.sleep(0.1)

    def _ask(self, upstream: Upstream, method: str, params: Any, deadline: float) -> Any:
        """One private request to the server: its result, or None (an error, no answer
        before `deadline`, or the connection gone)."""
        with self._state:
            self._probes += 1
            request_id = f"{PROBE_ID}{self._probes}"
            key = request_key(request_id)
            event = Signal()
            slot: list[Any] = []
            self._probing[key] = (event, slot)
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        try:
            with self._send:
                upstream.send(frame(message))
        except OSError:
            return None
        answered = event.wait(min(PROBE_SECONDS, max(0.0, deadline - time.monotonic())))
        with self._state:
            self._probing.pop(key, None)
            if not answered:
                self._swallow.add(key)  # a late answer is ours too
        return slot[0] if answered and slot else None

    def _resend(self, upstream: Upstream, ready: bool, keys: list[str]) -> None:
        """Every request unanswered when the server died once more (or its error), and the
        note. (Requests the editor sent since are held, not lost: they go after these.)"""
        with self._state:
            again, lost = relay.sort_out(self.editor.pending, keys)
        note = self._answer_lost(again, lost)
        if ready:
            self._notify_editor("window/logMessage", INFO, note)
        relay.send_all(upstream, again)

    def _pending_table(self) -> dict[str, Pending]:
        return self.editor.pending

    def _error(self, request: Pending) -> bytes:
        return _error_frame(request)


def _dense(item: Any) -> bool:
    """A search hit some vector tier found (not only the lexical one)."""
    retrievers = item.get("retrievers") if isinstance(item, dict) else None
    return isinstance(retrievers, list) and any(r != "lexical" for r in retrievers)


def _error_frame(request: Pending) -> bytes:
    error = {"code": REQUEST_FAILED, "message": relay.RESTARTED}
    return frame({"jsonrpc": "2.0", "id": request.id, "error": error})
