"""The one way a test runs the real `codeask` command: a child process, output captured, a
timeout so a hang fails the test instead of the run, and the daemon off unless the caller's
environment turns it on (tests/daemon passes one that does)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .env import in_process_env

#: `python -m codeask` with this interpreter: the editable install under test.
PYTHON_M: tuple[str, ...] = (sys.executable, "-m", "codeask")
#: The same with -P: the working directory is not put first on sys.path (a hostile workspace's
#: own `codeask/` cannot shadow the package).
PYTHON_SAFE_M: tuple[str, ...] = (sys.executable, "-P", "-m", "codeask")
#: The console script pip wrote beside the interpreter (what a user types).
CODEASK_SCRIPT: tuple[str, ...] = (str(Path(sys.executable).with_name("codeask")),)


def codeask(
    *args: str | bytes,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    check: bool = False,
    text: bool = True,
    launcher: Sequence[str] = PYTHON_M,
    preexec_fn: Callable[[], object] | None = None,
) -> subprocess.CompletedProcess[Any]:
    """`codeask ARGS` run to completion. `env` is the child's whole environment (default: this
    one without `CODEASK_*`, daemon off; the autouse fixture's private XDG cache comes with it).
    `check` fails the test on a non-zero exit, showing the end of stderr. Output is text
    unless `text=False` (arguments that are not UTF-8)."""
    done = subprocess.run(
        [*launcher, *args],
        cwd=cwd,
        env=dict(env) if env is not None else in_process_env(),
        capture_output=True,
        text=text,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done
