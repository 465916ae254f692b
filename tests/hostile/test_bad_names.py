"""File names and file types that used to stop indexing for good (issue 11, item 7).

A name that is not UTF-8 made every `codeask index` fail (msgspec cannot encode the surrogate
escapes Python uses for such bytes); a newline in a name split `path:line` output lines; a
workspace of `/` walked into `/proc`. Each case runs the real CLI on a real folder.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeask.config import IndexSettings
from codeask.core.source.discover import NOT_UTF8, check_file, discover
from codeask.core.source.names import display_path, is_utf8
from codeask.core.source.specialfs import SpecialMounts, parse_mountinfo
from support import codeask as run_codeask
from support import in_process_env
from support.lsp_harness import session

BAD = os.fsdecode(b"bad\xff\xfe.py")  # surrogate-escaped, as os.listdir returns it
BAD_DIR = os.fsdecode(b"dir\xe9")
NEWLINE = "new\nline.py"
CONTROL = "esc\x1b[31mred\r.py"


def _function(name: str) -> str:
    return f"def {name}():\n    return {name!r}\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    """Good files beside every kind of hostile entry; the socket stays bound for the test."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "good.py").write_text(_function("good_function"))
    (root / BAD).write_text(_function("bad_name_function"))
    (root / BAD_DIR).mkdir()
    (root / BAD_DIR / "inner.py").write_text(_function("inside_bad_folder"))
    (root / NEWLINE).write_text(_function("newline_function"))
    (root / CONTROL).write_text(_function("control_function"))
    os.mkfifo(root / "pipe.py")
    os.symlink(root / "pipe.py", root / "link_to_pipe.py")
    os.symlink("/proc/self", root / "proc_self")
    os.symlink("/dev/zero", root / "zero.py")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock.py"))
    yield root
    sock.close()


