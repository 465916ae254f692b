"""What the tests share: one way to run codeask, the child environment, and the harnesses
(git repositories, the language server, the MCP server, the wire-level LSP client) that more
than one test folder drives.

Tests import it as `support` (pyproject's pytest `pythonpath` puts tests/ on the path); the
benchmarks import it as `tests.support` from the repository root. Modules here import each
other relatively so both names work.
"""

from __future__ import annotations

from .cli import CODEASK_SCRIPT, PYTHON_M, PYTHON_SAFE_M, codeask
from .env import DAEMON_OFF, in_process_env, private_env

__all__ = [
    "CODEASK_SCRIPT",
    "DAEMON_OFF",
    "PYTHON_M",
    "PYTHON_SAFE_M",
    "codeask",
    "in_process_env",
    "private_env",
]
