"""The report set's corpora: each repository's tree at its pinned commit, as a folder.

    python fetch_corpus.py --instances dev.jsonl                 # export what is missing
    python fetch_corpus.py --instances dev.jsonl --print-roots   # package, version, folder

The same interface as the Python set's fetch_corpus.py (benchmarks/retrieval.py calls it). A
corpus is `git archive` of the pinned commit (no history: the eval searches the tree) into
`<cache>/reports/src/<package>-<version>` (cache: $BENCHKIT_CACHE, else ~/.cache/codeask-eval).
Third-party code copied in, generated files and the test and benchmark trees are left out
(PRUNE: `vendor/`, `third_party/`, `googletest*/`, `dist/`, lock files, `test/`, `tests/`,
`__tests__/`, `testdata/`, ...): the answers are never there (tests are demoted for a report
anyway), and embedding them with MiniLM on 2 shared cores cost hours (yaml-cpp's bundled
googletest alone was 90% of its tree). Docs and examples stay. The commit
comes from a local clone when $CODEASK_REPORTS_MIRRORS names a folder of
`<owner>+<name>/repo` git directories, else from a clone of https://github.com/<owner>/<name>.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

#: Folder and file names left out of every corpus, anywhere in the tree.
PRUNE = (
    *("vendor", "third_party", "googletest*", "dist", "package-lock.json", "yarn.lock"),
    *("test", "tests", "test-*", "__tests__", "__performance_tests__", "testdata", "benchmark*"),
)


def cache() -> Path:
    """Where the corpora are unpacked."""
    base = os.environ.get("BENCHKIT_CACHE") or Path.home() / ".cache" / "codeask-eval"
    return Path(base) / "reports" / "src"


def wanted(instances: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(package, version) → (owner/name, full commit)."""
    found = {}
    for line in instances.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            found[(row["package"], row["version"])] = (row["repo"], row["version"])
    return found


def git_dir(repo: str, work: Path) -> Path:
    """A git directory holding `repo`'s history: the local mirror, else a fresh clone."""
    mirrors = os.environ.get("CODEASK_REPORTS_MIRRORS")
    if mirrors:
        local = Path(mirrors) / repo.replace("/", "+") / "repo"
        if local.is_dir():
            return local
    target = work / repo.replace("/", "+")
    url = f"https://github.com/{repo}.git"
    subprocess.run(["git", "clone", "--bare", "--quiet", url, str(target)], check=True)
    return target


def export(repo: str, commit: str, folder: Path) -> None:
    """The tree at `commit` into `folder` (written beside it, then renamed: never half there)."""
    with tempfile.TemporaryDirectory(dir=folder.parent) as work:
        source = git_dir(repo, Path(work))
        archive = Path(work) / "tree.tar"
        with archive.open("wb") as out:
            subprocess.run(["git", "-C", str(source), "archive", commit], check=True, stdout=out)
        unpacked = Path(work) / "tree"
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
        prune(unpacked)
        unpacked.rename(folder)


def prune(tree: Path) -> None:
    """Remove what PRUNE names from `tree`."""
    for path in sorted(tree.rglob("*"), key=lambda p: -len(p.parts)):
        if any(fnmatch.fnmatch(path.name, pattern) for pattern in PRUNE):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--instances", type=Path, default=Path(__file__).parent / "dev.jsonl")
    parser.add_argument("--print-roots", action="store_true")
    args = parser.parse_args(argv)
    root = cache()
    root.mkdir(parents=True, exist_ok=True)
    for (package, version), (repo, commit) in sorted(wanted(args.instances).items()):
        folder = root / f"{package}-{version}"
        if args.print_roots:
            print(f"{package}\t{version}\t{folder}")
        elif not folder.is_dir():
            print(f"exporting {repo} at {commit}", file=sys.stderr)
            export(repo, commit, folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
