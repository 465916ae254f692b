"""The protocol's two messages as typed structs (msgspec validates what the daemon reads).

The client builds and reads the same objects as plain JSON (`protocol`), to stay light.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Status = Literal["ok", "user_error", "refused", "failed"]


class Request(msgspec.Struct, kw_only=True):
    protocol: int
    version: str
    command: str
    """`search`, `status` (the CLI commands), `ping` (the daemon's state) or `stop`."""
    args: dict[str, Any] = {}
    """The command's parsed arguments (argparse's namespace as a dict)."""
    cwd: str = ""
    environment: dict[str, str] = {}
    """`protocol.environment()` of the client."""


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
