"""`codeask search --json` on a git repository a test makes: the ranking tests' one way to ask
the real CLI (`codeask index`, then `codeask search`, as processes) about files they write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .cli import codeask
from .env import in_process_env
from .gitrepo import ALICE, EPOCH, commit, make_repo


def search_hits(
    tmp_path: Path, files: dict[str, str], question: str, **settings: str
) -> list[dict[str, Any]]:
    """The hits `codeask search QUESTION --json` prints for a fresh repository of `files`
    (first pass, history off, private config and cache homes under `tmp_path`, `settings` as
    environment variables, e.g. CODEASK_RETRIEVE__FRAME_WEIGHT="0")."""
    root = tmp_path / "repo"
    commit(make_repo(root), files, "code", ALICE, EPOCH)
    homes = {f"XDG_{name.upper()}_HOME": str(tmp_path / name) for name in ("config", "cache")}
    env = in_process_env(CODEASK_HISTORY__ENABLED="false", **homes, **settings)
    codeask("index", str(root), cwd=root, env=env, timeout=600, check=True)
    done = codeask("search", question, "--json", "--root", str(root), cwd=root, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    hits: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    return hits


def ranked_files(hits: list[dict[str, Any]]) -> list[str]:
    """The hits' files, each once, best first."""
    return list(dict.fromkeys(hit["relative_path"] for hit in hits))


def first_file(tmp_path: Path, files: dict[str, str], question: str, **settings: str) -> str:
    """The file `codeask search` ranks first for `question` (`search_hits`' repository and
    settings): the ranking steps' tests compare it with and without their step."""
    ranked = ranked_files(search_hits(tmp_path, files, question, **settings))
    assert ranked, "no hits"
    return ranked[0]
