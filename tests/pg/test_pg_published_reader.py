"""`PublishedReader` (core/storage/postgres/published.py) against the local storage of the index it
came from.

A real FolderIndex (static tier, potion-base-8M; history on) of a real git repository made here
with pygit2 is published as its HEAD to the embedded PostgreSQL; then every `IndexReader`
method of the reader is compared with `folder.storage` (LocalStorage), and `retrieve.search`
over either storage is compared. Faults: an unreachable server, a connection killed mid-session,
a query blocked past statement_timeout: `PgUnavailable`, quickly, with no password in it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from pgserver import PgServer, free_port

from codeask.config import Settings, build_settings
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.embedding.static import load_static_embedder
from codeask.core.records import HISTORY_KINDS
from codeask.core.search.retrieve import Mode, search
from codeask.core.storage.postgres.connect import PgUnavailable, connect
from codeask.core.storage.postgres.publish import publish_folder
from codeask.core.storage.postgres.published import PublishedReader
from codeask.core.storage.protocol import IndexReader
from codeask.core.storage.symbol_table import path_keys

pygit2 = pytest.importorskip("pygit2")

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

    def register_handler(self, path, handler):
        self.table[path] = handler
''',
    "src/shop/cart.py": '''from shop.pricing import apply_discount


def cart_total(items):
    """The sum of the item prices."""
    return sum(item.price for item in items)


def checkout(cart, coupon):
    """Total the cart and take the coupon's discount off."""
    return apply_discount(cart_total(cart.items), coupon.percent)
''',
    "src/shop/pricing.py": '''def apply_discount(total, percent):
    """Take `percent` per cent off `total`."""
    return total * (1 - percent / 100)


def round_price(value):
    return round(value, 2)
''',
    "src/store/sqlite_backend.py": '''import sqlite3


class SqliteBackend:
    """Persist orders in an SQLite database file."""

    def __init__(self, path):
        self.db = sqlite3.connect(path)

    def save_order(self, order):
        self.db.execute("INSERT INTO orders VALUES (?, ?)", (order.id, order.total))
        self.db.commit()

    def load_orders(self):
        return self.db.execute("SELECT id, total FROM orders").fetchall()
''',
    "src/store/__init__.py": (
        '"""Order storage."""\n\nfrom store.sqlite_backend import SqliteBackend\n'
    ),
    "tests/test_cart.py": """from shop.cart import cart_total


def test_cart_total_sums_prices():
    assert cart_total([]) == 0
""",
    "docs/guide.md": "# Guide\n\nHow the shop works.\n\n## Checkout\n\nThe cart is totalled "
    "and the coupon discount applied.\n",
}
SECOND = {
    "src/shop/pricing.py": SOURCES["src/shop/pricing.py"]
    + '''

def tax(total, rate):
    """Sales tax on a total."""
    return total * rate
