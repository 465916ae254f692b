"""The daemon answers typed operations with data, and the client renders them (issue 43): a
search through the daemon prints byte for byte what the same search prints in-process, a slow
request never holds a fast one, and the CLI's indexes live in the one cache the sessions use.
Real processes: `codeask index`, the daemon, `codeask search` / `status`, a real git repo."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import blocked_search, codeask, daemon_pid, kept_outcome

pytestmark = pytest.mark.slow

#: `codeask search` lines: human and --json output, filters, notes and user errors.
SEARCHES = [
    ["search", "invoice pdf"],
    ["search", "invoice pdf", "--json"],
    ["search", "tax rate for a country", "-k", "1", "--mode", "lexical"],
    ["search", "mail", "--lang", "python", "--json", "-k2"],
    ["search", "invoice", "--path", "billing/*.py", "--kind", "function", "--json"],
    ["search", "invoice", "--root", ".", "--root", "../plain", "--scope", "all"],  # a note
    ["search", "vat", "--root", "../plain", "--history"],  # a user error: no history there
    ["search", "x", "--root", "nowhere"],  # a user error: not a folder
    ["search", "   "],  # a user error: empty query
    ["search", "zzqx wqzzx", "--mode", "lexical"],  # no results: exit 1
    ["search", "invoice", "--history", "--json"],  # the commits
    ["search", "invoice", "--root", "../odd"],  # a settings warning on stderr
]
STATUSES = [["status"], ["status", "--json"], ["status", "--root", ".", "--root", "../plain"]]
#: The probe's entry points: the light path (the console script's) and the full CLI.
ENTRIES = (["-m", "codeask"], ["-m", "codeask.cli"])


def timeless(text: str) -> str:
    """Output minus the search's own timing (`"seconds"`, `N results in X ms`)."""
    text = re.sub(r'"seconds": [0-9.e-]+', '"seconds": 0', text)
    return re.sub(r" results in \d+ ms", " results in _ ms", text)


def run(entry: list[str], argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    done = subprocess.run(
        [sys.executable, *entry, *argv], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    return done.returncode, timeless(done.stdout), timeless(done.stderr)


@pytest.fixture()
def repo(project: Path) -> Path:
    """The shop as a git repository with history, beside a plain folder and one whose project
    file makes a settings warning, each indexed."""
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "Render invoices as PDF"], cwd=project, check=True)
    plain, odd = project.parent / "plain", project.parent / "odd"
    for folder in (plain, odd):
        folder.mkdir()
        (folder / "rates.py").write_text("def vat_rate(country):\n    return 0.2\n")
    (odd / ".codeask.toml").write_text("[bogus]\nx = 1\n")
    env = dict(os.environ)
    for folder in (project, plain, odd):
        indexed = codeask("index", str(folder), cwd=folder, env=env)
        assert indexed.returncode == 0, indexed.stderr
    return project


def test_through_the_daemon_the_output_is_the_in_process_output(
    repo: Path, daemon_env: dict[str, str]
) -> None:
    assert codeask("status", cwd=repo, env=daemon_env).returncode == 0  # starts the daemon
    pid = daemon_pid(daemon_env)
    assert pid
    for argv in SEARCHES:
        alone = run(ENTRIES[1], [*argv, "--no-daemon"], repo, daemon_env)
        for entry in ENTRIES:
            assert run(entry, argv, repo, daemon_env) == alone, (entry, argv)
    # the statuses once the daemon's passes after the searches are saved (it holds the folders
    # searched: a status read during a pass may count the walk cache it writes)
    for searched in (repo, repo.parent / "odd"):
        assert kept_outcome(searched, daemon_env).startswith("held")
    for argv in STATUSES:
        alone = run(ENTRIES[1], [*argv, "--no-daemon"], repo, daemon_env)
        for entry in ENTRIES:
            assert run(entry, argv, repo, daemon_env) == alone, (entry, argv)
    assert daemon_pid(daemon_env) == pid, "one daemon answered every line"
    info = json.loads(codeask("daemon", "--status", cwd=repo, env=daemon_env).stdout)
    assert info["requests"] == 1 + 2 * len(SEARCHES + STATUSES), "the daemon answered each"


