"""The same question over the same index ranks the same in every process. Python salts string
hashes per process (PYTHONHASHSEED), so anything ranked in a set's order changes between runs:
the symbol list ordered the question's identifiers by length only, so two names of one length
came in either order, and with them their definitions' ranks and scores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support import in_process_env


def codeask(args: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "codeask", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_a_search_ranks_alike_whatever_the_hash_seed(tmp_path: Path) -> None:
    project = tmp_path / "demo"
    project.mkdir()
    for name in ("load_cfg", "save_cfg", "read_cfg", "drop_cfg"):
        (project / f"{name.split('_')[0]}.py").write_text(
            f"def {name}(path):\n    '''Config file: {name.replace('_', ' ')}.'''\n"
            f"    return open(path).read()\n"
        )
    env = in_process_env()
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    codeask(["index", str(project)], env, project)
    query = "load_cfg save_cfg read_cfg drop_cfg"
    rankings = set()
    for seed in range(8):
        out = codeask(
            ["search", query, "--json", "--mode", "lexical", "--path", "*.py", "--no-daemon"],
            {**env, "PYTHONHASHSEED": str(seed)},
            project,
        )
        hits = json.loads(out)["results"]
        rankings.add(tuple((h["path"], round(h["score"], 9)) for h in hits))
    assert len(rankings) == 1, rankings
    assert len(next(iter(rankings))) == 4
