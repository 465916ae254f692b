"""A workspace may hold a package named `codeask`: no child codeask starts may import it.

`python -m` puts the working directory first on sys.path, and editors start codeask in the
workspace. The forwarder's in-process answer after a daemon drop (`codeask_argv`) and the daemon
start both run `python -m`; the chunking workers are tested in tests/unit/test_chunk_pool.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from codeask import __version__
from codeask.daemon.forwarding import codeask_argv
from support import in_process_env

TROJAN = (
    "from pathlib import Path\n"
    "Path(__file__).resolve().parents[1].joinpath('TROJAN_RAN').write_text('ran')\n"
    "print('trojan')\n"
)


def trojan_workspace(root: Path) -> Path:
    (root / "codeask").mkdir(parents=True)
    for name in ("__init__.py", "__main__.py"):
        (root / "codeask" / name).write_text(TROJAN)
    return root


def run_in(workspace: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=workspace, capture_output=True, text=True, timeout=120, env=in_process_env()
    )


def test_the_attack_is_real_without_the_flag(tmp_path: Path) -> None:
    """The control: a plain `python -m codeask` in that workspace runs the workspace's code."""
    workspace = trojan_workspace(tmp_path / "ws")
    run_in(workspace, [sys.executable, "-m", "codeask", "--version"])
    assert (workspace / "TROJAN_RAN").exists()


def test_the_forwarders_in_process_command_runs_codeask(tmp_path: Path) -> None:
    workspace = trojan_workspace(tmp_path / "ws")
    done = run_in(workspace, codeask_argv("--version"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"codeask {__version__}"
    assert not (workspace / "TROJAN_RAN").exists()
