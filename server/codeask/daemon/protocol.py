"""The wire: one request and one reply per connection, each a 4-byte big-endian length and a
JSON object. Both carry the protocol number and the codeask version; a daemon of another
version refuses (the client then answers in-process). The daemon validates requests with
msgspec (`messages`); this module is standard library only, because the client imports it
on every forwarded command and must stay light (msgspec's import alone is ~10 ms).

JSON is written and read with the json module's own C parts (`_json`), not the module: `json`
imports `re` (and with it enum, functools, collections: ~3-5 ms of every forwarded command).
The bytes are json.dumps' (compact, ASCII; or indented, as `codeask search --json` prints
them); anything the light writer does not know (infinite floats, other types) goes through json
itself (tests/daemon/test_protocol_json.py holds them equal). Kept on purpose: json added 10 ms
of CPU to a forwarded search (docs/architecture.md, "Copies kept on purpose").
"""

from __future__ import annotations

import _socket  # socket.py's base: `socket` imports enum and selectors
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported at run time: the forwarding path stays small
    from _socket import socket  # socket.socket is one too
    from collections.abc import Callable, Mapping
    from typing import Any

try:
    from _json import encode_basestring_ascii as _quote
    from _json import make_scanner as _make_scanner
except ImportError:  # a Python without the C accelerator: the json module does it all
    _quote = _make_scanner = None  # type: ignore[assignment, misc]

PROTOCOL = 1
#: Replies carry a command's whole output; 64 MB is far above any search or status.
MAX_FRAME = 64 << 20
#: The length before each frame: 4 bytes, big-endian (int's to_bytes and from_bytes: `struct`
#: and `math` are compiled modules, ~0.3 MB of a forwarder's resident memory with libm).
HEADER_BYTES = 4
#: Environment variables that change what a command answers (settings, caches, git), besides
#: every `CODEASK_*` and `GIT_*` one: a daemon started under another environment refuses.
_ENV_NAMES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "HF_HUB_OFFLINE")
#: The daemon's own settings do not change any answer.
_ENV_IGNORED = "CODEASK_DAEMON__"
#: XDG base directories' defaults under HOME: set to these, they answer as unset.
_XDG_DEFAULTS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_DATA_HOME": ".local/share",
}


class ProtocolError(Exception):
    """The other side sent something that is not a frame of this protocol (or nothing)."""


def environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The part of the environment that decides answers (see `_ENV_NAMES`). An XDG base
    directory set to its default counts as unset: an MCP client's minimal environment drops
    it, and the agent must still share the daemon of the shell that set it."""
    env = os.environ if environ is None else environ
    home = env.get("HOME", "")
    return {
        name: value
        for name, value in sorted(env.items())
        if (
            (name.startswith("CODEASK_") and not name.startswith(_ENV_IGNORED))
            or name in _ENV_NAMES
            or name.startswith("GIT_")
        )
        and not _xdg_default(name, value, home)
    }


def _xdg_default(name: str, value: str, home: str) -> bool:
    """Whether `name` is an XDG base directory set to its default under `home`."""
    default = _XDG_DEFAULTS.get(name)
    if not default or not os.path.isabs(home):
        return False
    return os.path.normpath(value) == os.path.join(os.path.normpath(home), default)


def send(sock: socket, message: Mapping[str, Any]) -> None:
    """Write one frame (lone surrogates in text travel as JSON escapes, unchanged)."""
    data = encode(message)
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"message of {len(data)} bytes is over the {MAX_FRAME}-byte limit")
    sock.sendall(len(data).to_bytes(HEADER_BYTES, "big") + data)


def receive(sock: socket) -> dict[str, Any]:
    """Read one frame: a JSON object (ProtocolError on EOF, a bad length or a bad document)."""
    return receive_body(sock, receive_size(sock, MAX_FRAME))


class TooLarge(ProtocolError):
    """A frame's length is over the reader's limit (its body is left unread)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame of {size} bytes is over the {limit}-byte limit")
        self.size = size
        self.limit = limit


def receive_size(sock: socket, limit: int) -> int:
    """Read a frame's length (TooLarge past `limit`): the daemon checks it, and reserves
    memory for it, before reading the body."""
    size = int.from_bytes(_read(sock, HEADER_BYTES), "big")
    if size > limit:
        raise TooLarge(size, limit)
    return size


def receive_body(sock: socket, size: int) -> dict[str, Any]:
    """Read a frame's body of `size` bytes: a JSON object."""
    try:
        message = decode(_read(sock, size))
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"bad message: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("bad message: not an object")
    return message


