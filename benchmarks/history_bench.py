"""History indexing throughput on real project history, and the depth cap on a huge history.

    python -m benchmarks.history_bench --package pytest
    python -m benchmarks.history_bench --synthetic 50000

`--package` replays the released sdists of one eval package (every version in dev.jsonl's
corpora, oldest first) as consecutive commits of a new repository: real code, real diffs
between releases. `--synthetic N` builds an N-commit history with pygit2 and times the first
history sync under the default depth cap (2,000 commits): lexical work only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

import pygit2
from pygit2.enums import FileMode

from benchmarks.retrieval import corpus_roots, default_eval_dir, require
from codeask.config import HistorySettings, build_settings
from codeask.core.git.sync import sync_history
from codeask.core.indexer import FolderIndex


def measure(
    root: Path, settings: HistorySettings | None = None, out: TextIO = sys.stdout
) -> dict[str, float]:
    """Sync a repository from scratch and print commits/s and hunks/s."""
    start = time.perf_counter()
    delta = sync_history(root, settings or HistorySettings(), set())
    seconds = max(time.perf_counter() - start, 1e-9)
    commits = len(delta.added)
    hunks = sum(len(chunks) - 1 for chunks in delta.added.values())
    result = {
        "commits": float(commits),
        "hunks": float(hunks),
        "seconds": seconds,
        "commits_per_s": commits / seconds,
        "hunks_per_s": hunks / seconds,
    }
    print(
        f"history sync: {commits} commits, {hunks} hunks in {seconds:.2f}s "
        f"({result['commits_per_s']:.0f} commits/s, {result['hunks_per_s']:.0f} hunks/s)",
        file=out,
    )
    return result


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def replay_releases(package: str, target: Path, eval_dir: Path) -> pygit2.Repository:
    """One commit per release of `package`, with the release's whole tree."""
    instances = require(eval_dir / "dev.jsonl", "the eval's questions file")
    roots = corpus_roots(eval_dir, instances, fetch=False)
    versions = sorted((v for p, v in roots if p == package), key=_version_key)
    repo = pygit2.init_repository(str(target), bare=True)
    parents: list[pygit2.Oid] = []
    for number, version in enumerate(versions):
        index = pygit2.Index()
        for path in sorted(roots[(package, version)].rglob("*")):
            if path.is_file() and path.stat().st_size < 1_000_000:
                rel = path.relative_to(roots[(package, version)]).as_posix()
                blob = repo.create_blob(path.read_bytes())
                index.add(pygit2.IndexEntry(rel, blob, FileMode.BLOB))
        tree = index.write_tree(repo)
        sig = pygit2.Signature("release bot", "bot@example.com", 1_600_000_000 + number * 86_400, 0)
        oid = repo.create_commit("HEAD", sig, sig, f"Release {package} {version}", tree, parents)
        parents = [oid]
    return repo


def synthetic_history(commits: int, target: Path) -> None:
    """`commits` small commits touching a handful of files each."""
    repo = pygit2.init_repository(str(target), bare=True)
    index = pygit2.Index()
    parents: list[pygit2.Oid] = []
    for number in range(commits):
        rel = f"pkg/mod{number % 50}.py"
        text = "".join(f"def f_{number}_{i}(x):\n    return x + {i}\n" for i in range(3))
        index.add(pygit2.IndexEntry(rel, repo.create_blob(text.encode()), FileMode.BLOB))
        tree = index.write_tree(repo)
        sig = pygit2.Signature("dev", "dev@example.com", 1_600_000_000 + number * 60, 0)
        parents = [repo.create_commit("HEAD", sig, sig, f"Change {number}", tree, parents)]


def checkout(bare: Path, work: Path) -> Path:
    """A working copy of a bare repository (history works on working trees)."""
    pygit2.clone_repository(str(bare), str(work))
    return work


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--package", default="pytest")
    parser.add_argument("--synthetic", type=int, default=0, help="N commits instead of a package")
    parser.add_argument(
        "--eval-dir",
        type=Path,
        default=default_eval_dir(),
        help="the eval folder (default: $CODEASK_EVAL_DIR, else ../shared/eval beside the repo)",
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="codeask-history-"))
    if args.synthetic:
        started = time.perf_counter()
        synthetic_history(args.synthetic, work / "bare")
        print(
            f"built {args.synthetic} commits in {time.perf_counter() - started:.1f}s",
            file=sys.stderr,
        )
    else:
        replay_releases(args.package, work / "bare", args.eval_dir)
    root = checkout(work / "bare", work / "repo")
    measure(root, HistorySettings())
    settings, _ = build_settings({"index": {"location": str(work / "index")}})
    folder = FolderIndex(root, settings)
    started = time.perf_counter()
    report = folder.refresh(embed=False)
    seconds = time.perf_counter() - started
    hunks = sum(c.kind == "hunk" for c in folder.storage.all_chunks())  # one commit chunk each
    print(
        f"first index (files + history, lexical): {report.commits_added} commits, {hunks} hunks, "
        f"{report.files_indexed} files in {seconds:.1f}s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
