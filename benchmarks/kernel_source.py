"""The Linux 6.1 source tree from Debian's `linux-source-6.1` package, fetched and unpacked once.

The issue measured this tree (78,200 files, 1.5 GB); any user on Debian or Ubuntu-with-Debian-
sources gets the same bytes with `apt-get download`, no root needed. The .deb and the unpacked
tree stay in `~/.cache/codeask-eval/linux-source/`; a second run reuses them.
"""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

PACKAGE = "linux-source-6.1"
TREE_NAME = "linux-source-6.1"


def cache_root() -> Path:
    base = os.environ.get("CODEASK_EVAL_CACHE") or str(Path.home() / ".cache" / "codeask-eval")
    return Path(base) / "linux-source"


def kernel_tree(cache: Path | None = None) -> Path:
    """The unpacked tree, downloading and unpacking the package the first time."""
    cache = cache or cache_root()
    tree = cache / TREE_NAME
    if (tree / "Makefile").is_file() and (tree / "kernel").is_dir():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    debs = sorted(cache.glob(f"{PACKAGE}_*.deb"))
    if not debs:
        fetched = subprocess.run(
            ["apt-get", "download", PACKAGE], cwd=cache, capture_output=True, text=True
        )
        debs = sorted(cache.glob(f"{PACKAGE}_*.deb"))
        if not debs:
            raise SystemExit(
                f"error: `apt-get download {PACKAGE}` fetched nothing into {cache} "
                f"(exit {fetched.returncode}): {fetched.stderr.strip()[-400:]}\n"
                "name another tree with --tree DIR"
            )
    tarball = cache / "usr" / "src" / f"{PACKAGE}.tar.xz"
    if not tarball.is_file():
        # the .deb holds the tarball; dpkg-deb unpacks without root
        subprocess.run(["dpkg-deb", "-x", str(debs[-1]), str(cache)], check=True)
    with tarfile.open(tarball) as archive:
        archive.extractall(cache, filter="data")
    if not (tree / "Makefile").is_file():
        raise SystemExit(f"error: {tarball} did not unpack into {tree}")
    return tree
