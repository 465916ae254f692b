"""`codeask mcp`: the MCP server over stdio (protocol.py's session over wire.py's lines).

Folders are opened and indexed in the background from the start (folders.py); the tools
(tools.py) answer from what is on disk at any moment. The server ends when the agent closes
stdin (the calls in flight are answered first); the folders then save and release their
indexes.
"""

from __future__ import annotations

import logging

from codeask import __version__
from codeask.mcp.folders import FolderDriver
from codeask.mcp.protocol import ServerInfo, Session
from codeask.mcp.tools import Tools
from codeask.mcp.wire import Input, Output, RawIn, RawOut

log = logging.getLogger("codeask.mcp")

INSTRUCTIONS = (
    "codeask searches this workspace's code and git history locally (hybrid keyword + "
    "semantic ranking over a persistent index). Start with search_code for any question about "
    "where or how something is done; find_related for code connected to a line you are "
    "looking at; search_history for why and when code changed; get_context for a cited, "
    "budgeted context block about a question; index_status if results look incomplete. "
    "Results are ranked and trimmed: read the files they point to for more."
)


def build_server(drivers: list[FolderDriver]) -> ServerInfo:
    """An MCP server with the tools over these folders."""
    return ServerInfo(
        name="codeask",
        title="codeask: local code search",
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=Tools(drivers).definitions(),
    )


def run(drivers: list[FolderDriver], wire: tuple[RawIn, RawOut]) -> int:
    """Serve the started `drivers` over `wire` until the agent closes stdin; returns the exit
    code. The folders are saved and released on the way out."""
    server = build_server(drivers)
    for driver in drivers:
        driver.serving()
    try:
        serve_wire(server, *wire)
    finally:
        for driver in drivers:
            driver.stop()
    return 0


def serve_wire(server: ServerInfo, wire_in: RawIn, wire_out: RawOut) -> None:
    """One MCP session over these bytes (stdin/stdout, or a daemon's connection), until the
    input ends."""
    output = Output(wire_out)
    session = Session(server, output.write)
    try:
        for line in Input(wire_in, output):
            session.receive(line)
    finally:
        session.close()
