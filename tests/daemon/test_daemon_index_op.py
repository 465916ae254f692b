"""`codeask index` as a typed daemon operation (issue 43, index control): with the daemon on,
the pass runs on the folder's one driver in the daemon and the CLI prints the summary the
daemon answers as data, the lines an in-process `codeask index` prints (timings aside); an
agent holding the folder sees the pass at once; a slow request does not hold it; with the
daemon off it runs in-process as before. Real processes: `codeask index`, the daemon,
`codeask mcp`, `codeask search`; real git repositories."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import ENABLED, blocked_search, codeask, daemon_pid, run_dir
from mcp_agents import agent_env, build_other_project, call, complete, mcp_session

from support.gitrepo import write_tree

pytestmark = pytest.mark.slow

CHANGED = "lib/ledger.py"
CHANGED_TEXT = '''"""Double-entry bookkeeping for the warehouse."""


def post_journal_entry(debit_account, credit_account, amount):
    """Record one balanced journal entry between two accounts."""
    return {"debit": debit_account, "credit": credit_account, "amount": amount}


def reverse_journal_entry(entry):
    """Undo a posted entry by swapping its accounts."""
    return {"debit": entry["credit"], "credit": entry["debit"], "amount": entry["amount"]}
'''
#: A project file with an unknown section: a settings warning both ways.
ODD_SETTINGS = "[bogus]\nx = 1\n"


def summary(stderr: str, root: Path) -> list[str]:
    """The summary lines (the folder's line and its indented notes, settings warnings),
    timings and the root's path made neutral; the in-process progress lines left out."""
    kept = []
    for line in stderr.splitlines():
        if line.startswith((str(root), "  ", "WARNING", "codeask:")):
            line = line.replace(str(root), "ROOT")
            kept.append(re.sub(r"after [0-9.]+s, done in [0-9.]+s", "after _s, done in _s", line))
    return kept


def as_data(stdout: str, root: Path) -> list[dict[str, Any]]:
    """`index --json` minus timings, with the root's path made neutral."""
    rows = json.loads(stdout.replace(str(root), "ROOT"))
    for row in rows:
        row.pop("seconds_lexical")
        row.pop("seconds_total")
    return rows  # type: ignore[no-any-return]


def index_both(
    here: Path, there: Path, env: dict[str, str], *argv: str
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """`codeask index ARGV` on `here` in-process and on `there` through the daemon."""
    alone = codeask("index", *argv, "--no-daemon", str(here), cwd=here, env=env, timeout=300)
    served = codeask("index", *argv, str(there), cwd=there, env=env, timeout=300)
    assert alone.returncode == 0, alone.stderr
    assert served.returncode == 0, served.stderr
    assert "daemon unavailable" not in served.stderr, served.stderr
    return alone, served


def counts(root: Path, env: dict[str, str]) -> tuple[int, int, int]:
    row = json.loads(codeask("status", "--json", "--no-daemon", cwd=root, env=env).stdout)[0]
    return row["files"], row["chunks"], row["static_embedded"]


def test_index_through_the_daemon_is_the_in_process_index(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """The same repository in two folders, indexed in-process and through the daemon: both
    print the same summary and hold the same files and chunks. A long pass on a folder no
    session holds (the first pass, `--rebuild`) is handed back to the asking CLI, which shows
    its progress line; an edit's pass runs in the daemon (no progress line), whose driver
    stops after it."""
    env = agent_env(daemon_env) | {"CODEASK_DAEMON__HOLD_SECONDS": "0"}  # as before the hold
    here = build_other_project(tmp_path / "here")
    (here / ".codeask.toml").write_text(ODD_SETTINGS)
    there = tmp_path / "there"
    shutil.copytree(here, there)
    alone, served = index_both(here, there, env)
    assert summary(served.stderr, there) == summary(alone.stderr, here), served.stderr
    assert "there: scanning" in served.stderr, "the first pass ran in the CLI, with its line"
    for argv in ([], ["--json"]):
        (here / CHANGED).write_text(CHANGED_TEXT + "\n" * len(argv))  # an edit each round
        (there / CHANGED).write_text(CHANGED_TEXT + "\n" * len(argv))
        alone, served = index_both(here, there, env, *argv)
        assert "scanning" not in served.stderr, "the edit's pass ran in the daemon"
        if argv:
            assert as_data(served.stdout, there) == as_data(alone.stdout, here)
        else:
            assert summary(served.stderr, there) == summary(alone.stderr, here), served.stderr
            assert "bogus" in served.stderr, "the settings warning reaches the client"
        assert counts(there, env) == counts(here, env)
    alone, served = index_both(here, there, env, "--rebuild")
    assert summary(served.stderr, there) == summary(alone.stderr, here)
    assert " indexed, 0 unchanged, 0 removed" in served.stderr, "rebuilt"
    assert "there: scanning" in served.stderr, "a rebuild runs in the CLI, with its line"
    assert counts(there, env) == counts(here, env)
    info = json.loads(codeask("daemon", "--status", cwd=there, env=env).stdout)
    assert info["requests"] == 4, "the daemon was asked four times, and ran the two edits"
    assert info["drivers"] == [], "no session holds the folder: its driver stopped"


async def test_an_agent_on_the_folder_sees_the_pass_at_once(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """An agent's session holds the folder in the daemon: `codeask index` runs on that one
    driver (before: it deferred to the owner, 'nothing to do', and the new function waited for
    the next rescan); the agent finds the new function right after, and one driver remains."""
    env = agent_env(daemon_env)
    root = build_other_project(tmp_path / "ledger")
    async with mcp_session(root, env=env, stderr=tmp_path / "agent.log") as agent:
        await complete(agent)
        (root / CHANGED).write_text(CHANGED_TEXT)
        indexed = codeask("index", cwd=root, env=env, timeout=300)
        assert indexed.returncode == 0, indexed.stderr
        assert "(1 indexed, 1 unchanged, 0 removed, 0 skipped)" in indexed.stderr, indexed.stderr
        hits = await call(agent, "search_code", query="reverse_journal_entry")
        assert hits["results"][0]["path"].endswith(CHANGED), hits
        info = json.loads(codeask("daemon", "--status", cwd=root, env=env).stdout)
        [driver] = [d for d in info["drivers"] if Path(d["root"]) == root.resolve()]
        assert driver["sessions"] == ["mcp"] and driver["full_passes"] == 1, driver


def test_an_index_pass_does_not_wait_for_a_slow_search(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """A search whose index the daemon cannot read yet (its CURRENT is a FIFO this test holds
    shut) is in the daemon; `codeask index` of another folder is answered meanwhile."""
    env = agent_env(daemon_env)
    root = build_other_project(tmp_path / "ledger")
    slow_root = tmp_path / "slow"
    slow_root.mkdir()
    (slow_root / "rates.py").write_text("def vat_rate(country):\n    return 0.2\n")
    off = dict(env, **{ENABLED: "false"})
    assert codeask("index", str(slow_root), cwd=slow_root, env=off).returncode == 0
    assert codeask("index", cwd=root, env=env, timeout=300).returncode == 0  # a daemon
    with blocked_search(slow_root, root, env) as slow:
        (root / CHANGED).write_text(CHANGED_TEXT)
        indexed = codeask("index", cwd=root, env=env, timeout=300)
        assert indexed.returncode == 0 and "daemon unavailable" not in indexed.stderr
        assert "(1 indexed, 1 unchanged" in indexed.stderr, indexed.stderr
        assert slow.poll() is None, "the slow request is still blocked on the pointer"
        info = json.loads(codeask("daemon", "--status", cwd=root, env=env).stdout)
        assert info["requests"] == 3, "the edit's pass ran in the daemon, beside the blocked search"
    out, err = slow.communicate(timeout=300)
    assert slow.returncode == 0 and "vat_rate" in out, err


def test_daemon_off_indexes_in_process(tmp_path: Path, daemon_env: dict[str, str]) -> None:
    """`daemon.enabled = false` and `--no-daemon`: the pass runs in this process (its progress
    lines on stderr) and no daemon is started."""
    root = build_other_project(tmp_path / "ledger")
    write_tree(root, {CHANGED: CHANGED_TEXT})
    off = dict(agent_env(daemon_env), **{ENABLED: "false"})
    by_setting = codeask("index", cwd=root, env=off, timeout=300)
    (root / CHANGED).write_text(CHANGED_TEXT + "\n")
    by_flag = codeask("index", "--no-daemon", cwd=root, env=agent_env(daemon_env), timeout=300)
    for done in (by_setting, by_flag):
        assert done.returncode == 0, done.stderr
        assert "daemon unavailable" not in done.stderr
        assert "ledger: scanning" in done.stderr, "the in-process progress line"
    assert "(1 indexed, 1 unchanged" in by_flag.stderr
    assert daemon_pid(daemon_env) is None
    assert not run_dir(daemon_env).exists(), "nothing of the daemon was even created"


async def test_an_owner_in_its_own_process_keeps_the_index_as_in_process(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    """An agent's `codeask mcp` in its own process (daemon off for it) writes the index: the
    daemon's driver only follows it, and `codeask index` through the daemon says what an
    in-process one says (the owner keeps it current), word for word, and runs no pass."""
    root = build_other_project(tmp_path / "ledger")
    env = agent_env(daemon_env)
    alone_env = agent_env(daemon_env, enabled=False)
    async with mcp_session(root, env=alone_env, stderr=tmp_path / "agent.log") as agent:
        await complete(agent)
        served = codeask("index", cwd=root, env=env, timeout=300)
        alone = codeask("index", "--no-daemon", cwd=root, env=env, timeout=300)
    assert served.returncode == 0 and alone.returncode == 0, served.stderr + alone.stderr
    assert "daemon unavailable" not in served.stderr
    assert served.stderr == alone.stderr
    assert "which keeps it current; nothing to do" in served.stderr
    info = json.loads(codeask("daemon", "--status", cwd=root, env=env).stdout)
    assert info["requests"] == 1 and info["drivers"] == [], "asked, followed, stopped"
