"""`codeask search` and `codeask status` through the per-user daemon: real processes, answers
compared with the same commands answered in-process (`--no-daemon`)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from daemon_helpers import (
    ENABLED,
    codeask,
    daemon_pid,
    kept_outcome,
    processes_run_in,
    run_dir,
    socket_path,
    wait_until,
    without_seconds,
)

from support import PYTHON_M

pytestmark = pytest.mark.slow
QUERIES = ("invoice pdf", "tax rate for a country", "mail the customer", "render_invoice_pdf")


def in_process(query: str, project: Path, env: dict[str, str]) -> dict[str, object]:
    local = codeask("search", query, "--json", "--no-daemon", cwd=project, env=env)
    assert local.returncode == 0, local.stderr
    return without_seconds(local.stdout)


def test_search_starts_the_daemon_on_demand(project: Path, daemon_env: dict[str, str]) -> None:
    assert daemon_pid(daemon_env) is None
    found = codeask("search", "invoice pdf", "--json", cwd=project, env=daemon_env)
    assert found.returncode == 0, found.stderr
    assert "daemon unavailable" not in found.stderr
    pid = daemon_pid(daemon_env)
    assert pid, "no daemon holds the lock after a search with daemon.enabled"
    assert without_seconds(found.stdout) == in_process("invoice pdf", project, daemon_env)
    # Private: the directory 0700, the socket 0600, both ours.
    folder, sock = os.stat(run_dir(daemon_env)), os.stat(socket_path(daemon_env))
    assert stat.S_IMODE(folder.st_mode) == 0o700 and stat.S_IMODE(sock.st_mode) == 0o600
    assert folder.st_uid == sock.st_uid == os.getuid()
    # Human output and status: byte for byte what the command prints in-process.
    human = codeask("search", "invoice pdf", cwd=project, env=daemon_env)
    local = codeask("search", "invoice pdf", "--no-daemon", cwd=project, env=daemon_env)
    assert human.stdout == local.stdout and "render_invoice_pdf" in human.stdout
    # once the daemon's pass after the searches is saved (it holds the folder: a status read
    # during that pass may count the walk cache it writes)
    assert kept_outcome(project, daemon_env).startswith("held")  # (or renewed by a search)
    status = codeask("status", "--json", cwd=project, env=daemon_env)
    local_status = codeask("status", "--json", "--no-daemon", cwd=project, env=daemon_env)
    assert status.returncode == local_status.returncode == 0
    assert json.loads(status.stdout) == json.loads(local_status.stdout)
    # A user error comes back as the same one line and exit code.
    missing = codeask("search", "x", "--root", "nowhere", cwd=project, env=daemon_env)
    assert (missing.returncode, missing.stderr) == (1, "codeask: not a folder: nowhere\n")
    assert daemon_pid(daemon_env) == pid, "one daemon answered all of them"


def test_two_clients_share_one_daemon(project: Path, daemon_env: dict[str, str]) -> None:
    expected = {query: in_process(query, project, daemon_env) for query in QUERIES}
    first = codeask("search", QUERIES[0], "--json", cwd=project, env=daemon_env)
    assert first.returncode == 0, first.stderr
    pid = daemon_pid(daemon_env)
    answers: list[tuple[str, int, str, str]] = []

    def client(offset: int) -> None:
        for i in range(6):
            query = QUERIES[(i + offset) % len(QUERIES)]
            done = codeask("search", query, "--json", cwd=project, env=daemon_env)
            answers.append((query, done.returncode, done.stdout, done.stderr))

    threads = [threading.Thread(target=client, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == 12
    for query, code, stdout, stderr in answers:
        assert code == 0 and "daemon unavailable" not in stderr, stderr
        assert without_seconds(stdout) == expected[query]
    assert daemon_pid(daemon_env) == pid
    state = codeask("daemon", "--status", cwd=project, env=daemon_env)
    info = json.loads(state.stdout)
    assert info["pid"] == pid and info["requests"] == 13
    assert info["loads"] == 1, "the index loaded once"
    # its read copy, or none: the daemon's writer, held after a search, answers then
    assert info["folders"] in ([str(project)], [])


def test_the_daemon_sees_a_new_snapshot(project: Path, daemon_env: dict[str, str]) -> None:
    before = codeask(
        "search", "refund_order", "--json", "--mode", "lexical", cwd=project, env=daemon_env
    )
    assert json.loads(before.stdout)["results"] == []
    (project / "billing" / "refund.py").write_text(
        'def refund_order(order):\n    """Give the money back."""\n    return order\n'
    )
    indexed = codeask("index", str(project), cwd=project, env=daemon_env)
    assert indexed.returncode == 0, indexed.stderr
    after = codeask("search", "refund_order", "--json", cwd=project, env=daemon_env)
    assert after.returncode == 0, after.stderr
    assert without_seconds(after.stdout) == in_process("refund_order", project, daemon_env)
    assert json.loads(after.stdout)["results"][0]["symbol"] == "refund_order"


def test_off_by_setting_and_by_flag(project: Path, daemon_env: dict[str, str]) -> None:
    off = dict(daemon_env)
    off[ENABLED] = "false"
    by_setting = codeask("search", "invoice pdf", "--json", cwd=project, env=off)
    by_flag = codeask("search", "invoice pdf", "--json", "--no-daemon", cwd=project, env=daemon_env)
    status = codeask("status", "--no-daemon", cwd=project, env=daemon_env)
    for done in (by_setting, by_flag, status):
        assert done.returncode == 0, done.stderr
        assert "daemon" not in done.stderr
    assert without_seconds(by_setting.stdout) == without_seconds(by_flag.stdout)
    assert by_setting.stdout.count("render_invoice_pdf") >= 1
    assert daemon_pid(daemon_env) is None
    assert not run_dir(daemon_env).exists(), "nothing of the daemon was even created"


def test_on_by_default(project: Path, daemon_env: dict[str, str]) -> None:
    """No setting anywhere: the first search starts the daemon and is answered by it."""
    plain = dict(daemon_env)
    del plain[ENABLED]
    found = codeask("search", "invoice pdf", "--json", cwd=project, env=plain)
    assert found.returncode == 0, found.stderr
    assert daemon_pid(plain) is not None, "the default starts the per-user daemon"
    assert without_seconds(found.stdout) == in_process("invoice pdf", project, plain)


def test_idle_exit(project: Path, daemon_env: dict[str, str]) -> None:
    daemon_env["CODEASK_DAEMON__IDLE_SECONDS"] = "1"
    found = codeask("search", "invoice pdf", cwd=project, env=daemon_env)
    assert found.returncode == 0, found.stderr
    assert wait_until(lambda: daemon_pid(daemon_env) is None, timeout=20), "still running"
    assert not socket_path(daemon_env).exists()
    again = codeask("search", "invoice pdf", cwd=project, env=daemon_env)  # a new one starts
    assert again.returncode == 0 and again.stdout == found.stdout


def test_stop_and_status(project: Path, daemon_env: dict[str, str]) -> None:
    none = codeask("daemon", "--status", cwd=project, env=daemon_env)
    assert none.returncode == 1 and "no codeask daemon answers" in none.stdout
    codeask("status", cwd=project, env=daemon_env)
    pid = daemon_pid(daemon_env)
    assert pid
    stopped = codeask("daemon", "--stop", cwd=project, env=daemon_env)
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert daemon_pid(daemon_env) is None and not socket_path(daemon_env).exists()
    assert wait_until(lambda: not Path(f"/proc/{pid}").exists(), timeout=10)


#: What a forwarded command must not load: the engine's heavy parts (models, vectors, parsing,
#: git) and the settings tree. `codeask.core.source.names` is the parser's (file names as text).
TIME = "/usr/bin/time"
HEAVY = (
    "numpy",
    "onnxruntime",
    "tree_sitter",
    "tree_sitter_language_pack",
    "pygit2",
    "fastembed",
    "tokenizers",
    "msgspec",
    "codeask.config",
)


def test_the_forwarding_client_stays_light(project: Path, daemon_env: dict[str, str]) -> None:
    assert codeask("search", "invoice pdf", cwd=project, env=daemon_env).returncode == 0
    traced = codeask(
        "search", "invoice pdf", cwd=project, env=dict(daemon_env, PYTHONPROFILEIMPORTTIME="1")
    )
    assert traced.returncode == 0 and "render_invoice_pdf" in traced.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in traced.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "codeask.daemon.client" in imported
    heavy = sorted(
        name
        for name in imported
        if name.split(".")[0] in HEAVY
        or name in HEAVY
        or (
            name.startswith("codeask.core.")
            and name not in {"codeask.core.source", "codeask.core.source.names"}
        )
    )
    assert heavy == []
    # Peak RSS as /usr/bin/time sees it: a direct child of pytest would count pytest's own
    # pages (the kernel's maxrss keeps the forking parent's image across exec).
    if not Path(TIME).exists():
        pytest.skip(f"no {TIME} to measure the client's RSS")
    timed = codeask(
        "search", "invoice pdf", cwd=project, env=daemon_env, launcher=(TIME, "-f", "%M", *PYTHON_M)
    )
    assert timed.returncode == 0, timed.stderr
    peak_kb = int(timed.stderr.strip().splitlines()[-1])
    assert peak_kb < 60 * 1024, f"client peak RSS {peak_kb} KB"


def test_ask_prompt_only_through_the_daemon(project: Path, daemon_env: dict[str, str]) -> None:
    question = ("ask", "how is the invoice rendered as a pdf", "--prompt-only")
    local = codeask(*question, "--no-daemon", cwd=project, env=daemon_env)
    assert local.returncode == 0, local.stderr
    assert daemon_pid(daemon_env) is None
    forwarded = codeask(*question, cwd=project, env=daemon_env)
    assert daemon_pid(daemon_env), "the daemon answered it"
    assert (forwarded.returncode, forwarded.stdout, forwarded.stderr) == (
        local.returncode,
        local.stdout,
        local.stderr,
    )
    assert "billing/invoice.py" in forwarded.stdout
    as_json = codeask(*question, "--json", cwd=project, env=daemon_env)
    local_json = codeask(*question, "--json", "--no-daemon", cwd=project, env=daemon_env)
    assert json.loads(as_json.stdout) == json.loads(local_json.stdout)
    info = json.loads(codeask("daemon", "--status", cwd=project, env=daemon_env).stdout)
    assert info["requests"] == 2


def test_minilm_tier_answers_the_same(project: Path, daemon_env: dict[str, str]) -> None:
    """With the MiniLM tier built, the daemon's warm model ranks as a fresh process does
    (`--mode dense`: the packaged MiniLM answers it; typed hybrid questions too)."""
    full = codeask("index", "--full", str(project), cwd=project, env=daemon_env)
    assert full.returncode == 0, full.stderr
    for mode in ("dense", "hybrid"):
        for query in ("where do we mail invoices", "vat for france"):
            local = codeask(
                "search",
                query,
                "--json",
                "--mode",
                mode,
                "--no-daemon",
                cwd=project,
                env=daemon_env,
            )
            assert local.returncode == 0, local.stderr
            expected = without_seconds(local.stdout)
            assert expected["warming"] is False, "every tier is complete"
            for _ in range(2):  # the first loads the model in the daemon, the second reuses it
                found = codeask(
                    "search", query, "--json", "--mode", mode, cwd=project, env=daemon_env
                )
                assert found.returncode == 0 and "daemon unavailable" not in found.stderr
                assert without_seconds(found.stdout) == expected
            if mode == "dense":
                hits = expected["results"]
                assert hits and all("dense" in hit["retrievers"] for hit in hits)  # type: ignore[attr-defined, index]


def test_a_socket_path_too_long_falls_back(project: Path, daemon_env: dict[str, str]) -> None:
    """AF_UNIX paths stop at 107 bytes: a deep runtime dir cannot hold the socket. The command
    still answers (in-process, one note) and leaves no daemon behind."""
    deep = Path(daemon_env["XDG_RUNTIME_DIR"]) / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True, mode=0o700)
    daemon_env["XDG_RUNTIME_DIR"] = str(deep)
    found = codeask("search", "invoice pdf", "--json", cwd=project, env=daemon_env)
    assert found.returncode == 0, found.stderr
    assert without_seconds(found.stdout) == in_process("invoice pdf", project, daemon_env)
    assert found.stderr.startswith("codeask: daemon unavailable (")
    assert found.stderr.count("\n") == 1
    assert daemon_pid(daemon_env) is None


def test_racing_starts_leave_one_daemon(project: Path, daemon_env: dict[str, str]) -> None:
    """Four searches at once with no daemon: each may start one; the flock keeps one, the
    others exit at once, and every search gets the right answer."""
    expected = in_process("invoice pdf", project, daemon_env)
    runs: list[subprocess.CompletedProcess[str]] = []
    threads = [
        threading.Thread(
            target=lambda: runs.append(
                codeask("search", "invoice pdf", "--json", cwd=project, env=daemon_env)
            )
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [run.returncode for run in runs] == [0, 0, 0, 0], [run.stderr for run in runs]
    assert all(without_seconds(run.stdout) == expected for run in runs)
    assert all("daemon unavailable" not in run.stderr for run in runs)
    pid = daemon_pid(daemon_env)
    folder = daemon_env["XDG_RUNTIME_DIR"]
    assert wait_until(lambda: processes_run_in({folder}) == [pid], timeout=20), (
        f"daemon processes: {processes_run_in({folder})}, lock holder {pid}"
    )
