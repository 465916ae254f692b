"""Round 3, item 9: the index never widens a file's permissions.

A 0600 file's text lands in the index (chunks, the lexical table, the embedding cache); those
were written 0644 in 0755 folders, so another local user could grep what they could not `cat`.
Now every folder the index and its caches write is 0700 and every file 0600 whatever the umask,
and an index made by an older version (group/other bits set) is tightened by the next writer.
The real `codeask` CLI indexes a real git repository under umask 022 here; when the tests run
as root, the user `nobody` also tries to read the index.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_secrets import cli_env, git, write

from codeask.core.storage import writer_lock
from support import CODEASK_SCRIPT
from support import codeask as run_codeask

pytestmark = pytest.mark.slow

MARKER = "zq7private7marker"
PRIVATE_TEXT = f'def private_helper():\n    """Only the owner may read {MARKER}."""\n    return 1\n'


def codeask(base: Path, root: Path, *args: str) -> str:
    """The real CLI under umask 022 (the usual default): what it writes is 0644 unless it
    asks for less. Fails the test on a non-zero exit; returns stderr."""
    return run_codeask(
        *args,
        cwd=root,
        env=cli_env(base),
        timeout=600,
        check=True,
        launcher=CODEASK_SCRIPT,
        preexec_fn=lambda: os.umask(0o022),
    ).stderr


def make_repo(base: Path) -> Path:
    """A git repository with one 0600 file (the private one) and one ordinary file."""
    root = base / "proj"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write(root, "src/private.py", PRIVATE_TEXT)
    (root / "src/private.py").chmod(0o600)
    write(root, "src/public.py", "def public_helper():\n    return 2\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    return root


def too_open(*folders: Path) -> list[str]:
    """Every folder and file under `folders` (symlinks aside) with a group or other bit."""
    found = []
    for folder in folders:
        for path in [folder, *folder.rglob("*")]:
            mode = path.lstat().st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                found.append(f"{stat.S_IMODE(mode):o} {path}")
    return found


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, Path]:
    """(base, root): the repository indexed in full (lexical, history, both vector tiers)."""
    root = make_repo(tmp_path)
    codeask(tmp_path, root, "index", "--full", str(root))
    return tmp_path, root


def test_every_index_and_cache_file_is_owner_only(indexed: tuple[Path, Path]) -> None:
    base, root = indexed
    folder, cache = root / ".codeask", base / "cache" / "codeask"
    stored = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert MARKER.encode() in stored  # the private text is in the index: its modes matter
    names = {p.name for p in folder.rglob("*")}
    assert {"chunks.rec", "manifest.json", "history.msgpack", "writer.lock"} <= names
    assert any(cache.glob("embeddings/*.sqlite")), sorted(cache.rglob("*"))
    # A reader (it may add -wal/-shm beside the lexical table) and a rebuild request.
    out = codeask(base, root, "search", "private helper", "--scope", "all")
    writer_lock.request(folder, "rebuild")
    assert (folder / "requests" / "rebuild").is_file()
    assert too_open(folder, cache) == [], out


def test_an_older_index_is_tightened_by_the_next_writer(indexed: tuple[Path, Path]) -> None:
    """An index written by an older version: 0755 folders, 0644 files, a readable -wal."""
    base, root = indexed
    folder, cache = root / ".codeask", base / "cache" / "codeask"
    for path in [folder, cache, *folder.rglob("*"), *cache.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    (folder / "lexical.sqlite-wal").write_bytes(b"")
    (folder / "lexical.sqlite-wal").chmod(0o644)
    assert too_open(folder)
    write(root, "src/later.py", "def later():\n    return 3\n")
    codeask(base, root, "index", "--full", str(root))
    assert too_open(folder) == []
    assert too_open(cache / "embeddings") == []  # both vector caches were written to


@pytest.fixture
def world_traversable() -> Iterator[Path]:
    """A folder another user can reach (pytest's own tmp folder is 0700)."""
    path = Path(tempfile.mkdtemp(prefix="codeask-private-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another local user")
def test_another_local_user_cannot_read_the_index(world_traversable: Path) -> None:
    """`nobody` reads an ordinary 0644 source (so the path is open to it) but finds nothing
    of the 0600 one, neither by `cat` nor by grepping the index."""
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user `nobody` here")
    base = world_traversable
    root = make_repo(base)
    for path in (root, root / "src"):
        path.chmod(0o755)
    codeask(base, root, "index", "--full", str(root))

    def as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
        command = ["runuser", "-u", "nobody", "--", *argv]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    assert as_nobody("cat", str(root / "src/public.py")).returncode == 0  # the control
    assert MARKER not in as_nobody("cat", str(root / "src/private.py")).stdout
    for folder in (root / ".codeask", base / "cache"):
        found = as_nobody("grep", "-r", "-a", "-l", MARKER, str(folder))
        assert found.stdout == "" and found.returncode != 0, found
