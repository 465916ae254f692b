"""The process an editor or agent starts (`python -m codeask serve`, `python -m codeask mcp`)
with the daemon on: a fresh interpreter forwards a whole session to a real daemon and then
lists what it imported. Forwarding needs the standard library's sockets, threads and JSON, not
the CLI (argparse, logging, pathlib, typing, ctypes, codeask.cli, the engine): each of those
was ~0.5-1.5 MB of every forwarder's resident memory (issue 29's budget counts five of them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import pytest
from daemon_helpers import codeask, daemon_pid

from codeask.mcp.server import build_server

#: `python -m codeask ARGS` (or the `codeask` console script: `codeask.cli`'s main), then the
#: modules it holds, on stderr, after the session ended.
PROBE = (
    "import sys\n"
    "from {entry} import main\n"
    "sys.argv[0] = 'codeask'\n"
    "code = main()\n"
    "sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
    "raise SystemExit(code)\n"
)
#: What a forwarder must not import (each was imported before by the CLI's path).
CUT = ("argparse", "logging", "pathlib", "typing", "ctypes", "tomllib", "gettext")
CUT_PREFIXES = ("codeask.cli", "codeask.core", "codeask.config", "codeask.lsp", "codeask.mcp")
#: Nor what the standard library's wrappers pull in: the forwarder relays bytes with `_socket`,
#: `_thread` and `_json` (protocol.py), frames LSP headers by hand (no `re`), and starts a
#: daemon without `subprocess` (which imports threading, selectors, contextlib, signal...).
#: Each was 0.1-0.5 MB of every forwarder's resident memory, ~1.5 MB in all (issue 29). Nor
#: `struct` or `math`: their compiled modules (and libm's pages) are ~0.3 MB of it; int's
#: to_bytes and float("inf") do their work here.
WRAPPERS = (
    "struct",
    "_struct",
    "math",
    "socket",
    "selectors",
    "enum",
    "json",
    "re",
    "contextlib",
    "threading",
    "functools",
    "collections",
    "subprocess",
)


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(out: IO[bytes]) -> dict[str, Any]:
    length = 0
    while (line := out.readline()) not in (b"\r\n", b""):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return dict(json.loads(out.read(length)))


def start(
    args: list[str], cwd: Path, env: dict[str, str], entry: str = "codeask.__main__"
) -> subprocess.Popen[bytes]:
    """`python -m codeask ARGS` in a fresh interpreter (the probe around it lists modules)."""
    return subprocess.Popen(
        [sys.executable, "-c", PROBE.format(entry=entry), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def finish(proc: subprocess.Popen[bytes]) -> list[str]:
    """The modules the forwarder held at its end; it must have exited 0, forwarded."""
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.close()
    code = proc.wait(60)
    stderr = proc.stderr.read().decode()
    assert code == 0, stderr
    assert "daemon unavailable" not in stderr, stderr  # forwarded, not served in-process
    (line,) = [line for line in stderr.splitlines() if line.startswith("MODULES ")]
    return line.split()[1:]


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m in CUT or m in WRAPPERS or m.startswith(CUT_PREFIXES)]


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "app.py").write_text("def greet(name):\n    return 'hello ' + name\n")
    return root


def test_a_forwarded_editor_imports_no_cli(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    """A whole LSP session (initialize, shutdown, exit) forwarded: answered by the daemon's
    session, exit 0, and none of the CLI's modules in the forwarder."""
    root = project(tmp_path)
    proc = start(["-v", "serve", "--stdio"], root, daemon_env)
    assert proc.stdin is not None and proc.stdout is not None
    folder = {"uri": root.as_uri(), "name": "proj"}
    params = {"capabilities": {}, "workspaceFolders": [folder]}
    proc.stdin.write(frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
    proc.stdin.flush()
    assert "capabilities" in read_frame(proc.stdout)["result"]
    assert daemon_pid(daemon_env) is not None, "no daemon answered"
    proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    proc.stdin.flush()
    while (answer := read_frame(proc.stdout)).get("id") != 2:  # notifications first
        assert "id" not in answer or "method" in answer, answer
    proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert heavy(finish(proc)) == []


@pytest.mark.parametrize("entry", ["codeask.__main__", "codeask.cli"])
def test_a_forwarded_agent_imports_no_cli(
    tmp_path: Path, daemon_env: dict[str, str], entry: str
) -> None:
    """An MCP session (initialize, tools/list) forwarded, then stdin closed: the server's tools
    listed by the daemon's session, exit 0, none of the CLI's modules in the forwarder. The
    console script's entry (`codeask.cli`, which imports the CLI first) forwards the same."""
    root = project(tmp_path)
    proc = start(["mcp", "--", str(root)], root, daemon_env, entry)
    assert proc.stdin is not None and proc.stdout is not None
    client = {"name": "probe", "version": "1"}
    params = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": client}
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        if "id" in message:
            answer = json.loads(proc.stdout.readline())
            assert answer["id"] == message["id"] and "result" in answer, answer
    listed = [tool["name"] for tool in build_server([]).listing()]
    assert [tool["name"] for tool in answer["result"]["tools"]] == listed, answer
    assert daemon_pid(daemon_env) is not None, "no daemon answered"
    modules = finish(proc)
    assert heavy(modules) == [] if entry == "codeask.__main__" else "codeask.cli" in modules


@pytest.mark.parametrize("entry", ["codeask.__main__", "codeask.cli"])
def test_a_missing_folder_is_the_same_user_error_either_way(
    tmp_path: Path, daemon_env: dict[str, str], entry: str
) -> None:
    """The daemon's refusal of a folder that does not exist: one line and exit 1, as the
    in-process command says it, through the light path and through the CLI's."""
    root = project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(entry=entry), "mcp", "nowhere"],
        cwd=root,
        env=daemon_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    said = [line for line in done.stderr.splitlines() if not line.startswith("MODULES ")]
    assert said == ["codeask: not a folder: nowhere"], done.stderr
    assert daemon_pid(daemon_env) is not None, "the daemon was not asked"
    off = dict(daemon_env, CODEASK_DAEMON__ENABLED="false")
    alone = codeask("mcp", "nowhere", cwd=root, env=off, timeout=120)
    assert (alone.returncode, alone.stderr) == (1, "codeask: not a folder: nowhere\n")


