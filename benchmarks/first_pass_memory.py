"""Where a first pass's memory goes: peak RSS of the whole tree, of the indexing process and of
each chunk worker, at one or more subset sizes of a tree (issue 42, item B).

    .venv/bin/python -m benchmarks.first_pass_memory --subset kernel,mm,lib --subset fs,mm

Each size is copied (hard links) into a fresh work folder with a fresh index location, then
`codeask index` runs cold as scale.py's step 1 does (benchmarks.proc_tree: wall, CPU, tree peak),
while a second sampler keeps each process's own peak RSS by role (main, chunk worker). A flat
first pass shows the same main and worker peaks at every size.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from tests.support.env import in_process_env

from benchmarks.cold_peak import fresh_cache, status_mb
from benchmarks.kernel_source import cache_root, kernel_tree
from benchmarks.proc_tree import Tree
from benchmarks.scale import copy_tree, disk_bytes, unignore_debian_top

#: Seconds between two per-process samples.
SAMPLE_S = 0.25


def _role(pid: int) -> str:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "gone"
    return "worker" if b"chunk_worker" in command else "main"


def _sample(
    tree: Tree,
    peaks: dict[int, tuple[str, float]],
    lives: dict[int, list[float]],
    done: threading.Event,
) -> None:
    """Each marked process's largest RSS (VmHWM where the process still lives), and each
    worker's RSS over its life (does it grow with the files it chunked, or jump?)."""
    while not done.wait(SAMPLE_S):
        for pid in tree.members():
            rss, hwm = status_mb(pid)
            role = peaks[pid][0] if pid in peaks else _role(pid)
            peaks[pid] = (role, max(peaks.get(pid, (role, 0.0))[1], rss, hwm))
            if role == "worker" and rss:
                lives.setdefault(pid, []).append(rss)


def _life(samples: list[float]) -> str:
    """RSS at a quarter, half, three quarters and the end of a worker's life."""
    n = len(samples)
    return "/".join(f"{samples[min(n - 1, n * q // 4)]:.0f}" for q in (1, 2, 3, 4))


def measure(source: Path, subset: list[str], parent: Path) -> str:
    """One cold first pass over `subset` of `source`: a line of figures."""
    work = Path(tempfile.mkdtemp(prefix="codeask-fpm-", dir=parent))
    try:
        target = work / source.name
        copy_tree(source, target, subset)
        unignore_debian_top(target)
        env = in_process_env(
            XDG_CACHE_HOME=str(fresh_cache(work / "xdg-cache")),
            XDG_RUNTIME_DIR=str(work),
            HF_HUB_OFFLINE="1",
            CODEASK_INDEX__LOCATION=str(work / "index"),
        )
        tree = Tree(secrets.token_hex(6))
        peaks: dict[int, tuple[str, float]] = {}
        lives: dict[int, list[float]] = {}
        done = threading.Event()
        sampler = threading.Thread(target=_sample, args=(tree, peaks, lives, done), daemon=True)
        sampler.start()
        cost = tree.run([sys.executable, "-m", "codeask", "index", str(target)], env, target)
        done.set()
        sampler.join()
        if cost.returncode != 0:
            tail = cost.stderr[-2000:]
            raise SystemExit(f"error: codeask index exited {cost.returncode}\n{tail}")
        main = max((mb for role, mb in peaks.values() if role == "main"), default=0.0)
        workers = sorted((mb for role, mb in peaks.values() if role == "worker"), reverse=True)
        size = disk_bytes(target, allocated=False) / 1e6
        return (
            f"{','.join(subset) or 'all'}: source {size:,.0f} MB; wall {cost.wall_s:.1f} s, "
            f"CPU {cost.cpu_s:.1f} s; peak tree {cost.peak_tree_mb:,.0f} MB, main "
            f"{main:,.0f} MB, workers {', '.join(f'{w:,.0f}' for w in workers) or '-'} MB "
            f"({len(workers)} processes; over the first two's lives "
            f"{', '.join(_life(v) for v in list(lives.values())[:2])} MB); "
            f"load {cost.load_before:.2f} -> {cost.load_after:.2f}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="any tree (default: the Linux 6.1 package)")
    parser.add_argument("--subset", action="append", default=[], help="a,b,c (repeatable)")
    parser.add_argument("--work", type=Path, help="where the copies go (default: cache)")
    args = parser.parse_args(argv)
    source = (args.tree or kernel_tree()).resolve()
    parent = args.work or cache_root().parent / "scale-work"
    parent.mkdir(parents=True, exist_ok=True)
    for subset in args.subset or [""]:
        print(measure(source, [s for s in subset.split(",") if s], parent), flush=True)
        print(f"# load now {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