''',
}
#: Questions compared between the local and the published storage (retrieve.search).
QUERIES = [
    "where is the http request parsed",
    "apply the coupon discount at checkout",
    "save orders to the sqlite database",
    "Router register_handler",
]


@dataclass
class Published:
    folder: object
    settings: Settings
    root: Path


@dataclass
class View:
    """A `retrieve.Searchable` over any storage."""

    root: Path
    settings: Settings
    storage: IndexReader
    embedder: CachedEmbedder


def _commit(repo: object, message: str, when: int) -> str:
    index = repo.index  # type: ignore[attr-defined]
    index.add_all()
    index.write()
    who = pygit2.Signature("Alice Liddell", "alice@example.com", when, 0)
    parents = [] if repo.head_is_unborn else [repo.head.target]  # type: ignore[attr-defined]
    tree = index.write_tree()
    return str(repo.create_commit("HEAD", who, who, message, tree, parents))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real FolderIndex (static tier, history on) of a two-commit repository."""
    from codeask.core.indexer import FolderIndex

    root = tmp_path_factory.mktemp("published") / "shop"
    repo = pygit2.init_repository(str(root), bare=False, initial_head="main")
    for rel, text in SOURCES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".gitignore").write_text(".codeask/\n")
    _commit(repo, "first: http, shop, store", 1_700_000_000)
    for rel, text in SECOND.items():
        (root / rel).write_text(text)
    _commit(repo, "pricing: sales tax", 1_700_100_000)
    settings, warnings = build_settings({"embed": {"tiers": ["static"]}})
    assert warnings == []
    folder = FolderIndex(root, settings)
    try:
        folder.refresh(embed=False)
        yield folder
    finally:
        folder.close()


@pytest.fixture
def reader(
    local: object, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[PublishedReader]:
    monkeypatch.setenv("TEAM_DSN", pg_dsn)
    result = publish_folder(
        local.root, local.storage, "TEAM_DSN", "github.com/acme/shop", tier="static"
    )
    # ts_rank only: the in-memory BM25 (built after a few queries) is tested on its own below
    with PublishedReader(pg_dsn, result.revision_id, lexical_after=None) as opened:
        yield opened


@pytest.fixture
def bm25_reader(reader: PublishedReader, pg_dsn: str) -> Iterator[PublishedReader]:
    """The same revision with its lexical tables built in memory."""
    with PublishedReader(pg_dsn, reader.revision.id, lexical_after=None) as opened:
        assert opened.lexical_scale == "ts_rank"
        opened.warm_up()
        assert opened.lexical_scale == "bm25"
        yield opened


def _storage(local: object) -> IndexReader:
    return local.storage  # type: ignore[attr-defined,no-any-return]


def test_sizes_files_chunks_history_and_names_match_the_local_storage(
    local: object, reader: PublishedReader
) -> None:
    store = _storage(local)
    assert reader.tier == "static"
    assert reader.counts() == store.counts()
    assert reader.counts().history_commits == 2 and reader.counts().static_embedded > 20
    assert reader.chunk_count() == store.chunk_count()
    for tier in ("minilm", "static"):
        assert reader.vector_count(tier) == store.vector_count(tier)  # type: ignore[arg-type]
    assert reader.tier_model("static") == store.tier_model("static")
    # Files: the same paths in the same order; records equal but for the stat (not published).
    assert reader.paths() == store.paths()
    for path in store.paths():
        mine, theirs = reader.file(path), store.file(path)
        assert mine is not None and theirs is not None
        assert (mine.path, mine.sha256, mine.language, mine.chunk_ids, mine.skipped) == (
            theirs.path,
            theirs.sha256,
            theirs.language,
            theirs.chunk_ids,
            theirs.skipped,
        )
        assert (mine.size, mine.mtime_ns) == (0, 0)
        assert reader.chunks_of(path) == store.chunks_of(path)
        for key in path_keys(path):
            assert reader.paths_named(key) == store.paths_named(key), key
    assert reader.file("nope.py") is None and reader.chunks_of("nope.py") == []
    assert reader.paths_named("nope") == store.paths_named("nope") == []
    # Chunks: every one equal (text, symbol, calls, meta, lines, id), same order.
    every = store.all_chunks()
    assert reader.all_chunks() == every
    assert any(c.kind in HISTORY_KINDS for c in every)
    for chunk in every:
        assert reader.chunk(chunk.id) == chunk
    assert reader.chunk(10**9) is None
    assert reader.history_commits() == store.history_commits()
    # Symbols: every name, same ids in the same order (history excluded on both sides).
    names = {c.symbol for c in every if c.symbol} | {"nope", ""}
    for name in names:
        assert reader.symbol_ids(name) == store.symbol_ids(name), name
    assert reader.symbol_ids("apply_discount")
    # The revision: id as generation, published_at as saved_at, its rows' size.
    assert reader.generation == reader.revision.id
    assert abs(reader.saved_at() - time.time()) < 600
    assert reader.disk_bytes() > 0


def test_vectors_and_dense_top_k_match_the_local_tiers(
    local: object, reader: PublishedReader
) -> None:
    """Same vectors (fp16 on the database side: within 2e-3), same dense neighbours in the same
    order (a few dozen chunks: both HNSW searches are exact here) except near ties that fp16
    rounding swaps (|cos difference| < 1e-3), same tier rules."""
    store = _storage(local)
    every = store.all_chunks()
    for chunk in every:
        theirs = store.vector("static", chunk.id)
        mine = reader.vector("static", chunk.id)
        assert theirs is not None and mine is not None
        assert np.allclose(mine, theirs, atol=2e-3)
        assert reader.vector("minilm", chunk.id) is None is store.vector("minilm", chunk.id)
    matrix = np.stack([store.vector("static", c.id) for c in every])  # type: ignore[misc]
    ids = [c.id for c in every]

    def exact(query: np.ndarray) -> dict[int, float]:
        return dict(zip(ids, (matrix @ query).tolist(), strict=True))

    swaps = 0
    embedder = load_static_embedder(_settings(local))
    queries = [store.vector("static", c.id) for c in every[::3]]
    queries += list(embedder.embed(QUERIES))
    for query in queries:
        assert query is not None
        for k in (1, 5, 10):
            theirs_hits = store.dense_top_k("static", query, k)
            mine_hits = reader.dense_top_k("static", query, k)
            swaps += _same_ranking(mine_hits, theirs_hits, exact(query))
            for missing in ("minilm", "static"):
                theirs_filled = store.dense_top_k("static", query, k, missing_from=missing)  # type: ignore[arg-type]
                mine_filled = reader.dense_top_k("static", query, k, missing_from=missing)  # type: ignore[arg-type]
                swaps += _same_ranking(mine_filled, theirs_filled, exact(query))
            assert reader.dense_top_k("minilm", query, k) == store.dense_top_k("minilm", query, k)
    assert swaps <= 4  # near ties only (seen: 2 neighbours 1.3e-5 apart, swapped by fp16)


def _same_ranking(
    mine: list[tuple[int, float]], theirs: list[tuple[int, float]], exact: dict[int, float]
) -> int:
    """Same ids in the same order, except neighbours whose exact float32 similarities are
    within 1e-3 (the database's fp16 vectors may swap those); the number of such swaps."""
    assert len(mine) == len(theirs)
    swaps = 0
    for (a, score_a), (b, score_b) in zip(mine, theirs, strict=True):
        assert abs(score_a - score_b) < 5e-3
        if a != b:
            assert abs(exact[a] - exact[b]) < 1e-3, (a, b, exact[a], exact[b])
            swaps += 1
    return swaps


def test_lexical_hits_are_the_same_chunks_and_files_ranked_by_ts_rank(
    local: object, reader: PublishedReader
) -> None:
    """Same matched set (an OR of the same code-aware terms, history included for chunks, code
    only for files); the order is ts_rank's, not BM25's, so only the best hit of a query with a
    rare term is compared."""
    store = _storage(local)
    for query in [*QUERIES, "sales tax", "SqliteBackend save_order", "pricing"]:
        theirs = store.lexical_top_k(query, 1000)
        mine = reader.lexical_top_k(query, 1000)
        assert {i for i, _ in mine} == {i for i, _ in theirs}, query
        assert all(score > 0 for _, score in mine)
        theirs_files = store.lexical_files(query, 1000)
        mine_files = reader.lexical_files(query, 1000)
        assert {p for p, _ in mine_files} == {p for p, _ in theirs_files}, query
    for query, best in [("register_handler", "register_handler"), ("save_order", "save_order")]:
        assert store.chunk(reader.lexical_top_k(query, 1)[0][0]).symbol == best  # type: ignore[union-attr]
        assert store.chunk(store.lexical_top_k(query, 1)[0][0]).symbol == best  # type: ignore[union-attr]
    assert reader.lexical_top_k("the and of", 5) == [] == store.lexical_top_k("the and of", 5)


def _settings(local: object) -> Settings:
    return local.settings  # type: ignore[attr-defined,no-any-return]


def _top_files(view: View, query: str, mode: Mode) -> list[str]:
    hits = search([view], query, k=10, mode=mode).hits
    return list(dict.fromkeys(h.path for h in hits))[:5]


def _views(local: object, reader: PublishedReader) -> tuple[View, View]:
    root, settings = local.root, _settings(local)  # type: ignore[attr-defined]
    embedder = local.embedder  # type: ignore[attr-defined]
    return View(root, settings, reader, embedder), View(root, settings, _storage(local), embedder)


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
def test_search_dense_and_hybrid_over_the_published_revision_return_the_local_top5_files(
    local: object, reader: PublishedReader, mode: Mode
) -> None:
    """`retrieve.search` over the reader vs over the local storage: the same top-5 files, in
    the same order, for every question. (Hybrid fuses ts_rank-ordered lexical lists where the
    local storage fuses BM25-ordered ones; on this repository the fused order still agrees.)"""
    there, here = _views(local, reader)
    for query in QUERIES:
        assert _top_files(there, query, mode) == _top_files(here, query, mode), query


def test_search_lexical_same_top5_files_despite_ts_rank(
    local: object, reader: PublishedReader
) -> None:
    """Lexical only: the same top-5 files in the same order for every question. PostgreSQL's
    ts_rank has no inverse document frequency, so for "apply the coupon discount at checkout"
    its chunk list puts pricing.py (which says `apply_discount` and `discount` most often)
    above cart.py, which BM25 puts first for the rarer `coupon` and `checkout`; the files
    swapped until round 9's file ranking (a file's best chunk plus its next two decayed, and
    each file's best chunk lifted by its share of all candidate score), which agrees on both."""
    there, here = _views(local, reader)
    for query in QUERIES:
        assert _top_files(there, query, "lexical") == _top_files(here, query, "lexical"), query


def test_in_memory_bm25_ranks_exactly_as_the_local_storage(
    local: object, bm25_reader: PublishedReader
) -> None:
    """Once built, lexical hits are the local storage's: the same ids in the same order with
    the same BM25 scores, chunks (history included) and whole files."""
    store = _storage(local)
    for query in [*QUERIES, "sales tax", "SqliteBackend save_order", "pricing", "the and of"]:
        for mine, theirs in [
            (bm25_reader.lexical_top_k(query, 1000), store.lexical_top_k(query, 1000)),
            (bm25_reader.lexical_files(query, 1000), store.lexical_files(query, 1000)),
        ]:
            assert [key for key, _ in mine] == [key for key, _ in theirs], query
            assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], rel=1e-9)
    assert bm25_reader.lexical_top_k("apply_discount", 3)  # not vacuous


def test_after_the_bm25_build_every_chunk_is_resident(
    local: object, bm25_reader: PublishedReader, pg_server: PgServer
) -> None:
    """The build read every row: lexical hits and their chunks need no round trip, even with
    the connection gone (the local storage keeps its chunks in memory the same way)."""
    store = _storage(local)
    conn = bm25_reader._db.session.connection()
    with pg_server.admin(conn.info.dbname) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
    hits = bm25_reader.lexical_top_k("apply the coupon discount at checkout", 50)
    assert hits
    for chunk_id, _ in hits:
        assert bm25_reader.chunk(chunk_id) == store.chunk(chunk_id)
    path = store.paths()[0]
    assert bm25_reader.chunks_of(path) == store.chunks_of(path)


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "dense"])
def test_search_over_the_in_memory_bm25_returns_the_local_top5_files_in_order(
    local: object, bm25_reader: PublishedReader, mode: Mode
) -> None:
    """With BM25 in memory even lexical-only search agrees with the local storage, including
    the question ts_rank got wrong (above)."""
    there, here = _views(local, bm25_reader)
    for query in QUERIES:
        assert _top_files(there, query, mode) == _top_files(here, query, mode), query


def test_the_bm25_tables_are_built_in_the_background_after_a_few_queries(
    reader: PublishedReader, pg_dsn: str
) -> None:
    """The first queries go to PostgreSQL; then a background thread builds the tables and
    later queries are answered from memory with BM25 scores."""
    with PublishedReader(pg_dsn, reader.revision.id, lexical_after=2) as lazy:
        first = lazy.lexical_top_k("apply the coupon discount at checkout", 10)
        assert first == reader.lexical_top_k("apply the coupon discount at checkout", 10)
        lazy.lexical_files("coupon", 5)  # the second query starts the build
        deadline = time.monotonic() + 30
        while lazy.lexical_scale != "bm25" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lazy.lexical_scale == "bm25"
        assert lazy.lexical.build_seconds > 0
        assert lazy.lexical_top_k("apply the coupon discount at checkout", 10) != first


def test_a_failed_bm25_build_leaves_postgres_answering(
    reader: PublishedReader, pg_dsn: str, pg_server: PgServer
) -> None:
    """The connection lost when the tables would be read: the build fails with a warning,
    nothing is half-built, PostgreSQL keeps answering (reconnected), a later build works."""
    with PublishedReader(pg_dsn, reader.revision.id, lexical_after=None) as lonely:
        conn = lonely._db.session.connection()
        with pg_server.admin(conn.info.dbname) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        lonely.warm_up()
        assert lonely.lexical_scale == "ts_rank" and lonely.lexical.built is None
        assert lonely.lexical_top_k("apply_discount", 1) == reader.lexical_top_k(
            "apply_discount", 1
        )
        lonely.warm_up()
        assert lonely.lexical_scale == "bm25"


def test_open_by_repository_and_sha_and_over_a_given_connection(
    local: object, reader: PublishedReader, pg_dsn: str
) -> None:
    from codeask.core.git.repo import head_sha
    from codeask.core.storage.postgres.connect import PgError

    sha = head_sha(local.root)  # type: ignore[attr-defined]
    assert sha and reader.revision.sha == sha
    with PublishedReader.open(pg_dsn, "github.com/acme/shop", sha) as found:
        assert found.generation == reader.generation and found.counts() == reader.counts()
    with pytest.raises(PgError, match="is not published"):
        PublishedReader.open(pg_dsn, "github.com/acme/shop", "f" * 40)
    with connect(pg_dsn) as conn:
        shared = PublishedReader(conn, reader.revision.id)
        assert shared.lexical_top_k("discount", 3) == reader.lexical_top_k("discount", 3)
        assert conn.execute("SHOW statement_timeout").fetchone() == ("5s",)
        shared.close()  # not its connection: left open
        assert not conn.closed


# ---- faults --------------------------------------------------------------------------------------


def test_an_unreachable_server_is_pg_unavailable_at_once_without_the_password() -> None:
    dsn = f"postgresql://editor:Hunter2-secret@127.0.0.1:{free_port()}/codeask"
    started = time.monotonic()
    with pytest.raises(PgUnavailable) as caught:
        PublishedReader(dsn, 1)
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert "Hunter2-secret" not in message
    assert "editor@127.0.0.1" in message


def test_a_connection_lost_mid_session_is_pg_unavailable_then_reconnects(
    reader: PublishedReader, pg_server: PgServer, pg_dsn: str
) -> None:
    conn = reader._db.session.connection()
    assert conn is not None
    pid = conn.info.backend_pid
    dbname = conn.info.dbname
    ids = reader.symbol_ids("apply_discount")
    with pg_server.admin(dbname) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    started = time.monotonic()
    with pytest.raises(PgUnavailable, match="lost the connection") as caught:
        reader.lexical_top_k("discount", 5)
    assert time.monotonic() - started < 5
    assert "sup3r-Secret-pw" not in str(caught.value)
    # Cached answers need no connection; the next query reconnects.
    assert reader.symbol_ids("apply_discount") == ids
    assert [i for i, _ in reader.lexical_top_k("apply_discount", 1)] == ids[:1]


def test_a_blocked_query_ends_at_the_statement_timeout(
    local: object, pg_server: PgServer, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never a hang: a query waiting on a lock is cancelled by statement_timeout."""
    monkeypatch.setenv("TEAM_DSN", pg_dsn)
    result = publish_folder(
        local.root, local.storage, "TEAM_DSN", "github.com/acme/shop", tier="static"
    )
    with PublishedReader(pg_dsn, result.revision_id, statement_timeout_ms=500) as slow:
        with connect(pg_dsn, autocommit=False) as locker:
            locker.execute("LOCK TABLE codeask_chunk IN ACCESS EXCLUSIVE MODE")
            started = time.monotonic()
            with pytest.raises(PgUnavailable, match=r"did not answer within 0\.5 s") as caught:
                slow.lexical_top_k("discount", 5)
            assert time.monotonic() - started < 3
            locker.rollback()
        assert "sup3r-Secret-pw" not in str(caught.value)
        assert slow.lexical_top_k("discount", 5)  # the connection survived the cancel
