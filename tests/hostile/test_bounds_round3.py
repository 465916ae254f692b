"""Round 3 of trust (items 2, 4, 11): what a cloned repository's `.codeask.toml` could still
do to the machine. Each attack runs the real `codeask` CLI in a subprocess on a real git
repository made here, with a private XDG config and cache.

- item 2: `[embed] threads = 100000` stalled `index --full` (load 131 on 2 cores): thread and
  process counts are lowered to the CPU cores, with a warning naming the file;
- item 4: 600 nested arrays (1.2 KB) broke index, search and status with a bare
  RecursionError: the file is ignored with the usual "not valid TOML" warning naming it;
- item 11: 1-line chunks cut a 0.9 MB file into 100k chunks: chunk and window sizes have a
  floor of 20 lines, and the overlap may only be lowered.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from test_bad_names import _git
from test_trust_round2 import codeask, env_for

from codeask.config import MAX_SETTINGS_DEPTH, SIZE_FLOORS, cpu_cores, load_settings
from support import PYTHON_SAFE_M

pytestmark = pytest.mark.slow

SOURCE = '''"""Billing."""


def compute_invoice_total(lines):
    """Sum the invoice lines, with tax."""
    return sum(line.amount for line in lines) * 1.2
'''


def repo(base: Path, project_file: str, files: dict[str, str] | None = None) -> Path:
    """A git repository with one commit: a source file, `files`, and the project file."""
    root = base / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    for name, text in {"billing.py": SOURCE, **(files or {})}.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / ".codeask.toml").write_text(project_file, encoding="utf-8")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "import")
    return root


def run(*args: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """The real CLI: (exit code, stdout, stderr)."""
    done = codeask(*args, cwd=cwd, env=env, timeout=240)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


# ---- item 2: thread and process counts ----------------------------------------------------
def threads_of(pid: int) -> int:
    """The process's thread count now (0 once it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Threads:"))