def test_the_light_path_reads_only_what_argparse_reads_the_same() -> None:
    """Plain serve/mcp command lines are read without argparse, exactly as cli/parser.py reads
    them; anything else is left to the full CLI (None)."""
    from codeask.cli.parser import build_parser
    from codeask.daemon.forwarding import _plain

    lines = [
        ["serve"],
        ["-v", "serve", "--stdio"],
        ["-vv", "--verbose", "serve", "--stdio", "--stdio"],
        ["mcp"],
        ["mcp", "a", "b"],
        ["-v", "mcp", "--allow-broad-root", "a"],
        ["mcp", "--allow-broad-root", "--", "-a", "--", "b"],
        ["mcp", "--", "a"],
    ]
    for argv in lines:
        plain = _plain(argv)
        assert plain is not None, argv
        at, verbose, broad, paths = plain
        args = build_parser().parse_args(argv)
        assert (argv[at], verbose) == (args.command, args.verbose), argv
        if args.command == "mcp":
            assert (broad, paths) == (args.allow_broad_root, args.paths), argv
    for argv in (
        [],
        ["search", "x"],
        ["serve", "--tcp", "1"],
        ["serve", "--no-daemon"],
        ["serve", "-v"],
        ["serve", "--help"],
        ["--verb", "serve"],
        ["-vx", "serve"],
        ["mcp", "a", "--allow-broad-root"],
        ["mcp", "--allow"],
        ["mcp", "--no-daemon"],
        ["mcp", "a", "--", "b"],
        ["-h"],
    ):
        assert _plain(argv) is None, argv
