"""What the CLI says while it works and when something is missing: real processes, real output.

Indexing progress (a plain line per phase and every interval off a terminal; one line redrawn
in place on a terminal), `search --history` outside git, `ask` with the model endpoint down, and
`-v` listing skipped files instead of pointing at `-v`.
"""

from __future__ import annotations

import os
import pty
import re
import select
import socket
import subprocess
import time
from pathlib import Path

import pytest

from support import PYTHON_M, codeask, in_process_env

#: Every test here starts the real CLI (one indexes 900 files): out of the `not slow` loop.
pytestmark = pytest.mark.slow

SUMMARY = re.compile(
    r"^/.+: \d+ files \(\d+ indexed, \d+ unchanged, \d+ removed, \d+ skipped\), \d+ chunks, "
    r"\d+% embedded \(\d+ computed\), searchable after [\d.]+s, done in [\d.]+s$"
)
#: A chunking line with every part: counts, percent, rate and ETA.
CHUNKING_FULL = re.compile(
    r"^tree: chunking · (\d+)/(\d+) files · \d+% · [\d.]+ files/s · ETA \d+(m\d\ds)?s?$"
)
FILES = 900


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "invoice.py").write_text(
        "def render_invoice_pdf(invoice):\n"
        '    """Draw the invoice as a PDF page."""\n'
        '    return b""\n'
    )
    (root / "README.md").write_text("# Billing\n\nInvoices are rendered as PDF.\n")
    (root / ".env").write_text("TOKEN=not-indexed\n")  # skipped: a secret-like name
    return root


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Enough small files that lexical indexing takes about a second or more."""
    root = tmp_path_factory.mktemp("progress") / "tree"
    for i in range(FILES):
        folder = root / f"pkg{i % 30}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i}.py").write_text(
            "".join(
                f"def step_{i}_{j}(value):\n    '''Step {j} of {i}.'''\n    return value * {j}\n\n"
                for j in range(12)
            )
        )
    return root


def progress_lines(stderr: str, label: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"{label}: ")]


# ---- index progress off a terminal ---------------------------------------------------------------
def test_plain_progress_prints_each_phase_then_the_unchanged_summary(project: Path) -> None:
    run = codeask("index", "--lexical-only", str(project), cwd=project)
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    assert lines[:2] == [  # static vectors are computed as files are chunked, in that phase
        "proj: scanning · looking for files",
        "proj: chunking · 0/2 files · 0%",
    ]
    assert SUMMARY.match(lines[2]), lines
    assert lines[3:] == ["  skipped files are listed with -v"]
    assert "\r" not in run.stderr and "\x1b" not in run.stderr  # a log, not a terminal


def test_an_empty_folder_counts_zero_files_not_zero_of_zero(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    run = codeask("index", "--lexical-only", str(root), cwd=root)
    assert run.returncode == 0, run.stderr
    assert progress_lines(run.stderr, "empty") == [
        "empty: scanning · looking for files",
        "empty: chunking · 0 files",
    ]
    assert "0/0" not in run.stderr


def test_plain_progress_repeats_every_interval_with_rate_and_eta(tree: Path) -> None:
    started = time.monotonic()
    run = codeask(
        "index",
        "--lexical-only",
        "--rebuild",
        str(tree),
        cwd=tree,
        env=in_process_env(CODEASK_PROGRESS_INTERVAL="0.2"),  # in-process: its progress lines
    )
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stderr
    lines = progress_lines(run.stderr, "tree")
    chunking = [line for line in lines if line.startswith("tree: chunking · ")]
    assert lines[0] == "tree: scanning · looking for files"
    assert chunking[0] == f"tree: chunking · 0/{FILES} files · 0%"
    assert len(chunking) >= 3, run.stderr  # periodic, not only the phase change
    full = [m for m in map(CHUNKING_FULL.match, chunking) if m]
    assert full, chunking  # counts, percent, rate and ETA once the rate is known
    assert all(int(m.group(2)) == FILES for m in full)
    done = [int(m.group(1)) for m in full]
    assert done == sorted(done) and done[-1] < FILES
    # never a flood: at most one line per interval, plus one per phase
    assert len(lines) <= elapsed / 0.2 + 4, lines
    assert SUMMARY.match(run.stderr.splitlines()[-1])


# ---- index progress on a terminal ----------------------------------------------------------------
def run_in_pty(args: list[str], cwd: Path, timeout: float = 300) -> tuple[int, str]:
    """Run the CLI with a pseudo-terminal as stdin, stdout and stderr; everything it wrote."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    proc = subprocess.Popen(
        [*PYTHON_M, *args],
        cwd=cwd,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            out += data
    finally:
        os.close(leader)
        proc.kill() if proc.poll() is None else None
    return proc.wait(10), out.decode("utf-8", errors="replace")


