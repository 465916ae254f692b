"""The name a folder is published under, and how a clone finds it (issue 26, item 12).

A publish from a repository without an `origin` remote went under the folder's name without a
word, and a clone (whose `origin` is the publisher's path, in another folder) then found
nothing. Now `codeask index --backend postgres` prints the name and where it came from
(`--repo-name`, the `origin` URL, or the folder name), publisher and reader derive it with the
same function (`core/storage/postgres/naming.py`), and a reader finds the revision of HEAD (or the
nearest ancestor) by commit under whatever name it was published, in the same sub-folder scope: a
commit sha names one tree, so the published index is that tree's whatever the label. When
nothing is published, the reason names the name it looked for, where that came from and how to
publish under it.

Real git repositories, the real CLI and the real FolderIndex, the embedded PostgreSQL.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest

from codeask.config import Settings, build_settings
from codeask.core.indexer import FolderIndex
from codeask.core.storage.postgres.publish import publish_folder
from support import codeask, in_process_env

DSN_ENV = "CODEASK_TEST_NAMING_DSN"
FILES = {
    "shop/cart.py": "class Cart:\n    def total_price(self, items):\n"
    '        """Sum the line prices of the cart."""\n        return sum(i.price for i in items)\n',
    "svc/fees.py": "def shipping_fee(weight_kg):\n"
    '    """Flat fee plus a rate per kilogram."""\n    return 4.9 + 1.2 * weight_kg\n',
}


def committed(root: Path, origin: str | None = None) -> str:
    """FILES in one commit (optionally with an `origin` remote); HEAD's sha."""
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    repo = pygit2.init_repository(str(root))
    if origin:
        repo.remotes.create("origin", origin)
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("CI", "ci@example.com")
    return str(repo.create_commit("HEAD", who, who, "A", repo.index.write_tree(), []))


def settings_for(work: Path, cache: Path) -> Settings:
    settings, _ = build_settings(
        {
            "index": {"location": str(work), "backend": "postgres", "dsn_env": DSN_ENV},
            "embed": {"cache_dir": str(cache)},
            "history": {"enabled": False},
        }
    )
    return settings


def publish(root: Path, tmp_path: Path, tag: str) -> str:
    """CI: index `root` in full and publish it (the MiniLM tier, `embed.model`, which readers
    look for); the name it went under."""
    ci = FolderIndex(root, settings_for(tmp_path / f"{tag}-index", tmp_path / "ci-cache"),
                     read_team=False)  # fmt: skip
    try:
        ci.refresh()
        done = publish_folder(ci.root, ci.storage, DSN_ENV)
    finally:
        ci.close()
    assert done.created
    return done.repository


def open_clone(clone: Path, tmp_path: Path, tag: str) -> FolderIndex:
    return FolderIndex(clone, settings_for(tmp_path / f"{tag}-index", tmp_path / f"{tag}-cache"))


# ---- the CLI says what it published under ----------------------------------------------------


