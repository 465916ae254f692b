"""discover: which files of a real folder get indexed, and the reason for every one that is not."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pygit2
import pytest

from codeask.config import IndexSettings
from codeask.core.source.discover import (
    DUPLICATE_DIR,
    GONE,
    INTO_IGNORED,
    LEAVES,
    Discovery,
    IgnoreRules,
    LoadedSource,
    SkippedFile,
    SourceFile,
    _read_capped,
    _read_up_to,
    check_file,
    discover,
    load_source,
)
from support.gitrepo import write_tree

NOBODY = 65534
needs_symlinks = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges")
needs_posix_modes = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")


def write(root: Path, files: Mapping[str, str | bytes]) -> None:
    """Create files (str as UTF-8, bytes as is), with their folders."""
    write_tree(root, files)


def rels(found: Discovery) -> list[str]:
    return [f.rel for f in found.files]


def reasons(found: Discovery) -> dict[str, str]:
    return {s.rel: s.reason for s in found.skipped}


def load(root: Path, rel: str, settings: IndexSettings | None = None) -> LoadedSource | SkippedFile:
    """load_source() on the SourceFile that check_file() gives for `rel`."""
    settings = settings or IndexSettings()
    source = check_file(root, rel, settings)
    assert isinstance(source, SourceFile), source
    return load_source(source, settings)


def test_empty_workspace(tmp_path: Path) -> None:
    assert discover(tmp_path, IndexSettings()) == Discovery(files=[], skipped=[])


def test_source_file_fields_and_sorted_posix_paths(tmp_path: Path) -> None:
    write(tmp_path, {"b.py": "b = 1\n", "a/z.py": "z = 1\n", "a/b/c.py": "c = 1\n"})
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["a/b/c.py", "a/z.py", "b.py"]
    first = found.files[0]
    st = (tmp_path / "a" / "b" / "c.py").stat()
    assert first == SourceFile(tmp_path, "a/b/c.py", 6, st.st_mtime_ns)
    assert first.path == str(tmp_path / "a/b/c.py")
    assert found.skipped == []


def test_binary_file_by_content_and_by_name(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"good.py": "x = 1\n", "blob.dat2": b"abc\x00def", "logo.PNG": b"\x89PNG", "lib.so": b""},
    )
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["blob.dat2", "good.py"]
    assert reasons(found) == {"logo.PNG": "binary (.png file)", "lib.so": "binary (.so file)"}
    assert load(tmp_path, "blob.dat2") == SkippedFile("blob.dat2", "binary (NUL byte)")
    assert isinstance(load(tmp_path, "good.py"), LoadedSource)


def test_non_utf8_file_and_bom(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"latin1.txt": b"hello world!\xff", "bom.py": "\ufeffx = 'é'\n", "ok.py": "y = 2\n"},
    )
    assert load(tmp_path, "latin1.txt") == SkippedFile(
        "latin1.txt", "not UTF-8 (byte 0xff at offset 12)"
    )
    loaded = load(tmp_path, "bom.py")
    raw = (tmp_path / "bom.py").read_bytes()
    assert isinstance(loaded, LoadedSource)
    assert loaded.text == "x = 'é'\n"
    assert loaded.size == len(raw)
    assert loaded.sha256 == hashlib.sha256(raw).hexdigest()
    assert rels(discover(tmp_path, IndexSettings())) == ["bom.py", "latin1.txt", "ok.py"]


def test_huge_sparse_file_is_skipped_from_stat(tmp_path: Path) -> None:
    write(tmp_path, {"small.py": "s = 1\n"})
    with open(tmp_path / "huge.log.txt", "wb") as handle:
        handle.truncate(50 * 1024 * 1024)
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["small.py"]
    assert reasons(found) == {"huge.log.txt": "too large (52428800 bytes > 1048576)"}
    assert check_file(tmp_path, "huge.log.txt", IndexSettings()) == found.skipped[0]


def test_load_source_rechecks_the_cap_on_a_file_that_grew(tmp_path: Path) -> None:
    write(tmp_path, {"grows.py": "g = 1\n"})
    settings = IndexSettings(max_file_bytes=100)
    source = check_file(tmp_path, "grows.py", settings)
    assert isinstance(source, SourceFile)
    (tmp_path / "grows.py").write_text("g = 1\n" * 50, encoding="utf-8")
    assert load_source(source, settings) == SkippedFile("grows.py", "too large (300 bytes > 100)")


def test_a_file_longer_than_its_stat_said_is_read_to_its_end_or_the_cap(tmp_path: Path) -> None:
    """The read is sized by the stat (issue 42); a file that grew after it (or a short read) is
    read on to its end, and never past the cap and one byte."""
    path = tmp_path / "grew.py"
    path.write_bytes(b"x" * 300)
    fd = os.open(path, os.O_RDONLY)
    try:
        assert _read_up_to(fd, 1001, 7) == b"x" * 300  # the stat said 6 bytes
        os.lseek(fd, 0, os.SEEK_SET)
        assert _read_up_to(fd, 101, 7) == b"x" * 101  # past the cap: cap + 1, then "too large"
    finally:
        os.close(fd)


def test_a_file_whose_stat_size_is_zero_is_read_whole() -> None:
    """procfs and similar report size 0 for files with content."""
    data, st = _read_capped("/proc/self/status", 1 << 20)
    assert st.st_size == 0 and b"Pid:" in data


def test_secrets_are_skipped_unless_disabled(tmp_path: Path) -> None:
    secrets = {
        ".env": "secret-like name (.env*)",
        ".env.production": "secret-like name (.env*)",
        "certs/server.pem": "secret-like name (*.pem)",
        "tls.key": "secret-like name (*.key)",
        "deploy/id_rsa": "secret-like name (id_rsa*)",
        "id_ed25519.pub": "secret-like name (id_ed25519*)",
        "store.p12": "secret-like name (*.p12)",
        ".npmrc": "secret-like name (.npmrc)",
        ".pypirc": "secret-like name (.pypirc)",
        ".netrc": "secret-like name (.netrc)",
    }
    write(tmp_path, {rel: "TOKEN=hunter2\n" for rel in secrets} | {"app.py": "import os\n"})
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["app.py"]
    assert reasons(found) == secrets
    assert check_file(tmp_path, ".env", IndexSettings()) == SkippedFile(".env", secrets[".env"])
    relaxed = discover(tmp_path, IndexSettings(skip_secrets=False))
    assert set(rels(relaxed)) == {*secrets, "app.py"}


def test_lockfiles_are_skipped(tmp_path: Path) -> None:
    locks = ["package-lock.json", "yarn.lock", "web/pnpm-lock.yaml", "Cargo.lock", "uv.lock"]
    locks += ["poetry.lock", "Gemfile.lock", "composer.lock", "go.sum", "Pipfile.lock"]
    write(tmp_path, {rel: "{}\n" for rel in locks} | {"package.json": "{}\n", "go.mod": "m\n"})
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["go.mod", "package.json"]
    assert reasons(found) == {rel: "lockfile" for rel in locks}


def test_minified_bundles_and_source_maps(tmp_path: Path) -> None:
    bundle = "var a=1;" * 2000  # one 16,000-character line
    normal = "function add(a, b) {\n  return a + b;\n}\n" * 60
    write(
        tmp_path,
        {
            "dist/app.min.js": bundle,
            "dist/site.min.css": "a{b:c}",
            "dist/app.js.map": "{}",
            "static/vendor.js": bundle,
            "static/theme.css": "a{b:c}" * 500,
            "src/add.js": normal,
        },
    )
    found = discover(tmp_path, IndexSettings())
    assert reasons(found) == {
        "dist/app.min.js": "minified bundle (*.min.js)",
        "dist/site.min.css": "minified bundle (*.min.css)",
        "dist/app.js.map": "source map (*.map)",
    }
    assert rels(found) == ["src/add.js", "static/theme.css", "static/vendor.js"]
    assert load(tmp_path, "static/vendor.js") == SkippedFile(
        "static/vendor.js", "minified bundle (average line 16000 chars)"
    )
    assert load(tmp_path, "static/theme.css") == SkippedFile(
        "static/theme.css", "minified bundle (average line 3000 chars)"
    )
    loaded = load(tmp_path, "src/add.js")
    assert isinstance(loaded, LoadedSource)
    assert loaded.text == normal


def test_nested_gitignore_with_negation(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.log\nbuild/\nlogs/*\n!logs/keep.txt\n/out\n# comment\n",
            "a.log": "x",
            "app.py": "x",
            "build/gen.py": "x",
            "logs/drop.txt": "x",
            "logs/keep.txt": "x",
            "out/a.py": "x",
            "docs/.gitignore": "!keep.log\n*.tmp\n!build/\n",
            "docs/keep.log": "x",
            "docs/drop.log": "x",
            "docs/scratch.tmp": "x",
            "docs/build/page.py": "x",
            "docs/out/page.py": "x",
            "lib/build/x.txt": "x",
            "lib/.gitignore": "!build/x.txt\n",
        },
    )
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == [
        ".gitignore",
        "app.py",
        "docs/.gitignore",
        "docs/build/page.py",  # the deeper file re-includes the folder
        "docs/keep.log",  # the deeper file re-includes the file
        "docs/out/page.py",  # `/out` is anchored to the root's folder
        "lib/.gitignore",
        "logs/keep.txt",  # re-included: its folder itself is not excluded
    ]
    # As in git, no file can be re-included when its parent folder is excluded.
    assert "lib/build/x.txt" not in rels(found)
    assert found.skipped == []
    settings = IndexSettings()
    assert check_file(tmp_path, "docs/drop.log", settings) is None
    assert check_file(tmp_path, "lib/build/x.txt", settings) is None
    assert check_file(tmp_path, "docs/keep.log", settings) == found.files[4]
    rules = IgnoreRules.for_root(tmp_path, settings)
    assert rules.is_ignored("build", is_dir=True)
    assert not rules.is_ignored("build", is_dir=False)  # `build/` names folders only
    assert rules.is_ignored("docs/x/y.tmp", is_dir=False)


GIT_RULES = {
    ".gitignore": "*.log\nbuild/\nlogs/*\n!logs/keep.txt\n/out\ndoc/**/gen\n!*.keep.log\na/**\n"
    "!a/b/\nfoo/**\n!foo/x.txt\n*.o.txt\n!important/*.o.txt\nvendor\n[xy].py\n?.md\n"
    "\\#hash.txt\nspace.txt \ndeep/**/z/\n",
    "docs/.gitignore": "!keep.log\n*.tmp\n!build/\n/local/\nsub2/*.txt\n",
    "docs/sub/.gitignore": "*\n!*.md\n!*/\n!.gitignore\n",
    "p/.gitignore": "/q/\n!/r.log\n",
}
GIT_TREE = """
a.log x.keep.log app.py build/gen.py logs/drop.txt logs/keep.txt out/a.py docs/out/a.py
docs/keep.log docs/drop.log docs/s.tmp docs/build/p.py docs/local/x.py docs/x/local/y.py
lib/build/x.txt doc/a/gen/x.py doc/gen/y.py doc/a/b/gen a/b/c.py a/c.py foo/x.txt foo/y.txt
m.o.txt important/m.o.txt important/sub/m.o.txt vendor/x.js src/vendor src/vendorx/ok.py
docs/sub/r.md docs/sub/r.py docs/sub/deep/q.md docs/sub/deep/q.py x.py z.py a.md ab.md #hash.txt
space.txt deep/z/k.py deep/1/2/z/k.py deep/z.py docs/sub2/t.txt docs/sub2/t.py docs/q/sub2/t.txt
p/q/w.py p/r.log p/s/q/w.py
"""
GIT_PATHS = GIT_TREE.split()


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")
def test_same_files_as_git_itself(tmp_path: Path) -> None:
    """`git ls-files --others --exclude-standard` (read-only) is the reference for every rule."""
    pygit2.init_repository(str(tmp_path))
    write(tmp_path, GIT_RULES | dict.fromkeys(GIT_PATHS, "x"))
    home = tmp_path / ".git"  # no global or system git config may add excludes
    env = os.environ | {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"HOME": str(home), "XDG_CONFIG_HOME": str(home)}
    listing = subprocess.run(
        ["git", "ls-files", "--others", "--exclude-standard", "-z"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    expected = sorted(path for path in listing.split("\0") if path)
    assert len(expected) == 22
    assert rels(discover(tmp_path, IndexSettings())) == expected


def test_negated_folder_does_not_reinclude_files_another_file_excludes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.log\n",
            ".codeaskignore": "!node_modules/\n",
            "node_modules/pkg/index.js": "x",
            "node_modules/pkg/debug.log": "x",
        },
    )
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == [".codeaskignore", ".gitignore", "node_modules/pkg/index.js"]


def test_ignore_file_with_bom_crlf_and_an_invalid_line(tmp_path: Path) -> None:
    write(
        tmp_path, {".gitignore": b"\xef\xbb\xbf*.tmp\r\n!\r\nbuild/\r\n", "a.tmp": "x", "a.py": "x"}
    )
    write(tmp_path, {"build/b.py": "x"})
    assert rels(discover(tmp_path, IndexSettings())) == [".gitignore", "a.py"]


def test_git_info_exclude_in_a_real_repository(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path))
    exclude = Path(repo.path) / "info" / "exclude"
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("# local only\nscratch/\n*.bak\n", encoding="utf-8")
    write(tmp_path, {"main.py": "x", "scratch/notes.py": "x", "old.py.bak": "x", "pkg/m.py": "x"})
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["main.py", "pkg/m.py"]  # nothing from .git either
    assert check_file(tmp_path, "scratch/notes.py", IndexSettings()) is None
    assert check_file(tmp_path, ".git/HEAD", IndexSettings()) is None


def test_gitignore_above_a_root_inside_a_repository(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path))
    write(
        tmp_path,
        {
            ".gitignore": "*.gen.py\nbuild/\n",
            "svc/api/a.py": "x",
            "svc/api/a.gen.py": "x",
            "build/sub/b.py": "x",
            "build/sub/b.gen.py": "x",
        },
    )
    assert rels(discover(tmp_path / "svc" / "api", IndexSettings())) == ["a.py"]
    # Opening a folder the repository ignores means the user wants it: not an empty index.
    assert rels(discover(tmp_path / "build" / "sub", IndexSettings())) == ["b.py"]


def test_codeaskignore_overrides_a_default_exclude(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {
        "app.py": "x",
        "node_modules/lib/index.js": "x",
        ".venv/lib/site.py": "x",
        "pkg/__pycache__/m.cpython-311.pyc": b"\x00",
        "venv/bin/activate": "x",
        ".DS_Store": b"\x00",
    }
    write(tmp_path, files)
    assert rels(discover(tmp_path, IndexSettings())) == ["app.py"]
    write(tmp_path, {".codeaskignore": "!node_modules/\n*.md\n"})
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == [".codeaskignore", "app.py", "node_modules/lib/index.js"]
    settings = IndexSettings(exclude=["app.py", "!venv/"])
    assert rels(discover(tmp_path, settings)) == [
        ".codeaskignore",
        "node_modules/lib/index.js",
        "venv/bin/activate",
    ]


def test_always_ignored_folders_and_ignored_dirs(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.py": "x",
            ".codeask/meta.bin": "x",
            ".hg/store": "x",
            ".svn/entries": "x",
            "relocated/index.bin": "x",
            ".codeaskignore": "!.codeask/\n",  # cannot re-include our own index folder
        },
    )
    found = discover(tmp_path, IndexSettings(), ignored_dirs=[tmp_path / "relocated"])
    assert rels(found) == [".codeaskignore", "a.py"]


@needs_symlinks
def test_symlink_loop_terminates_and_files_appear_once(tmp_path: Path) -> None:
    write(tmp_path, {"a/mod.py": "x", "b/other.py": "x"})
    (tmp_path / "a" / "loop").symlink_to("..", target_is_directory=True)
    (tmp_path / "a" / "self").symlink_to(".", target_is_directory=True)
    (tmp_path / "b" / "ping").symlink_to("../c", target_is_directory=True)
    (tmp_path / "c").symlink_to("b", target_is_directory=True)
    (tmp_path / "alias.py").symlink_to("a/mod.py")
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["a/mod.py", "alias.py", "b/other.py"]
    assert reasons(found) == {
        "a/loop": DUPLICATE_DIR,
        "a/self": DUPLICATE_DIR,
        "b/ping": DUPLICATE_DIR,
        "c": DUPLICATE_DIR,
    }
    assert check_file(tmp_path, "c/other.py", IndexSettings()) == SkippedFile(
        "c/other.py", DUPLICATE_DIR
    )


@needs_symlinks
def test_symlinks_into_ignored_paths_or_to_secrets(tmp_path: Path) -> None:
    write(tmp_path, {"vendor/real/lib.py": "x", ".gitignore": "vendor/\n", "app.py": "x"})
    (tmp_path / "lib").symlink_to("vendor/real", target_is_directory=True)
    (tmp_path / "env").symlink_to(".env.local")
    write(tmp_path, {".env.local": "K=v"})
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == [".gitignore", "app.py"]
    assert reasons(found) == {
        ".env.local": "secret-like name (.env*)",
        "env": "secret-like name (.env*)",  # the link's target name counts too
        "lib": INTO_IGNORED,
    }


@needs_symlinks
def test_symlink_out_of_the_workspace(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    write(outside, {"passwd": "root:x:0:0\n", "dir/f.py": "x"})
    write(root, {"main.py": "x"})
    (root / "passwd").symlink_to(outside / "passwd")
    (root / "ext").symlink_to(outside / "dir", target_is_directory=True)
    (root / "dangling.py").symlink_to(root / "nowhere.py")
    found = discover(root, IndexSettings())
    assert rels(found) == ["main.py"]
    assert reasons(found) == {"dangling.py": "broken symlink", "ext": LEAVES, "passwd": LEAVES}
    assert check_file(root, "ext/f.py", IndexSettings()) == SkippedFile("ext/f.py", LEAVES)
    assert check_file(root, "../outside/passwd", IndexSettings()) == SkippedFile(
        "../outside/passwd", "outside the workspace"
    )


def test_file_deleted_between_discover_and_load(tmp_path: Path) -> None:
    write(tmp_path, {"keep.py": "k = 1\n", "gone.py": "g = 1\n"})
    found = discover(tmp_path, IndexSettings())
    gone = next(f for f in found.files if f.rel == "gone.py")
    (tmp_path / "gone.py").unlink()
    assert load_source(gone, IndexSettings()) == SkippedFile("gone.py", GONE)
    assert check_file(tmp_path, "gone.py", IndexSettings()) == SkippedFile("gone.py", GONE)
    assert isinstance(load(tmp_path, "keep.py"), LoadedSource)


def test_check_file_agrees_with_discover(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            ".gitignore": "*.tmp\n",
            "src/a.py": "x",
            "src/b.tmp": "x",
            "yarn.lock": "x",
            "img/x.jpg": b"\xff",
            "node_modules/m.js": "x",
        },
    )
    settings = IndexSettings()
    found = discover(tmp_path, settings)
    verdicts: list[SourceFile | SkippedFile] = [*found.files, *found.skipped]
    for verdict in verdicts:
        assert check_file(tmp_path, verdict.rel, settings) == verdict
    assert check_file(tmp_path, str(tmp_path / "src" / "a.py"), settings) == found.files[1]
    assert check_file(tmp_path, "./src/b.tmp", settings) is None
    assert check_file(tmp_path, "node_modules/m.js", settings) is None
    assert check_file(tmp_path, "src", settings) == SkippedFile("src", "a folder, not a file")


def test_discovering_1600_files_is_fast(tmp_path: Path) -> None:
    write(tmp_path, {".gitignore": "*.gen\n", "pkg/.gitignore": "!keep.gen\n"})
    for d in range(80):
        folder = tmp_path / "pkg" / f"mod{d}" / "sub"
        folder.mkdir(parents=True)
        for f in range(20):
            (folder / f"file{f}.py").write_text("x = 1\n", encoding="utf-8")
    start = time.perf_counter()
    found = discover(tmp_path, IndexSettings())
    elapsed = time.perf_counter() - start
    assert len(found.files) == 1602
    assert elapsed < 0.5, f"discover took {elapsed:.3f} s"


# --- unreadable files: root reads chmod-000 files, so the check runs as an unprivileged user ---


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A temp folder an unprivileged user can traverse (pytest's basetemp is root-only)."""
    folder = Path(tempfile.mkdtemp(prefix="codeask-discover-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


def _child(conn: Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        conn.send(("ok", fn(*args)))
    except BaseException as exc:
        conn.send(("error", repr(exc)))
    finally:
        conn.close()


def as_unprivileged(fn: Callable[..., Any], *args: Any) -> Any:
    """fn(*args) with real permission checks: in a forked child that dropped root, if needed."""
    if os.geteuid() != 0:
        return fn(*args)
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, fn, args))
    child.start()
    send.close()
    assert receive.poll(30), "unprivileged child did not answer"
    status, value = receive.recv()
    child.join(10)
    assert status == "ok", value
    return value


def _discover_and_load(root: str) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """Plain data only, so it crosses the process boundary unchanged."""
    settings = IndexSettings()
    found = discover(Path(root), settings)
    loads = {}
    for source in found.files:
        loaded = load_source(source, settings)
        loads[source.rel] = loaded.reason if isinstance(loaded, SkippedFile) else "loaded"
    return rels(found), reasons(found), loads


@needs_posix_modes
def test_unreadable_file_and_folder(shared_tmp: Path) -> None:
    write(shared_tmp, {"good.py": "g = 1\n", "private.py": "p = 1\n", "locked/inner.py": "i\n"})
    for path in shared_tmp.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    (shared_tmp / "private.py").chmod(0)
    (shared_tmp / "locked").chmod(0)
    files, skipped, loads = as_unprivileged(_discover_and_load, str(shared_tmp))
    assert files == ["good.py", "private.py"]  # stat needs no read permission
    assert skipped == {"locked": "unreadable folder: Permission denied"}
    assert loads == {"good.py": "loaded", "private.py": "unreadable: Permission denied"}


@needs_posix_modes
def test_fifo_is_not_a_regular_file(tmp_path: Path) -> None:
    write(tmp_path, {"a.py": "x"})
    os.mkfifo(tmp_path / "pipe")
    found = discover(tmp_path, IndexSettings())
    assert rels(found) == ["a.py"]
    assert reasons(found) == {"pipe": "not a regular file"}
