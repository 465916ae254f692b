"""The team state a folder reports (core/indexer/status.py) and the backoff that brings an
unreachable team database back (core/indexer/team_retry.py); `codeask status` shows both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeask.config import build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.indexer.status import TeamStatus
from codeask.core.indexer.team_retry import BaseRetry, schedule_retry
from codeask.core.storage.team import TeamBase
from support import codeask, gitrepo, in_process_env
from support.models_endpoint import closed_port


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_the_backoff_doubles_up_to_its_cap() -> None:
    clock = Clock()
    retry = BaseRetry(first=30, maximum=600, clock=clock)
    assert not retry.due() and retry.seconds_left() == 30
    clock.now += 30
    assert retry.due() and retry.seconds_left() == 0
    waits = []
    for _ in range(7):
        retry.failed()
        waits.append(retry.delay)
    assert waits == [60, 120, 240, 480, 600, 600, 600]
    assert retry.attempts == 7 and retry.seconds_left() == 600


@pytest.mark.parametrize(
    ("kind", "retried"),
    [("unreachable", True), ("unpublished", False), ("unusable", False), ("off", False)],
)
def test_only_an_unreachable_database_is_retried(kind: str, retried: bool) -> None:
    team = TeamBase(reason="why", kind=kind)  # type: ignore[arg-type]
    schedule_retry(team)
    assert (team.retry is not None) == retried
    if team.retry is not None:
        assert team.retry.delay == 30  # the default first wait


def test_the_summary_says_what_the_folder_reads_or_why_not() -> None:
    assert TeamStatus().summary() == ""  # the local backend: nothing to say
    base = TeamStatus("postgres", "base", "github.com/acme/shop@0123456789ab", 1, 3)
    assert base.summary() == (
        "team base github.com/acme/shop@0123456789ab (1 commit behind HEAD), 3 files in the overlay"
    )
    base.query_error, base.cache = "lost the connection to the team index", "unavailable: x"
    assert base.summary().endswith(
        "; last team query failed: lost the connection to the team index"
        "; team embedding cache unavailable: x"
    )
    down = TeamStatus("postgres", "unreachable", reason="team index unusable (...)", retry_in=59.6)
    assert down.summary() == "no team base: database unreachable, indexed locally; retrying in 60 s"
    none = TeamStatus("postgres", "unpublished")
    assert none.summary() == "no team base: nothing published near HEAD, indexed locally"


def test_a_local_folder_reports_the_local_backend(tmp_path: Path) -> None:
    repo = gitrepo.make_repo(tmp_path / "repo")
    gitrepo.commit(repo, {"a.py": "def alpha():\n    return 1\n"}, "A")
    settings, _ = build_settings({"index": {"location": str(tmp_path / "index")}})
    folder = FolderIndex(tmp_path / "repo", settings)
    team = folder.status().team
    assert (team.backend, team.kind, team.base, team.retry_in) == ("local", "off", "", None)
    folder.close()


@pytest.mark.slow
def test_codeask_status_shows_an_unreachable_team_database(tmp_path: Path) -> None:
    """The real CLI: the team line (and the reason, never the password), text and JSON."""
    repo = gitrepo.make_repo(tmp_path / "repo")
    gitrepo.commit(repo, {"a.py": "def alpha():\n    return 1\n"}, "A")
    env = in_process_env()
    port = closed_port()
    env |= {
        "CODEASK_INDEX__BACKEND": "postgres",
        "CODEASK_INDEX__LOCATION": str(tmp_path / "index"),
        "CODEASK_PG_DSN": f"postgresql://dev:pw-Kx3@127.0.0.1:{port}/team",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }

    def status(*extra: str) -> str:
        run = codeask("status", *extra, cwd=tmp_path / "repo", env=env, timeout=120)
        assert run.returncode == 1, run.stderr  # never indexed here: says so, exits 1
        assert "pw-Kx3" not in run.stdout + run.stderr
        return run.stdout

    text = status()
    assert "not indexed yet" in text
    assert "  no team base: database unreachable, indexed locally\n" in text
    assert "    (team index unusable (cannot connect to the team database dev@127.0.0.1" in text
    team = json.loads(status("--json"))[0]["team"]
    assert team["backend"] == "postgres" and team["kind"] == "unreachable"
    assert team["base"] == "" and team["retry_in"] is None  # a CLI run does not retry