def cli(root: Path, dsn: str, cache: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = in_process_env()
    env.update(
        {
            DSN_ENV: dsn,
            "CODEASK_INDEX__DSN_ENV": DSN_ENV,
            "CODEASK_EMBED__CACHE_DIR": str(cache),
            "CODEASK_INDEX__LOCATION": str(cache / "index"),
            "HF_HUB_OFFLINE": "1",
        }
    )
    return codeask("index", str(root), "--backend", "postgres", *argv, env=env, timeout=600)


def test_a_publish_without_origin_says_it_used_the_folder_name(pg_dsn: str, tmp_path: Path) -> None:
    root = tmp_path / "ci-checkout"
    committed(root)
    done = cli(root, pg_dsn, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    line = next(ln for ln in done.stderr.splitlines() if "published revision" in ln)
    assert "as 'ci-checkout'" in line, done.stderr
    assert "folder name" in done.stderr and "no `origin` remote" in done.stderr, done.stderr
    assert "--repo-name" in done.stderr, done.stderr


def test_a_publish_names_its_origin_without_the_credentials(pg_dsn: str, tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    committed(root, origin="https://ci-bot:tok3n-Secret@github.com/Acme/Shop.git")
    done = cli(root, pg_dsn, tmp_path / "cache")
    assert done.returncode == 0, done.stderr
    assert "as 'github.com/acme/shop' (from the `origin` URL)" in done.stderr, done.stderr
    assert "tok3n-Secret" not in done.stderr + done.stdout
    again = cli(root, pg_dsn, tmp_path / "cache", "--repo-name", "shop")
    assert again.returncode == 0, again.stderr
    assert "as 'shop' (from --repo-name)" in again.stderr, again.stderr


# ---- a clone finds it ------------------------------------------------------------------------


def test_a_clone_in_another_folder_finds_a_revision_published_under_the_folder_name(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Published as 'ci-checkout' (no origin); the clone's own name is its origin (the
    publisher's path): it reads the revision of its HEAD all the same and indexes nothing."""
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    root = tmp_path / "ci-checkout"
    sha = committed(root)
    assert publish(root, tmp_path, "ci") == "ci-checkout"
    clone = tmp_path / "laptop"
    pygit2.clone_repository(str(root), str(clone))
    folder = open_clone(clone, tmp_path, "laptop")
    try:
        team = folder.team
        assert team.kind == "base", team.reason
        assert (team.sha, team.repository) == (sha, "ci-checkout")
        report = folder.refresh()
        assert report.files_indexed == 0
        assert folder.storage.counts().files == len(FILES)
    finally:
        folder.close()


def test_nothing_published_names_the_name_looked_for_and_how_to_publish_it(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh database (no codeask tables yet) is "nothing published", not a raw SQL error;
    with other repositories published, the reason names this folder's name and its source."""
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    root = tmp_path / "unpublished"
    committed(root, origin="git@github.com:Acme/Never.git")
    fresh = open_clone(root, tmp_path, "fresh")
    try:
        assert fresh.team.kind == "unpublished", fresh.team.reason
        assert "nothing is published in the team database yet" in fresh.team.reason
    finally:
        fresh.close()
    other = tmp_path / "other"
    committed(other, origin="git@github.com:Acme/Other.git")
    (other / "extra.py").write_text("X = 1\n")  # another tree: another commit
    repo = pygit2.Repository(str(other))
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("CI", "ci@example.com")
    repo.create_commit("HEAD", who, who, "B", repo.index.write_tree(), [repo.head.target])
    assert publish(other, tmp_path, "other") == "github.com/acme/other"
    folder = open_clone(root, tmp_path, "never")
    try:
        team = folder.team
        assert team.kind == "unpublished", team.reason
        assert "'github.com/acme/never' (from the `origin` URL)" in team.reason, team.reason
        assert "under any name" in team.reason, team.reason
        assert "--repo-name github.com/acme/never" in team.reason, team.reason
    finally:
        folder.close()


def test_a_sub_folder_is_found_by_commit_only_in_the_same_scope(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sub-folder published without origin goes under 'ci-checkout//svc' (its scope kept, as
    with an origin); the clone's `svc` reads it, the clone's top (other paths) does not."""
    monkeypatch.setenv(DSN_ENV, pg_dsn)
    root = tmp_path / "ci-checkout"
    committed(root)
    assert publish(root / "svc", tmp_path, "ci-svc") == "ci-checkout//svc"
    clone = tmp_path / "laptop"
    pygit2.clone_repository(str(root), str(clone))
    sub = open_clone(clone / "svc", tmp_path, "laptop-svc")
    try:
        assert (sub.team.kind, sub.team.repository) == ("base", "ci-checkout//svc")
    finally:
        sub.close()
    top = open_clone(clone, tmp_path, "laptop-top")
    try:
        assert top.team.kind == "unpublished", top.team.reason
    finally:
        top.close()