#: A request written by hand, sent by the client's own code from the daemon's environment.
RAW = """
import json, sys
from codeask.daemon import client
request = client.command_request(sys.argv[1], json.loads(sys.argv[2]))
print(json.dumps(client.call(request, start=False)))
"""


def ask_raw(command: str, args: dict[str, object], cwd: Path, env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    done = subprocess.run(
        [sys.executable, "-c", RAW, command, json.dumps(args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_the_daemon_answers_data_and_refuses_a_mistyped_argument(
    project: Path, daemon_env: dict[str, str]
) -> None:
    assert codeask("search", "invoice", cwd=project, env=daemon_env).returncode == 0
    reply = ask_raw("search", {"query": "invoice pdf", "k": 2}, project, daemon_env)
    assert reply["status"] == "ok" and reply["notes"] == ""
    hits = reply["answer"]["results"]
    assert len(hits) == 2 and hits[0]["relative_path"] == "billing/invoice.py"
    assert hits[0]["path"] == str(project / "billing" / "invoice.py")
    assert reply["answer"]["tiers_answered"][0] == "lexical"
    status = ask_raw("status", {}, project, daemon_env)
    assert status["status"] == "ok" and status["answer"][0]["json"]["root"] == str(project)
    bad = ask_raw("search", {"query": "invoice", "k": "two"}, project, daemon_env)
    assert bad["status"] == "refused"
    assert bad["message"].startswith("bad search arguments") and "$.k" in bad["message"]
    missing = ask_raw("search", {"k": 2}, project, daemon_env)
    assert missing["status"] == "refused" and "query" in missing["message"]


def test_cli_requests_and_sessions_share_one_cache_of_indexes(
    project: Path, daemon_env: dict[str, str]
) -> None:
    """The CLI's read-mode index is held by the daemon's one `SharedIndexes` (the one its
    editor and agent sessions open theirs in), not by a cache of its own. (A daemon that holds
    nothing after a search: else its writer soon replaces the read copy, as
    test_daemon_search_hold.py shows.)"""
    env = daemon_env | {"CODEASK_DAEMON__HOLD_SECONDS": "0"}
    for _ in range(2):
        found = codeask("search", "invoice", cwd=project, env=env)
        assert found.returncode == 0 and "daemon unavailable" not in found.stderr
    info = json.loads(codeask("daemon", "--status", cwd=project, env=env).stdout)
    assert info["folders"] == [str(project)] and info["loads"] == 1
    assert info["indexes"] == [
        {
            "root": str(project),
            "index": str(project / ".codeask"),
            "users": 1,  # the cache keeps it; no request holds it now
            "writer": False,
        }
    ]


def test_a_slow_request_does_not_hold_a_fast_one(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    """A search whose index the daemon cannot read yet (its CURRENT is a FIFO this test holds
    shut) is in the daemon; a search of another folder is answered meanwhile."""
    slow_root = tmp_path / "slow"
    slow_root.mkdir()
    (slow_root / "rates.py").write_text("def vat_rate(country):\n    return 0.2\n")
    assert codeask("index", str(slow_root), cwd=slow_root, env=dict(os.environ)).returncode == 0
    assert codeask("search", "invoice", cwd=project, env=daemon_env).returncode == 0  # a daemon
    with blocked_search(slow_root, project, daemon_env) as slow:
        fast = codeask("search", "invoice pdf", cwd=project, env=daemon_env, timeout=120)
        assert fast.returncode == 0 and "render_invoice_pdf" in fast.stdout, fast.stderr
        assert "daemon unavailable" not in fast.stderr
        assert slow.poll() is None, "the slow request is still blocked on the pointer"
    out, err = slow.communicate(timeout=300)
    assert slow.returncode == 0 and "daemon unavailable" not in err, err
    assert "rates.py" in out and "vat_rate" in out