def codeask(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI; a timeout, so a walker that opens the fifo fails instead of hanging."""
    return run_codeask(*args, env=in_process_env(**(env or {})), timeout=120)


def _indexed(root: Path) -> subprocess.CompletedProcess[str]:
    run = codeask("-v", "index", "--lexical-only", str(root))
    assert run.returncode == 0, run.stderr
    return run


# ---- names -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("src/app.py", "src/app.py"),
        ("a\\b.py", "a\\b.py"),
        ("café/naïve.py", "café/naïve.py"),
        (BAD, "bad\\xff\\xfe.py"),
        (NEWLINE, "new\\nline.py"),
        (CONTROL, "esc\\x1b[31mred\\r.py"),
        ("a\\b\n", "a\\\\b\\n"),  # once escaped, a literal backslash is escaped too
        ("rtl\u202egnp.py", "rtl\\u202egnp.py"),
        ("line\u2028sep", "line\\u2028sep"),
    ],
)
def test_display_path_is_one_line_of_valid_utf8(name: str, shown: str) -> None:
    assert display_path(name) == shown
    assert "\n" not in shown and "\r" not in shown and is_utf8(shown)


@pytest.mark.slow
def test_index_skips_names_that_are_not_utf8_and_says_which(workspace: Path) -> None:
    run = _indexed(workspace)
    assert f"skipped bad\\xff\\xfe.py: {NOT_UTF8}" in run.stderr
    assert f"skipped dir\\xe9: {NOT_UTF8}" in run.stderr
    again = codeask("index", "--lexical-only", str(workspace))  # the index saved and reloads
    assert again.returncode == 0, again.stderr
    missing = codeask("search", "bad_name_function", "--mode", "lexical", "--root", str(workspace))
    assert "bad_name_function" not in missing.stdout


@pytest.mark.slow
def test_special_files_are_skipped_never_opened(workspace: Path) -> None:
    run = _indexed(workspace)
    for name in ("pipe.py", "link_to_pipe.py", "sock.py", "zero.py"):
        assert f"skipped {name}: " in run.stderr, name
    assert "skipped proc_self: symlink leaves the workspace" in run.stderr


def _hit_lines(stdout: str) -> list[str]:
    """Hit headers: every line that is not an indented preview line."""
    return [line for line in stdout.splitlines() if not line.startswith("    ")]


@pytest.mark.slow
def test_search_prints_one_line_per_hit_with_names_escaped(workspace: Path) -> None:
    _indexed(workspace)
    query = "newline_function control_function good_function"
    args = ("search", query, "--mode", "lexical", "--root", str(workspace))
    text = codeask(*args)
    assert text.returncode == 0, text.stderr
    hits = json.loads(codeask(*args, "--json").stdout)["results"]
    assert {h["relative_path"] for h in hits} >= {NEWLINE, CONTROL, "good.py"}  # JSON: real names
    lines = _hit_lines(text.stdout)
    assert len(lines) == len(hits)
    assert any(line.startswith("new\\nline.py:1-2  function newline_function") for line in lines)
    assert any(line.startswith("esc\\x1b[31mred\\r.py:1-2") for line in lines)
    assert "\x1b" not in text.stdout and "\r" not in text.stdout


@pytest.mark.slow
def test_ask_sources_and_prompt_escape_names(workspace: Path) -> None:
    _indexed(workspace)
    question = "what does newline_function return?"
    run = codeask("ask", question, "--prompt-only", "--root", str(workspace))
    assert run.returncode == 0, run.stderr
    assert "new\\nline.py:1" in run.stdout
    assert NEWLINE not in run.stdout  # neither the prompt nor the sources carry a raw newline
    sources = run.stdout.split("\nSources:\n", 1)[1].splitlines()
    assert all(line.startswith("  ") for line in sources if line)


def test_check_file_on_a_bad_name_reports_it_escaped(workspace: Path) -> None:
    verdict = check_file(workspace, BAD, IndexSettings())
    assert verdict is not None and verdict.rel == "bad\\xff\\xfe.py"
    assert getattr(verdict, "reason", "") == NOT_UTF8


# ---- special filesystems ---------------------------------------------------------------------
def test_mountinfo_parsing_with_escapes_and_optional_fields() -> None:
    lines = [
        "22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw\n",
        "23 1 0:22 / /my\\040disk rw master:1 shared:2 - ext4 /dev/sda1 rw\n",
        "24 1 0:23 / /sys rw - sysfs sysfs rw\n",
    ]
    assert parse_mountinfo(lines) == {"/proc": "proc", "/my disk": "ext4", "/sys": "sysfs"}


@pytest.mark.skipif(not os.path.exists("/proc/self/mountinfo"), reason="needs Linux /proc")
def test_special_mounts_of_this_machine(tmp_path: Path) -> None:
    mounts = SpecialMounts.read()
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        table = parse_mountinfo(handle)
    special = [point for point, kind in table.items() if kind in ("proc", "sysfs", "devpts")]
    assert special, table
    for point in special:
        assert mounts.reason(point) is not None, point
        assert mounts.reason(point.rstrip("/") + "/x/y") is not None, point
    assert mounts.reason(str(tmp_path)) is None
    assert mounts.reason("/procfoo") is None  # a sibling, not below /proc


def test_a_root_on_proc_is_not_walked() -> None:
    found = discover(Path("/proc/self"), IndexSettings())
    assert found.files == []
    assert [s.rel for s in found.skipped] == ["."]
    assert "special filesystem" in found.skipped[0].reason


def _only(keep: list[str], inside: Path) -> list[str]:
    """gitignore lines keeping, at `/`, just `keep` and the folder `inside` (each level)."""
    lines = ["/*", *(f"!/{name}/" for name in keep)]
    parts = inside.parts[1:]
    for depth in range(len(parts)):
        prefix = "/" + "/".join(parts[:depth])
        lines += [f"!{prefix.rstrip('/')}/{parts[depth]}/"]
        if depth + 1 < len(parts):
            lines += [f"{prefix.rstrip('/')}/{parts[depth]}/*"]
    return lines


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_indexing_slash_skips_special_filesystems(workspace: Path, tmp_path: Path) -> None:
    """`codeask index /` (with the opt-in) walks /proc, /sys, /dev and /run only as far as
    seeing they are special; everything else at `/` is excluded so the test stays small."""
    exclude = _only(["proc", "sys", "dev", "run"], workspace)
    env = {
        "CODEASK_INDEX__EXCLUDE": json.dumps(exclude),
        "CODEASK_INDEX__LOCATION": str(tmp_path / "index"),
        "CODEASK_HISTORY__ENABLED": "false",
    }
    run = codeask("-v", "index", "--lexical-only", "--allow-broad-root", "/", env=env)
    assert run.returncode == 0, run.stderr
    for folder in ("proc", "sys", "dev"):
        assert f"skipped {folder}: special filesystem" in run.stderr, folder
    found = codeask("search", "good_function", "--mode", "lexical", "--root", "/", env=env)
    assert found.returncode == 0, found.stderr
    assert f"{str(workspace)[1:]}/good.py:1-2" in found.stdout


@pytest.mark.slow
def test_a_workspace_folder_whose_path_is_not_utf8_is_refused_clearly(tmp_path: Path) -> None:
    root = tmp_path / os.fsdecode(b"proj\xff")
    root.mkdir()
    (root / "a.py").write_text(_function("some_function"))
    for args in (("index", "--lexical-only", str(root)), ("search", "x", "--root", str(root))):
        run = codeask(*args)
        assert run.returncode == 1, run.stderr
        assert "proj\\xff: its path is not valid UTF-8" in run.stderr
        assert "Traceback" not in run.stderr and "UnicodeEncodeError" not in run.stderr


@pytest.mark.slow
async def test_language_server_indexes_past_bad_names(workspace: Path, tmp_path: Path) -> None:
    """The folder reaches `ready` (it used to end in `error`); results carry real names."""
    async with session([workspace], tmp_path / "cache") as lsp:
        status = await lsp.wait_ready(120)
        assert status["folders"][0]["state"] == "ready", status
        hits = await lsp.search("newline_function", k=3)
        assert hits and hits[0]["uri"].endswith("/new%0Aline.py")
        assert lsp.log_lines(f"skipped bad\\xff\\xfe.py: {NOT_UTF8}")


def _git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "A", "GIT_AUTHOR_EMAIL": "a@example.com"}
    env.update(GIT_COMMITTER_NAME="A", GIT_COMMITTER_EMAIL="a@example.com")
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.mark.slow
def test_history_with_a_non_utf8_name_indexes_and_prints_escaped(tmp_path: Path) -> None:
    """git keeps names as bytes: a commit touching one used to make every save fail."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q")
    (root / BAD).write_text(_function("bad_name_function"))
    (root / "ok.py").write_text(_function("ok_function"))
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "add the badly named file")
    (root / BAD).write_text(_function("renamed_function"))
    _git(root, "commit", "-q", "-am", "change the badly named file")
    index = codeask("-v", "index", "--lexical-only", str(root))
    assert index.returncode == 0, index.stderr
    found = codeask("search", "badly named", "--history", "--mode", "lexical", "--root", str(root))
    assert found.returncode == 0, found.stderr
    headers = _hit_lines(found.stdout)
    assert any(h.startswith("bad\\xff\\xfe.py:") and " commit " in h for h in headers), headers
    assert "bad_name_function" not in found.stdout  # its diff is skipped, as the file is
