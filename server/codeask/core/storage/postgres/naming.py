"""The name a folder goes under in the team index, derived ONE way for the publisher
(`codeask index --backend postgres`, publish.py) and the reader (core/storage/team.py), and the
lookup that finds a clone's revision whatever name it was published under.

The name is a label: the normalized `origin` URL (`github.com/org/repo`), else the working
tree's folder name, or what `--repo-name` says; `//<sub/folder>` is appended when the folder is
below the working tree's top (its paths are relative to that folder: the scope). A label differs
between machines whenever the publisher has no `origin` (a clone's `origin` is then the
publisher's path) or a clone's remote is spelled otherwise, so the reader does not depend on
it: it looks for HEAD and its first-parent ancestors by commit under ANY name of the same
scope, its own name first among equals. A commit sha names one tree (content, parents, author),
so a revision published for that sha is that tree's index whatever its label; trusting it adds
nothing to what trusting the team database's writers already means (they could publish any
content under the right name too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from codeask.core.storage.postgres.revision import RevisionInfo
from codeask.core.storage.postgres.schema import REPOSITORY_TABLE, REVISION_TABLE

if TYPE_CHECKING:
    import psycopg

#: Where a name came from, as `RepositoryName.source` says it.
NameSource = Literal["--repo-name", "origin", "remote", "folder"]

#: Separates the repository's name from the folder's scope inside the working tree.
SCOPE_MARK = "//"

_SCP_LIKE = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")


def normalize_remote(url: str) -> str:
    """A git remote URL as a stable identity: `git@github.com:Org/Repo.git`,
    `https://user:token@github.com/Org/Repo` and `ssh://git@github.com/Org/Repo.git` all give
    `github.com/org/repo` (no scheme, user, password, port or `.git`; lower-cased)."""
    text = url.strip()
    match = None if "://" in text else _SCP_LIKE.match(text)
    if match:
        host, path = match["host"], match["path"]
    elif "://" in text:
        rest = text.split("://", 1)[1]
        hostpart, _, path = rest.partition("/")
        host = hostpart.rsplit("@", 1)[-1].split(":", 1)[0]
    else:  # a local path
        host, path = "", text
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{host}/{path}".strip("/").lower()


@dataclass(frozen=True)
class RepositoryName:
    """A folder's name in the team index and where it came from."""

    name: str
    source: NameSource
    #: The folder's place below the working tree's top ('' at the top).
    scope: str = ""
    #: The remote it came from (`origin`, or the first other remote), when it did.
    remote: str = ""

    def describe(self) -> str:
        """`'github.com/acme/shop' (from the `origin` URL)`: for messages."""
        where = {
            "--repo-name": "from --repo-name",
            "origin": "from the `origin` URL",
            "remote": f"from the URL of remote `{self.remote}` (no `origin`)",
            "folder": "the folder name: this repository has no `origin` remote",
        }[self.source]
        return f"'{self.name}' ({where})"


def scope_of(name: str) -> str:
    """The sub-folder scope a published name carries ('' for a working tree's top)."""
    return name.split(SCOPE_MARK, 1)[1] if SCOPE_MARK in name else ""


def _scoped(name: str, scope: str) -> str:
    return f"{name}{SCOPE_MARK}{scope}" if scope and SCOPE_MARK not in name else name


def repository_name(root: Path, override: str | None = None) -> RepositoryName:
    """The name `root` is published and looked up under (see the module docstring): an
    override (`--repo-name`) as given, else the `origin` URL normalized (or another remote's),
    else the working tree's folder name; each with `//<scope>` below the top."""
    from codeask.core.git.repo import GIT_ERRORS, open_scoped

    opened = open_scoped(root)
    scope, top, remotes = "", Path(root).resolve(), {}
    if opened is not None:
        repo, where = opened
        scope = where.prefix
        top = Path(repo.workdir).resolve()
        try:
            remotes = {r.name: r.url for r in repo.remotes if r.url}
        except GIT_ERRORS:
            remotes = {}
    if override:
        return RepositoryName(_scoped(override.strip(), scope), "--repo-name", scope)
    if remotes.get("origin"):
        return RepositoryName(_scoped(normalize_remote(remotes["origin"]), scope), "origin", scope)
    if remotes:  # no origin: the first other remote, as git lists them
        remote, url = next(iter(remotes.items()))
        return RepositoryName(_scoped(normalize_remote(url), scope), "remote", scope, str(remote))
    return RepositoryName(_scoped(top.name or str(top), scope), "folder", scope)


def nearest_published(
    conn: psycopg.Connection,
    wanted: RepositoryName,
    candidate_shas: Sequence[str],
    model: str,
) -> RevisionInfo | None:
    """The complete revision of the FIRST of `candidate_shas` (HEAD, then its ancestors) that
    is published for `model` under any name of `wanted`'s scope; among several for that commit,
    the one under `wanted.name`, then the newest. None when none is."""
    shas = [s for s in candidate_shas if s]
    if not shas:
        return None
    rows = conn.execute(
        f"""SELECT r.id, p.name, r.sha, r.model, r.dim, r.chunk_count, r.file_count,
                   extract(epoch FROM r.published_at)::float8
            FROM {REVISION_TABLE} r JOIN {REPOSITORY_TABLE} p ON p.id = r.repository_id
            WHERE r.sha = ANY(%s) AND r.complete AND r.model = %s""",
        (shas, model),
    ).fetchall()
    order = {sha: i for i, sha in reversed(list(enumerate(shas)))}
    fits = [r for r in rows if scope_of(r[1]) == wanted.scope]
    if not fits:
        return None
    best = min(fits, key=lambda r: (order[r[2]], r[1] != wanted.name, -float(r[7]), -int(r[0])))
    return RevisionInfo(
        int(best[0]), best[1], best[2], best[3], int(best[4]), int(best[5]), int(best[6]),
        float(best[7]),
    )  # fmt: skip
