"""`codeask mcp --print-config CLIENT`: the exact line that registers this codeask with an agent.

A bare `codeask` in an agent's config is looked up on the agent's PATH, where the quick start's
virtual environment is not: the agent then says only "Failed to connect". So every line names
this installation's own executable by its full path (the `codeask` script beside the running
Python, else that Python with `-m codeask`), and the folders given, made absolute.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

CLIENTS = ("claude", "codex", "cursor", "gemini", "vscode")
#: Gemini CLI's list check waits 5 s by default; codeask's start took 5.4 s under load.
GEMINI_TIMEOUT_MS = 30000


def server_command(paths: list[str]) -> list[str]:
    """The command that starts this installation's `codeask mcp` from any folder and PATH.

    `sys.executable` is not resolved: a virtual environment's python is a symlink out of it,
    and its `codeask` script sits beside the link."""
    python = Path(sys.executable).absolute()
    script = python.parent / "codeask"
    folders = [str(Path(p).expanduser().resolve()) for p in paths]
    if script.is_file():
        return [str(script), "mcp", *folders]
    return [str(python), "-m", "codeask", "mcp", *folders]


def config_for(client: str, paths: list[str]) -> str:
    """What to run (or paste) for `client`; the command inside is `server_command(paths)`."""
    command, *args = server_command(paths)
    line = shlex.join([command, *args])
    if client == "claude":
        return f"claude mcp add codeask -- {line}"
    if client == "codex":
        return f"codex mcp add codeask -- {line}"
    if client == "gemini":
        return f"gemini mcp add --timeout {GEMINI_TIMEOUT_MS} codeask {line}"
    if not paths:  # these editors start servers outside the project: name it
        args.append("${workspaceFolder}")
    server = {"command": command, "args": args}
    if client == "cursor":  # .cursor/mcp.json (project) or ~/.cursor/mcp.json
        return json.dumps({"mcpServers": {"codeask": server}}, indent=2)
    if client == "vscode":
        return shlex.join(["code", "--add-mcp", json.dumps({"name": "codeask"} | server)])
    raise ValueError(f"unknown client {client!r} (one of {', '.join(CLIENTS)})")


#: What the user must know beyond the line itself (printed to stderr, stdout stays pasteable).
NOTES = {
    "cursor": "paste into .cursor/mcp.json in your project (or ~/.cursor/mcp.json)",
    "gemini": (
        "Gemini CLI keeps a server disabled until you trust the folder "
        "(answer its folder-trust prompt when it starts there); `gemini mcp list` then shows "
        "it connected"
    ),
}


def print_config(client: str, paths: list[str]) -> int:
    """Print the line on stdout and any note on stderr."""
    sys.stdout.write(config_for(client, paths) + "\n")
    note = NOTES.get(client)
    if note:
        sys.stderr.write(f"codeask: {note}\n")
    return 0
