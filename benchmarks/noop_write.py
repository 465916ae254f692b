"""Bytes a no-change `codeask index` writes to the index folder (issue 11 item 8).

Clones a git repository (default: this one) to a temporary folder, indexes it once, then runs
`codeask index` again without changing anything and compares every file of the index folder
(inode, size, mtime) before and after. `writer.lock` is left out: it names the current writer.

    python -m benchmarks.noop_write [--repo PATH] [--lexical-only] [--pythonpath DIR]

`--pythonpath` runs another checkout's `codeask` (e.g. an older commit) for comparison.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.env import in_process_env


def tree_state(folder: Path) -> dict[str, tuple[int, int, int]]:
    """path → (inode, size, mtime_ns) of every file under `folder`."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != "writer.lock":
            st = path.stat()
            out[path.relative_to(folder).as_posix()] = (st.st_ino, st.st_size, st.st_mtime_ns)
    return out


def run_index(root: Path, env: dict[str, str], lexical_only: bool) -> float:
    """One `codeask index` run; returns its wall time."""
    args = [sys.executable, "-m", "codeask", "index", *(["--lexical-only"] if lexical_only else [])]
    started = time.perf_counter()
    subprocess.run(args, cwd=root, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repo", default=str(Path(__file__).resolve().parent.parent))
    parser.add_argument("--lexical-only", action="store_true")
    parser.add_argument("--pythonpath", help="run the codeask found here instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", "--local", args.repo, str(root)], check=True)
        env = in_process_env()
        env.update(XDG_CACHE_HOME=str(Path(tmp) / "xdg"), HF_HUB_OFFLINE="1")
        if args.pythonpath:
            env["PYTHONPATH"] = args.pythonpath
        first = run_index(root, env, args.lexical_only)
        before = tree_state(root / ".codeask")
        again = run_index(root, env, args.lexical_only)
        after = tree_state(root / ".codeask")
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        old_inodes = {v[0] for v in before.values()}
        # a hard link to an unchanged file writes no data: count files with a new inode only
        written = sum(after[k][1] for k in changed if k in after and after[k][0] not in old_inodes)
        print(f"first index {first:.1f} s; no-change reindex {again:.2f} s")
        print(f"index folder: {len(before)} files before, {len(after)} after")
        print(f"paths changed or new: {len(changed)}; data written: {written:,} bytes")
        print(f"  {changed}")


if __name__ == "__main__":
    main()
