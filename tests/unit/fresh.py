"""Fresh interpreters for import tests: what a step imported is what its `sys.modules` holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support import in_process_env


def plain_env() -> dict[str, str]:
    """This process's environment without codeask's own settings."""
    return in_process_env()


def write_demo_project(project: Path) -> Path:
    """Two small Python files, a cache class and a notes parser: the import tests' project."""
    project.mkdir()
    (project / "cache.py").write_text(
        "class LRUCache:\n"
        "    '''Least recently used cache: evicts the oldest entry when full.'''\n\n"
        "    def get(self, key):\n        return self.items.pop(key)\n"
    )
    (project / "notes.py").write_text("def parse_notes(text):\n    return text.split()\n")
    return project


def run_python(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in a fresh interpreter; it must succeed."""
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=plain_env() if env is None else env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def last_json(args: list[str], env: dict[str, str] | None = None) -> Any:
    """The JSON document a fresh `python ARGS` printed last."""
    return json.loads(run_python(args, env).stdout.strip().splitlines()[-1])
