"""The wire: one request and one reply per connection, each a 4-byte big-endian length and a
JSON object. Both carry the protocol number and the codeask version; a daemon of another
version refuses (the client then answers in-process). The daemon validates requests with
msgspec (`messages`); this module is standard library only, because the client imports it
on every forwarded command and must stay light (msgspec's import alone is ~10 ms).
"""

from __future__ import annotations

import json
import os
import socket
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported at run time: the forwarding path stays small
    from collections.abc import Mapping
    from typing import Any

PROTOCOL = 1
#: Replies carry a command's whole output; 64 MB is far above any search or status.
MAX_FRAME = 64 << 20
_HEADER = struct.Struct(">I")
#: Environment variables that change what a command answers (settings, caches, git), besides
#: every `CODEASK_*` and `GIT_*` one: a daemon started under another environment refuses.
_ENV_NAMES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "HF_HUB_OFFLINE")
#: The daemon's own settings do not change any answer.
_ENV_IGNORED = "CODEASK_DAEMON__"


class ProtocolError(Exception):
    """The other side sent something that is not a frame of this protocol (or nothing)."""


def environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The part of the environment that decides answers (see `_ENV_NAMES`)."""
    env = os.environ if environ is None else environ
    return {
        name: value
        for name, value in sorted(env.items())
        if (name.startswith("CODEASK_") and not name.startswith(_ENV_IGNORED))
        or name in _ENV_NAMES
        or name.startswith("GIT_")
    }


def send(sock: socket.socket, message: Mapping[str, Any]) -> None:
    """Write one frame (lone surrogates in text travel as JSON escapes, unchanged)."""
    data = json.dumps(message, separators=(",", ":")).encode("ascii")
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"message of {len(data)} bytes is over the {MAX_FRAME}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


def receive(sock: socket.socket) -> dict[str, Any]:
    """Read one frame: a JSON object (ProtocolError on EOF, a bad length or a bad document)."""
    (size,) = _HEADER.unpack(_read(sock, _HEADER.size))
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes is over the {MAX_FRAME}-byte limit")
    try:
        message = json.loads(_read(sock, size))
    except ValueError as exc:
        raise ProtocolError(f"bad message: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("bad message: not an object")
    return message


def _read(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ProtocolError("the connection closed mid-message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket (Linux SO_PEERCRED; None where
    the platform has no such option: there the 0700 directory is the only guard)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)
