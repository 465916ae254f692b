"""The published team index on a real PostgreSQL + pgvector: publish, then search through the
product's reader (`PublishedReader`), idempotence, concurrency, refusals, gc, nearest revision.

Chunks are real (`codeask.core.source.chunk.chunk_file` on small files written here, plus history
chunks built by hand). Vectors are deterministic numpy unit vectors (seeded per chunk), except
in the `publish_folder` test, which uses the real static embedder (potion-base-8M) through a
real FolderIndex on a real git repository.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from pgserver import at_once

from codeask.config import ChunkSettings, build_settings
from codeask.core.records import Chunk, FileRecord
from codeask.core.source.chunk import chunk_file
from codeask.core.storage.postgres.cache import PgModelMismatch
from codeask.core.storage.postgres.connect import PgPermissionDenied, connect
from codeask.core.storage.postgres.naming import repository_name
from codeask.core.storage.postgres.publish import (
    gc,
    normalize_remote,
    publish,
    publish_folder,
)
from codeask.core.storage.postgres.published import PublishedReader
from codeask.core.storage.postgres.revision import nearest_revision
from codeask.core.storage.postgres.schema import migrate

MODEL = "test/unit-vectors"
DIM = 64

SOURCES = {
    "src/net/http.py": '''"""HTTP helpers."""


def parse_http_request(raw):
    """Split a raw request into its request line and body."""
    head, _, body = raw.partition("\\r\\n\\r\\n")
    return head.split(" "), body


class Router:
    """Maps paths to handlers."""

    def route(self, path):
        return self.table.get(path)
''',
    "src/shop/cart.py": '''def cart_total(items):
    """The sum of the item prices."""
    return sum(item.price for item in items)


def apply_discount(total, percent):
    return total * (1 - percent / 100)
''',
    "docs/guide.md": "# Guide\n\nHow the shop works.\n\n## Checkout\n\nThe cart is totalled.\n",
}


def build_chunks(first_id: int = 1) -> tuple[list[Chunk], list[FileRecord]]:
    """Real chunks of SOURCES (ids from `first_id`) and two history chunks."""
    chunks: list[Chunk] = []
    files: list[FileRecord] = []
    for path, text in SOURCES.items():
        result = chunk_file(path, text, ChunkSettings())
        digest = hashlib.sha256(text.encode()).hexdigest()
        files.append(FileRecord(path=path, size=len(text), mtime_ns=0, sha256=digest))
        files[-1].language = result.language
        chunks.extend(result.chunks)
    chunks.append(
        Chunk(
            path="src/net/http.py",
            language="git",
            kind="commit",
            start_line=0,
            end_line=0,
            text="Fix request parsing when the body is empty",
            symbol="abc1234",
            meta={"sha": "abc1234" * 5, "author": "Alice Liddell", "date": "2024-03-01"},
        )
    )
    chunks.append(
        Chunk(
            path="src/shop/cart.py",
            language="git",
            kind="hunk",
            start_line=1,
            end_line=3,
            text="+def cart_total(items):",
            meta={"sha": "def5678" * 5, "author": "Bob Builder", "date": "2023-01-01"},
        )
    )
    for offset, chunk in enumerate(chunks):
        chunk.id = first_id + offset
    return chunks, files


def unit_vectors(chunks: list[Chunk], seed: int = 0) -> dict[int, np.ndarray]:
    """One deterministic random unit vector per chunk (seeded by the chunk id)."""
    out = {}
    for chunk in chunks:
        row = np.random.default_rng(seed * 100_000 + chunk.id).standard_normal(DIM)
        out[chunk.id] = (row / np.linalg.norm(row)).astype(np.float32)
    return out


def counts(dsn: str) -> tuple[int, int, int, int]:
    """Rows in (repositories, revisions, files, chunks)."""
    with connect(dsn) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM codeask_repository), "
            "(SELECT count(*) FROM codeask_revision), (SELECT count(*) FROM codeask_file), "
            "(SELECT count(*) FROM codeask_chunk)"
        ).fetchone()
    assert row is not None
    return (int(row[0]), int(row[1]), int(row[2]), int(row[3]))


def published(dsn: str, repo: str = "github.com/acme/shop", sha: str = "a" * 40) -> int:
    chunks, files = build_chunks()
    return publish(dsn, repo, sha, MODEL, DIM, chunks, unit_vectors(chunks), files).revision_id


def by_symbol(chunks: list[Chunk], symbol: str) -> Chunk:
    return next(c for c in chunks if c.symbol == symbol)


def test_dense_top1_with_unit_vectors_is_the_chunk_whose_vector_is_the_query(
    pg_dsn: str,
) -> None:
    chunks, files = build_chunks()
    vectors = unit_vectors(chunks)
    result = publish(pg_dsn, "github.com/acme/shop", "a" * 40, MODEL, DIM, chunks, vectors, files)
    assert result.created and result.chunks == len(chunks) and result.files == len(files)
    with PublishedReader(pg_dsn, result.revision_id, lexical_after=None) as reader:
        assert reader.tier == "minilm"
        for chunk in chunks:
            top = reader.dense_top_k("minilm", vectors[chunk.id], 3)
            assert top[0][0] == chunk.id
            assert top[0][1] == pytest.approx(1.0, abs=1e-3)  # halfvec round trip
            assert top[0][1] >= top[1][1] >= top[2][1]
        fetched = reader.chunks([c.id for c in chunks])
        for chunk in chunks:
            assert fetched[chunk.id] == chunk  # every field round-trips


def test_lexical_finds_a_chunk_by_the_parts_of_its_identifier(pg_dsn: str) -> None:
    rev = published(pg_dsn)
    chunks, _ = build_chunks()
    parse = by_symbol(chunks, "parse_http_request")
    with PublishedReader(pg_dsn, rev, lexical_after=None) as reader:  # ts_rank in PostgreSQL
        questions = ("http request", "parse_http_request", "parseHttpRequest", "how is HTTP parsed")
        for query in questions:
            assert reader.lexical_top_k(query, 3)[0][0] == parse.id, query
        assert reader.lexical_top_k("the of and", 5) == []  # no informative term: no query
        # symbol weighs more than body: `route` names the method, and appears in no other symbol
        assert reader.lexical_top_k("route", 1)[0][0] == by_symbol(chunks, "route").id
        files = reader.lexical_files("cart total discount", 3)
        assert files[0][0] == "src/shop/cart.py"
        assert all(path != "" for path, _ in files)


def test_publishing_the_same_revision_twice_leaves_one_copy(pg_dsn: str) -> None:
    chunks, files = build_chunks()
    vectors = unit_vectors(chunks)
    args = (pg_dsn, "github.com/acme/shop", "a" * 40, MODEL, DIM, chunks, vectors, files)
    first = publish(*args)
    once = counts(pg_dsn)
    assert once == (1, 1, len(files), len(chunks))
    again = publish(*args)
    assert not again.created and again.revision_id == first.revision_id
    assert counts(pg_dsn) == once
    replaced = publish(*args, replace=True)
    assert replaced.created and replaced.revision_id != first.revision_id
    assert counts(pg_dsn) == once


def test_two_publishers_of_the_same_revision_at_once_store_it_once(pg_dsn: str) -> None:
    """Two CI jobs publishing the same commit together: one writes, the other waits on the
    advisory lock and finds it done; no error, one copy."""
    with connect(pg_dsn) as conn:
        migrate(conn)
    chunks, files = build_chunks()
    vectors = unit_vectors(chunks)
    results = at_once(
        pg_dsn,
        2,
        lambda conn: publish(
            conn, "github.com/acme/shop", "b" * 40, MODEL, DIM, chunks, vectors, files
        ),
    )
    assert sorted(r.created for r in results) == [False, True]
    assert len({r.revision_id for r in results}) == 1
    assert counts(pg_dsn) == (1, 1, len(files), len(chunks))


def test_a_model_with_another_dimension_is_refused_naming_the_team_model(pg_dsn: str) -> None:
    published(pg_dsn)
    chunks, files = build_chunks()
    small = {cid: vec[:16] / np.linalg.norm(vec[:16]) for cid, vec in unit_vectors(chunks).items()}
    with pytest.raises(PgModelMismatch) as caught:
        publish(pg_dsn, "github.com/acme/shop", "c" * 40, MODEL, 16, chunks, small, files)
    message = str(caught.value)
    assert f"model '{MODEL}' with dimension {DIM}" in message
    assert "16-dimensional" in message
    assert counts(pg_dsn)[1] == 1  # nothing written
    with pytest.raises(ValueError, match="shape"):
        publish(pg_dsn, "github.com/acme/shop", "c" * 40, MODEL, DIM, chunks, small, files)


def test_a_read_only_role_is_refused_clearly_and_can_still_search(
    pg_dsn: str, pg_db: str, make_role
) -> None:
    rev = published(pg_dsn)
    editor = make_role(
        pg_db,
        [
            "GRANT USAGE ON SCHEMA public TO {role}",
            "GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}",
        ],
    )
    password = editor.split(":")[2].split("@")[0]
    chunks, files = build_chunks()
    with pytest.raises(PgPermissionDenied) as caught:
        publish(editor, "github.com/acme/shop", "d" * 40, MODEL, DIM, chunks, {}, files)
    message = str(caught.value)
    assert "may not publish" in message and "writer role" in message
    assert password not in message
    with connect(editor) as conn, pytest.raises(PgPermissionDenied, match="writer role"):
        gc(conn, keep_per_repo=1)
    with PublishedReader(editor, rev, lexical_after=None) as reader:  # reading needs SELECT only
        assert reader.lexical_top_k("http request", 1)
    assert counts(pg_dsn)[1] == 1


def test_gc_keeps_the_newest_revisions_of_each_repository(pg_dsn: str) -> None:
    revs = [published(pg_dsn, sha=f"{i}" * 40) for i in range(4)]
    other = published(pg_dsn, repo="github.com/acme/other")
    with connect(pg_dsn) as conn:
        removed = gc(conn, keep_per_repo=2)
        left = {r[0] for r in conn.execute("SELECT id FROM codeask_revision").fetchall()}
        orphans = conn.execute(
            "SELECT count(*) FROM codeask_chunk WHERE revision_id = ANY(%s)", (removed,)
        ).fetchone()
        assert gc(conn, keep_per_repo=2) == []
    assert removed == revs[:2]
    assert left == {*revs[2:], other}
    assert orphans == (0,)
    chunks, files = build_chunks()
    assert counts(pg_dsn) == (2, 3, 3 * len(files), 3 * len(chunks))


def test_nearest_revision_is_the_first_published_candidate(pg_dsn: str) -> None:
    shas = [f"{i:x}" * 40 for i in range(1, 6)]  # shas[0] is the oldest commit
    old = published(pg_dsn, sha=shas[0])
    mid = published(pg_dsn, sha=shas[2])
    published(pg_dsn, repo="github.com/acme/other", sha=shas[4])
    head_first = shas[::-1]  # HEAD, then its ancestors
    with connect(pg_dsn) as conn:
        found = nearest_revision(conn, "github.com/acme/shop", head_first)
        assert found is not None and found.id == mid and found.sha == shas[2]
        assert found.model == MODEL and found.dim == DIM and found.chunk_count > 0
        oldest = nearest_revision(conn, "github.com/acme/shop", [shas[1], shas[0]])
        assert oldest is not None and oldest.id == old
        assert nearest_revision(conn, "github.com/acme/shop", [shas[4], shas[3]]) is None
        assert nearest_revision(conn, "github.com/acme/nope", head_first) is None
        assert nearest_revision(conn, "github.com/acme/shop", head_first, "other/model") is None


def test_normalized_remote_urls() -> None:
    for url in (
        "git@github.com:Acme/Shop.git",
        "https://user:tok3n@github.com/acme/shop",
        "ssh://git@github.com:22/acme/shop.git",
        "https://github.com/acme/shop.git/",
    ):
        assert normalize_remote(url) == "github.com/acme/shop", url


def test_publish_folder_with_the_real_static_embedder(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real FolderIndex (static tier, potion-base-8M) of a real git repository, published as
    its HEAD commit; then found again in the team index by HEAD's sha."""
    import pygit2

    from codeask.core.indexer import FolderIndex

    root = tmp_path / "shop"
    repo = pygit2.init_repository(str(root), bare=False, initial_head="main")
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".gitignore").write_text(".codeask/\n")
    repo.index.add_all()
    repo.index.write()
    who = pygit2.Signature("Alice Liddell", "alice@example.com", 1_700_000_000, 0)
    sha = str(repo.create_commit("HEAD", who, who, "first", repo.index.write_tree(), []))
    repo.remotes.create("origin", "git@github.com:Acme/Shop.git")
    settings, warnings = build_settings({"embed": {"tiers": ["static"]}})
    assert warnings == []
    folder = FolderIndex(root, settings)
    try:
        folder.refresh(embed=False)
        assert repository_name(root).name == "github.com/acme/shop"
        monkeypatch.setenv("TEAM_DSN", pg_dsn)
        result = publish_folder(folder.root, folder.storage, "TEAM_DSN", tier="static")
        assert result.created and result.chunks == folder.storage.chunk_count()
        with connect(pg_dsn) as conn:
            found = nearest_revision(conn, "github.com/acme/shop", [sha])
        assert found is not None and found.id == result.revision_id
        assert (found.model, found.dim) == folder.storage.tier_model("static")
        parse = next(c for c in folder.storage.all_chunks() if c.symbol == "parse_http_request")
        query = folder.storage.vector("static", parse.id)
        assert query is not None
        with PublishedReader(pg_dsn, found.id, lexical_after=None) as reader:
            assert reader.tier == "static"
            assert reader.lexical_top_k("http request", 1)[0][0] == parse.id
            assert reader.dense_top_k("static", query, 1)[0][0] == parse.id
        (root / "src/shop/cart.py").write_text("def changed():\n    pass\n")
        folder.refresh(embed=False)
        with pytest.raises(Exception, match="differ from HEAD"):
            publish_folder(folder.root, folder.storage, "TEAM_DSN", tier="static")
    finally:
        folder.close()
