"""The same question over the same index ranks the same in every process. Python salts string
hashes per process (PYTHONHASHSEED), so anything ranked in a set's order changes between runs:
the symbol list ordered the question's identifiers by length only, so two names of one length
came in either order, and with them their definitions' ranks and scores."""

from __future__ import annotations

import json
from pathlib import Path

from support import codeask, in_process_env


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
    codeask("index", str(project), env=env, cwd=project, check=True)
    query = "load_cfg save_cfg read_cfg drop_cfg"
    rankings = set()
    for seed in range(8):
        out = codeask(
            *["search", query, "--json", "--mode", "lexical", "--path", "*.py", "--no-daemon"],
            env={**env, "PYTHONHASHSEED": str(seed)},
            cwd=project,
            check=True,
        )
        hits = json.loads(out.stdout)["results"]
        rankings.add(tuple((h["path"], round(h["score"], 9)) for h in hits))
    assert len(rankings) == 1, rankings
    assert len(next(iter(rankings))) == 4
