"""The environment of a codeask child process that must run in-process.

The per-user daemon is on by default (`daemon.enabled`): a child given the caller's environment
minus its `CODEASK_*` settings would forward to (and start) a daemon that outlives it, under the
user's runtime directory. Tests and benchmarks that measure or drive one process say so here;
the daemon's own tests and benchmarks turn it on explicitly, in a private runtime directory.
"""

from __future__ import annotations

import os
from pathlib import Path

DAEMON_OFF = {"CODEASK_DAEMON__ENABLED": "false"}


def in_process_env(**extra: str) -> dict[str, str]:
    """This process's environment without codeask's settings, the daemon off, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEASK_")}
    env.update(DAEMON_OFF)
    env.update(extra)
    return env


def private_env(base: Path, **extra: str) -> dict[str, str]:
    """`in_process_env` with the child's own XDG config and cache under `base` (its settings
    file and embedding cache are the test's alone), offline, unbuffered, plus `extra`."""
    return in_process_env(
        XDG_CONFIG_HOME=str(base / "config"),
        XDG_CACHE_HOME=str(base / "cache"),
        HF_HUB_OFFLINE="1",
        PYTHONUNBUFFERED="1",
        **extra,
    )