def encode(message: Any, separators: tuple[str, str] = (",", ":"), indent: int = 0) -> bytes:
    """`json.dumps(message, separators=separators)` as ASCII bytes, or with `indent` (> 0)
    `json.dumps(message, indent=indent)` (`codeask search --json`, rendered here and from the
    daemon's answer alike): the forwarders' replies and a forwarded search's output use it
    too, so `json` itself stays out of their processes."""
    if _quote is not None:
        parts: list[str] = []
        try:
            if indent > 0:
                _write_indented(message, parts.append, " " * indent, "\n")
            else:
                _write(message, parts.append, *separators)
        except _Unusual:
            pass
        else:
            return "".join(parts).encode("ascii")
    import json

    if indent > 0:
        return json.dumps(message, indent=indent).encode("ascii")
    return json.dumps(message, separators=separators).encode("ascii")


def id_key(value: Any) -> str:
    """`json.dumps(value, sort_keys=True)`: a request id as a dict key (1, "1" and 1.0 stay
    apart). Ids are strings and numbers: anything else (a dict's key order) goes to json."""
    if isinstance(value, str | int) or value is None:
        return encode(value).decode("ascii")
    import json

    return json.dumps(value, sort_keys=True)


class _Unusual(Exception):
    """A value the light writer leaves to json (a float, a non-str key, another type)."""


def _scalar(value: Any) -> str:
    """json's text of a str, None, bool, int or finite float (anything else: `_Unusual`)."""
    assert _quote is not None
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float) and value - value == 0.0:  # finite: json's float.__repr__
        return float.__repr__(value)
    raise _Unusual


def _write(value: Any, out: Callable[[str], object], comma: str = ",", colon: str = ":") -> None:
    """json.dumps' output (with these separators) of dicts, lists, str, int, float, bool and
    None."""
    if isinstance(value, dict):
        out("{")
        for n, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise _Unusual
            out(comma + _quote(key) + colon if n else _quote(key) + colon)
            _write(item, out, comma, colon)
        out("}")
    elif isinstance(value, list | tuple):
        out("[")
        for n, item in enumerate(value):
            if n:
                out(comma)
            _write(item, out, comma, colon)
        out("]")
    else:
        out(_scalar(value))


def _write_indented(value: Any, out: Callable[[str], object], step: str, at: str) -> None:
    """json.dumps(value, indent=len(step))'s output; `at` is the newline and the current
    indentation."""
    inner = at + step
    if isinstance(value, dict) and value:
        out("{")
        for n, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise _Unusual
            out(("," if n else "") + inner + _quote(key) + ": ")
            _write_indented(item, out, step, inner)
        out(at + "}")
    elif isinstance(value, list | tuple) and value:
        out("[")
        for n, item in enumerate(value):
            out(("," if n else "") + inner)
            _write_indented(item, out, step, inner)
        out(at + "]")
    elif isinstance(value, dict | list | tuple):
        out("{}" if isinstance(value, dict) else "[]")
    else:
        out(_scalar(value))


class _Options:
    """What json's C scanner reads from its decoder: json.loads' defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = {
        "-Infinity": float("-inf"),
        "Infinity": float("inf"),
        "NaN": float("nan"),
    }.__getitem__


_scan = None if _make_scanner is None else _make_scanner(_Options())  # type: ignore[arg-type]


def decode(data: bytes, errors: str = "strict") -> Any:
    """`json.loads(data)` of a UTF-8 document (ValueError when it is not one). The forwarders
    pass "surrogatepass", as json.loads does with bytes (a lone surrogate's bytes are read)."""
    if _scan is None:
        import json

        return json.loads(data.decode("utf-8", errors))
    text = data.decode("utf-8", errors).strip(" \t\n\r")
    try:
        value, end = _scan(text, 0)
    except StopIteration as exc:
        raise ValueError(f"no JSON value at {exc.value}") from None
    except SystemError:  # the C scanner raises a syntax error only where json.decoder is
        import json  # imported (it looks it up in sys.modules, else returns NULL): json says

        return json.loads(text)  # what is wrong (a ValueError), as for any broken body
    if end != len(text):
        raise ValueError(f"extra data at {end}")
    return value


def _read(sock: socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ProtocolError("the connection closed mid-message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def peer_uid(sock: socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (Linux SO_PEERCRED; None where
    the platform has no such option: there the 0700 directory is the only guard)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    raw = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: three C ints
    return int.from_bytes(raw[4:8], sys.byteorder, signed=True)