def test_terminal_progress_is_one_line_redrawn_in_place(tree: Path) -> None:
    code, out = run_in_pty(["index", "--lexical-only", "--rebuild", str(tree)], tree)
    assert code == 0, out
    *frames, last = out.split("\r\x1b[2K")
    frames = [f for f in frames if f]
    assert frames[0] == "tree: scanning · looking for files"
    assert all("\n" not in f for f in frames), frames  # redrawn in place, no scrolling
    assert all("0/0" not in f and f.startswith("tree: ") for f in frames), frames
    chunking = [f for f in frames if f.startswith("tree: chunking · ")]
    assert any(CHUNKING_FULL.match(f) for f in chunking), chunking
    # the line is erased before the summary, which is printed as before
    assert SUMMARY.match(last.replace("\r\n", "\n").splitlines()[0]), last


# ---- search --history outside git ----------------------------------------------------------------
def test_history_search_outside_git_says_so(project: Path) -> None:
    expected = (
        f"codeask: {project} is not a git repository: no history to search; "
        "index a git checkout or drop --history"
    )
    for args in (["--history"], ["--scope", "history"]):
        before_index = codeask("search", "invoice", *args, cwd=project)
        assert (before_index.returncode, before_index.stderr.strip()) == (1, expected)
    assert codeask("index", "--lexical-only", cwd=project).returncode == 0
    run = codeask("search", "invoice", "--history", cwd=project)
    assert (run.returncode, run.stderr.strip(), run.stdout) == (1, expected, "")


def test_scope_all_outside_git_notes_it_and_searches_the_code(project: Path) -> None:
    assert codeask("index", "--lexical-only", cwd=project).returncode == 0
    run = codeask("search", "render invoice", "--scope", "all", "--mode", "lexical", cwd=project)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[0] == (
        f"codeask: {project} is not a git repository: no history to search there"
    )
    assert "billing/invoice.py:1-3  function render_invoice_pdf" in run.stdout


def test_history_search_in_a_git_checkout_has_no_such_message(project: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "billing", "README.md"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "render invoices"], cwd=project, check=True)
    assert codeask("index", "--lexical-only", cwd=project).returncode == 0
    run = codeask("search", "render invoices", "--history", "--mode", "lexical", cwd=project)
    assert run.returncode == 0, run.stderr
    assert "not a git repository" not in run.stderr
    assert " commit " in run.stdout


# ---- ask with the model endpoint down ------------------------------------------------------------
def closed_port() -> int:
    """A loopback port nobody listens on (bound, then closed: connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_ask_with_the_endpoint_down_prints_sources_then_how_to_point_elsewhere(
    project: Path, tmp_path: Path
) -> None:
    assert codeask("index", "--lexical-only", cwd=project).returncode == 0
    url = f"http://127.0.0.1:{closed_port()}"
    env = {
        "CODEASK_LLM__PROVIDER": "openai",
        "CODEASK_LLM__BASE_URL": url,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    run = codeask("ask", "how is the invoice rendered?", cwd=project, env=in_process_env(**env))
    assert run.returncode == 1
    assert run.stdout.startswith("\nSources:\n"), run.stdout
    assert "  billing/invoice.py:1 render_invoice_pdf\n" in run.stdout
    lines = run.stderr.splitlines()
    error = next(i for i, line in enumerate(lines) if url in line)
    assert lines[error].startswith("codeask: cannot connect to ") and "refused" in lines[error]
    assert lines[error + 1 :] == [
        f"  endpoint: llm.provider = openai, llm.base_url = {url}, llm.model = qwen2.5-coder:7b",
        "  to use another, set llm.base_url, llm.provider (ollama or openai) and llm.model",
        f"    in the [llm] table of {tmp_path / 'config' / 'codeask' / 'config.toml'}",
        "    (a project's .codeask.toml may set base_url and provider only in a trusted "
        "workspace: see docs/security.md)",
        "    or for one run: CODEASK_LLM__BASE_URL=http://host:port CODEASK_LLM__PROVIDER=openai "
        "CODEASK_LLM__MODEL=<name> codeask ask ...",
        "  `codeask ask --prompt-only` prints the prompt and the sources without calling a model",
    ]


# ---- -v ------------------------------------------------------------------------------------------
def test_verbose_lists_skipped_files_instead_of_pointing_at_v(project: Path) -> None:
    quiet = codeask("index", "--lexical-only", str(project), cwd=project)
    assert "  skipped files are listed with -v" in quiet.stderr.splitlines()
    verbose = codeask("-v", "index", "--lexical-only", "--rebuild", str(project), cwd=project)
    assert verbose.returncode == 0, verbose.stderr
    assert "skipped .env: secret-like name" in verbose.stderr
    assert "listed with -v" not in verbose.stderr
