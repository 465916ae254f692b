"""Issue 29: an in-process `codeask mcp` (daemon off) serves a whole session, tools called
with good and bad arguments, without importing the MCP SDK or pydantic (~44 MB of resident
memory in every process serving agents). A fresh interpreter runs the real command and lists
the modules it held at the end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.mcp_harness import build_project, server_env

pytestmark = pytest.mark.slow

#: `python -m codeask mcp`, then the modules it holds, on stderr, after the session ended.
PROBE = (
    "import sys\n"
    "from codeask.__main__ import main\n"
    "sys.argv[0] = 'codeask'\n"
    "code = main()\n"
    "sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
    "raise SystemExit(code)\n"
)
#: The SDK, its types and pydantic: what `import mcp` loaded (581 modules, ~55 MB).
TEST_ONLY = ("mcp", "mcp_types", "pydantic", "pydantic_core")
SESSION = [
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "search_code", "arguments": {"query": "expiring cache"}},
    },
    {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "search_code", "arguments": {"query": "x", "k": 0}},
    },
    {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "index_status", "arguments": {}},
    },
]


def test_an_in_process_server_never_imports_the_sdk(tmp_path: Path) -> None:
    project = build_project(tmp_path / "shop")
    env = server_env(CODEASK_DAEMON__ENABLED="false")
    proc = subprocess.Popen(
        [sys.executable, "-c", PROBE, "mcp"],
        cwd=project,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    lines = b"".join(json.dumps(message).encode() + b"\n" for message in SESSION)
    stdout, stderr = proc.communicate(lines, timeout=180)
    assert proc.returncode == 0, stderr.decode()[-2000:]
    answers = {a["id"]: a for a in map(json.loads, stdout.decode().splitlines())}
    assert sorted(answers) == [1, 2, 3, 4, 5]  # every request answered before the exit
    assert len(answers[2]["result"]["tools"]) == 5
    assert answers[3]["result"]["isError"] is False
    assert answers[4]["result"]["isError"] is True
    (line,) = [x for x in stderr.decode().splitlines() if x.startswith("MODULES ")]
    modules = line.split()[1:]
    loaded = [m for m in modules if m.split(".")[0] in TEST_ONLY]
    assert loaded == [], f"{len(loaded)} modules of the SDK and pydantic: {loaded[:20]}"
    assert "codeask.mcp.tools" in modules  # the probe saw the server that answered
