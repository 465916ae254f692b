"""The wire: one request and one reply per connection, each a 4-byte big-endian length and a
msgspec JSON document. Both carry the protocol number and the codeask version; a daemon of
another version refuses (the client then answers in-process).

Only the standard library and msgspec: the client imports this on every forwarded command.
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

import msgspec

PROTOCOL = 1
#: Replies carry a command's whole output; 64 MB is far above any search or status.
MAX_FRAME = 64 << 20
_HEADER = struct.Struct(">I")
#: Environment variables that change what a command answers (settings, caches, git), besides
#: every `CODEASK_*` one: a daemon started under another environment refuses the request.
_ENV_NAMES = ("HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "HF_HUB_OFFLINE")
#: The daemon's own settings do not change any answer.
_ENV_IGNORED = "CODEASK_DAEMON__"

Status = Literal["ok", "user_error", "refused", "failed"]


class Request(msgspec.Struct, kw_only=True):
    protocol: int
    version: str
    command: str
    """`search`, `status` (the CLI commands), `ping` (the daemon's state) or `stop`."""
    args: dict[str, Any] = {}
    """The command's parsed arguments (argparse's namespace as a dict)."""
    cwd: str = ""
    environment: str = ""
    """`environment_key()` of the client."""


class Reply(msgspec.Struct, kw_only=True):
    protocol: int
    version: str
    status: Status
    stdout: str = ""
    stderr: str = ""
    code: int = 0
    message: str = ""
    """Why a request was refused or failed, or the user error's line."""
    info: dict[str, Any] = {}
    """`ping`: pid, uptime, requests served, folders held."""


class ProtocolError(Exception):
    """The other side sent something that is not a frame of this protocol (or nothing)."""


def environment_key(environ: Mapping[str, str] | None = None) -> str:
    """A digest of the environment that decides answers (see `_ENV_NAMES`)."""
    env = os.environ if environ is None else environ
    picked = sorted(
        (name, value)
        for name, value in env.items()
        if (name.startswith("CODEASK_") and not name.startswith(_ENV_IGNORED))
        or name in _ENV_NAMES
        or name.startswith("GIT_")
    )
    return hashlib.sha256(msgspec.json.encode(picked)).hexdigest()[:16]


def send(sock: socket.socket, message: Request | Reply) -> None:
    """Write one frame."""
    data = msgspec.json.encode(message)
    if len(data) > MAX_FRAME:
        raise ProtocolError(f"message of {len(data)} bytes is over the {MAX_FRAME}-byte limit")
    sock.sendall(_HEADER.pack(len(data)) + data)


T = TypeVar("T", Request, Reply)


def receive(sock: socket.socket, kind: type[T]) -> T:
    """Read one frame of type `kind` (ProtocolError on EOF, a bad length or a bad document)."""
    (size,) = _HEADER.unpack(_read(sock, _HEADER.size))
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes is over the {MAX_FRAME}-byte limit")
    try:
        return msgspec.json.decode(_read(sock, size), type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ProtocolError(f"bad message: {exc}") from exc


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
    the platform has no such option)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)