def test_a_project_file_cannot_ask_for_100000_threads(tmp_path: Path) -> None:
    """`index --full` (both tiers, the ONNX model included) finishes; the process never runs
    more than a few dozen threads; the warning names the file and the core count."""
    root = repo(tmp_path, "[embed]\nthreads = 100000\n[index]\nchunk_workers = 3\n")
    started = time.monotonic()
    command = [*PYTHON_SAFE_M, "index", "--full", "."]
    env = env_for(tmp_path)
    proc = subprocess.Popen(
        command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    most = 0
    while proc.poll() is None and time.monotonic() - started < 240:
        most = max(most, threads_of(proc.pid))
        time.sleep(0.05)
    _, stderr = proc.communicate(timeout=30)
    code, err = proc.returncode, stderr.decode()
    took = time.monotonic() - started
    print(f"\nindex --full with threads = 100000: {took:.1f} s, at most {most} threads seen")
    assert code == 0, err
    cores = cpu_cores()
    toml = root / ".codeask.toml"
    assert f"{toml}: embed.threads = 100000 is more than the {cores} CPU cores" in err, err
    if cores < 3:
        assert f"{toml}: index.chunk_workers = 3 is more than the {cores} CPU cores" in err
    assert most < 100, most
    found = json.loads(run("status", "--json", cwd=root, env=env_for(tmp_path))[1])[0]
    assert found["embedded"] == found["chunks"] > 0, "the model tier ran to the end"


def test_trust_and_the_environment_do_not_lift_the_core_cap(tmp_path: Path) -> None:
    root = repo(tmp_path, "[embed]\nthreads = 3000\n")
    cores = cpu_cores()
    trusted = env_for(tmp_path, CODEASK_TRUST_WORKSPACE="1")
    settings, warnings = load_settings(root, environ=trusted)
    assert settings.embed.threads == cores
    assert any(str(root / ".codeask.toml") in w and "embed.threads" in w for w in warnings)
    settings, warnings = load_settings(None, environ=env_for(tmp_path, CODEASK_EMBED__THREADS="64"))
    assert settings.embed.threads == min(64, cores)
    settings, warnings = load_settings(None, environ=env_for(tmp_path, CODEASK_EMBED__THREADS="-1"))
    assert settings.embed.threads == 0 and any("embed.threads" in w for w in warnings)


# ---- item 4: deeply nested TOML ---------------------------------------------------------------
NESTED = "a = " + "[" * 600 + "]" * 600 + "\n"  # 1.2 KB
DOTTED = "[" + ".".join(["a"] * 900) + "]\nx = 1\n"  # parses, then broke every reader


@pytest.mark.parametrize("daemon", [False, True], ids=["in-process", "daemon"])
def test_nested_settings_files_are_ignored_with_a_warning(tmp_path: Path, daemon: bool) -> None:
    assert len(NESTED) < 1300
    root = repo(tmp_path, NESTED)
    user_config = tmp_path / "config" / "codeask" / "config.toml"
    user_config.parent.mkdir(parents=True)
    user_config.write_text(DOTTED, encoding="utf-8")
    env = env_for(tmp_path)
    if daemon:
        runtime = tmp_path / "run"
        runtime.mkdir(mode=0o700)
        env.update(XDG_RUNTIME_DIR=str(runtime), CODEASK_DAEMON__ENABLED="true")
    reason = f"ignored, not valid TOML (nested more than {MAX_SETTINGS_DEPTH} levels deep)"
    try:
        commands = [("index", "--lexical-only", "."), ("search", "invoice total"), ("status",)]
        for args in commands:
            code, out, err = run(*args, cwd=root, env=env)
            assert code == 0, (args, err)
            assert f"{root / '.codeask.toml'}: {reason}" in err, (args, err)
            assert f"{user_config}: {reason}" in err, (args, err)
            assert "RecursionError" not in err and "Traceback" not in err
            if args[0] == "search":
                assert "billing.py" in out
    finally:
        if daemon:
            run("daemon", "--stop", cwd=root, env=env)


def test_a_nested_index_manifest_is_a_damaged_index(tmp_path: Path) -> None:
    """A repository may commit its `.codeask/` folder: a manifest nested 5,000 deep made
    search, status and even index die of RecursionError; now it is a damaged index (said so,
    exit 1) that `codeask index` rebuilds."""
    root = repo(tmp_path, "")
    env = env_for(tmp_path)
    assert run("index", "--lexical-only", ".", cwd=root, env=env)[0] == 0
    manifest = next((root / ".codeask").glob("gen-*/manifest.json"))
    text = manifest.read_text().rstrip()
    manifest.write_text(text[:-1] + ', "zz": ' + "[" * 5000 + "]" * 5000 + "}")
    code, _, err = run("search", "invoice total", cwd=root, env=env)
    assert code == 1 and "is damaged" in err and "RecursionError" not in err, err
    code, _, err = run("index", "--lexical-only", ".", cwd=root, env=env)
    assert code == 0 and "index manifest unreadable" in err, err
    code, out, err = run("search", "invoice total", cwd=root, env=env)
    assert code == 0 and "billing.py" in out, err


# ---- item 11: floors for chunk and window sizes -----------------------------------------------
def chunks_of(root: Path, env: dict[str, str]) -> tuple[int, int]:
    code, _, err = run("index", "--lexical-only", ".", cwd=root, env=env)
    assert code == 0, err
    status = json.loads(run("status", "--json", cwd=root, env=env)[1])[0]
    return int(status["chunks"]), int(status["disk_bytes"])


def test_one_line_chunks_are_raised_to_the_floor(tmp_path: Path) -> None:
    """0.9 MB of plain text: 1-line windows made ~100k chunks; at the floor the count stays
    within 6x of the defaults' (windows advance 10 lines, not 50)."""
    notes = "".join(f"item {n:05d}\n" for n in range(80_000))  # 0.9 MB, no grammar
    assert 850_000 < len(notes) < 1_000_000
    tiny = "[chunk]\nmax_lines = 1\nwindow_lines = 1\nwindow_overlap = 0\n"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    default_root = repo(tmp_path / "a", "", {"notes.txt": notes})
    tiny_root = repo(tmp_path / "b", tiny, {"notes.txt": notes})
    base, base_bytes = chunks_of(default_root, env_for(tmp_path / "a"))
    code, _, err = run("index", "--lexical-only", ".", cwd=tiny_root, env=env_for(tmp_path / "b"))
    assert code == 0, err
    toml = tiny_root / ".codeask.toml"
    for name in ("chunk.max_lines", "chunk.window_lines"):
        floor = SIZE_FLOORS[name]
        assert f"{toml}: {name} = 1 is below its floor of {floor}; {floor} used" in err, err
    floored, floored_bytes = chunks_of(tiny_root, env_for(tmp_path / "b"))
    print(
        f"\n0.9 MB file: {base} chunks ({base_bytes / 1e6:.1f} MB) by default, "
        f"{floored} ({floored_bytes / 1e6:.1f} MB) with 1-line sizes asked"
    )
    assert floored <= 6 * base, (floored, base)
    assert floored < 10_000


def test_a_project_file_may_not_raise_the_overlap(tmp_path: Path) -> None:
    root = repo(tmp_path, "[chunk]\nwindow_lines = 20\nwindow_overlap = 19\n")
    settings, warnings = load_settings(root, environ=env_for(tmp_path))
    assert settings.chunk.window_lines == 20 and settings.chunk.window_overlap == 10
    assert any("chunk.window_overlap" in w and "raise" in w for w in warnings), warnings
