"""benchmarks.debian_history: a Debian patch series replayed as git commits, from local files.

A synthetic source package (an orig tarball, a debian tarball with three patches in its series:
DEP-3, git format-patch, one whose context is wrong) built with --from-dir: no network.
"""

from __future__ import annotations

import difflib
import io
import itertools
import subprocess
import tarfile
from pathlib import Path

import msgspec
import pytest
from benchmarks import debian_history

PARSER_OLD = "def parse(text):\n    return text.split(',')\n"
PARSER_NEW = "def parse(text):\n    return [t.strip() for t in text.split(',')]\n"
UTIL_OLD = "int add(int a, int b) {\n    return a + b;\n}\n"
UTIL_NEW = "int add(int a, int b) {\n    /* no overflow */\n    return a + b;\n}\n"
HELP_NEW = "int help(void) {\n    return 0;\n}\n"


def _diff(path: str, old: str, new: str) -> str:
    """A unified diff of one file, `a/` and `b/` prefixes as quilt and git write them."""
    before = old.splitlines(keepends=True)
    after = new.splitlines(keepends=True)
    source = "/dev/null" if not old else f"a/{path}"
    return "".join(difflib.unified_diff(before, after, source, f"b/{path}"))


def _tarball(path: Path, files: dict[str, str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 1_600_000_000
            tar.addfile(info, io.BytesIO(data))


DEP3 = (
    "Description: Strip blanks around each field the parser returns\n"
    " Fields read from a config line kept their spaces.\n"
    " .\n"
    " The second paragraph of the long description.\n"
    "Author: Ada Lovelace <ada@example.org>\n"
    "Origin: upstream, https://example.org/commit/1\n"
    "Bug-Debian: https://bugs.debian.org/1\n"
    "Last-Update: 2023-04-05\n"
    "---\n"
)
FORMAT_PATCH = (
    "From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"
    "From: Grace Hopper <grace@example.org>\n"
    "Date: Tue, 2 May 2023 10:00:00 +0200\n"
    "Subject: [PATCH 2/3] util: guard add against overflow and add a help\n"
    " function\n"
    "Origin: upstream, https://example.org/commit/2\n"
    "\n"
    "The sum of two large ints overflowed.\n"
    "\n"
    "Signed-off-by: Grace Hopper <grace@example.org>\n"
    "---\n"
    " src/util.c | 1 +\n"
    " 1 file changed, 1 insertion(+)\n"
    "\n"
)
BROKEN = (
    "Description: Change a line that is not there\n"
    "Author: Nobody <nobody@example.org>\n"
    "\n"
    "--- a/src/parser.py\n"
    "+++ b/src/parser.py\n"
    "@@ -1,2 +1,2 @@\n"
    " def nothing_like_this():\n"
    "-    return 1\n"
    "+    return 2\n"
)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A folder with pkg_1.0.orig.tar.gz and pkg_1.0-1.debian.tar.gz (no .dsc)."""
    folder = tmp_path / "src"
    folder.mkdir()
    _tarball(
        folder / "pkg_1.0.orig.tar.gz",
        {
            "pkg-1.0/src/parser.py": PARSER_OLD,
            "pkg-1.0/src/util.c": UTIL_OLD,
            "pkg-1.0/README": "pkg\n",
            "pkg-1.0/.gitignore": "*.log\n",
            "pkg-1.0/build.log": "an ignored file is still part of the tarball\n",
        },
    )
    series = "# applied in this order\n01-strip.patch\n\n02-overflow.patch -p1\n03-broken.patch\n"
    changelog = (
        "pkg (1.0-1) unstable; urgency=medium\n\n  * Initial release.\n\n"
        " -- Deb Maintainer <deb@example.org>  Mon, 05 Jun 2023 12:00:00 +0000\n"
    )
    format_patch = (
        FORMAT_PATCH
        + f"diff --git a/src/util.c b/src/util.c\n{_diff('src/util.c', UTIL_OLD, UTIL_NEW)}"
        + "diff --git a/src/help.c b/src/help.c\nnew file mode 100644\n"
        + _diff("src/help.c", "", HELP_NEW)
        + "--\n2.39.2\n"
    )
    _tarball(
        folder / "pkg_1.0-1.debian.tar.gz",
        {
            "debian/changelog": changelog,
            "debian/patches/series": series,
            "debian/patches/01-strip.patch": DEP3 + _diff("src/parser.py", PARSER_OLD, PARSER_NEW),
            "debian/patches/02-overflow.patch": format_patch,
            "debian/patches/03-broken.patch": BROKEN,
        },
    )
    return folder


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout


def test_each_patch_is_a_commit_with_its_own_message_author_and_date(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "repo"
    assert debian_history.main(["--from-dir", str(source), "--out", str(repo)]) == 0
    out = capsys.readouterr().out
    assert "skipped 03-broken.patch: git apply:" in out
    assert "3 patches in the series: 2 applied, 1 skipped" in out

    log = _git(repo, "log", "--format=%H%x00%an <%ae>%x00%aI%x00%B%x01").split("\x01")
    commits = [entry.strip("\n").split("\x00") for entry in log if entry.strip()]
    assert len(commits) == 3  # the orig tree, then the two patches that applied, newest first
    (overflow, ov_author, ov_date, ov_msg), (strip, st_author, st_date, st_msg) = [
        c for c in commits[:2]
    ]
    base_sha, base_msg = commits[2][0], commits[2][3]

    assert ov_msg.strip() == (
        "util: guard add against overflow and add a help function\n\n"
        "The sum of two large ints overflowed.\n\n"
        "Signed-off-by: Grace Hopper <grace@example.org>"
    )
    assert ov_author == "Grace Hopper <grace@example.org>"
    assert ov_date == "2023-05-02T10:00:00+02:00"
    assert st_msg.strip() == (
        "Strip blanks around each field the parser returns\n\n"
        "Fields read from a config line kept their spaces.\n\n"
        "The second paragraph of the long description."
    )
    assert st_author == "Ada Lovelace <ada@example.org>"
    assert st_date.startswith("2023-04-05T00:00:00")
    assert "orig tarball" in base_msg

    def changed(sha: str) -> list[str]:
        return sorted(_git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", sha).split())

    assert changed(overflow) == ["src/help.c", "src/util.c"]
    assert changed(strip) == ["src/parser.py"]
    assert sorted(_git(repo, "ls-tree", "-r", "--name-only", base_sha).split()) == [
        ".gitignore",
        "README",
        "build.log",
        "src/parser.py",
        "src/util.c",
    ]
    assert (repo / "src" / "parser.py").read_text() == PARSER_NEW
    assert not (repo / "debian").exists()
    assert _git(repo, "status", "--porcelain") == ""  # a failed patch leaves nothing behind

    # The committer is who published the series; committer dates rise patch by patch.
    committers = _git(repo, "log", "--format=%cn <%ce> %ct").splitlines()
    assert all(c.startswith("Deb Maintainer <deb@example.org>") for c in committers)
    times = [int(c.rsplit(" ", 1)[1]) for c in committers]
    assert times == sorted(times, reverse=True) and len(set(times)) == 3

    manifest = msgspec.json.decode(
        (repo / ".git" / debian_history.MANIFEST).read_bytes(), type=debian_history.Manifest
    )
    assert (manifest.package, manifest.version) == ("pkg", "1.0-1")
    assert [(p.name, p.applied) for p in manifest.patches] == [
        ("01-strip.patch", True),
        ("02-overflow.patch", True),
        ("03-broken.patch", False),
    ]
    assert manifest.patches[2].subject == "Change a line that is not there"


def test_a_patch_without_description_is_named_after_its_file() -> None:
    meta = debian_history.parse_header("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", "fix-the-x.patch")
    assert (meta.subject, meta.described, meta.author, meta.date) == (
        "fix the x",
        False,
        None,
        None,
    )


def test_debian_versions_sort_as_dpkg_sorts_them() -> None:
    ordered = ["1.0~rc1-1", "1.0-1", "1.0-1+deb12u1", "1.0-1+deb12u10", "1.0.1-1", "1:0.9-1"]
    for older, newer in itertools.pairwise(ordered):
        assert debian_history.compare_versions(older, newer) == -1, (older, newer)
        assert debian_history.compare_versions(newer, older) == 1
    assert debian_history.compare_versions("7.88.1-10+deb12u5", "7.88.1-10+deb12u15") == -1
