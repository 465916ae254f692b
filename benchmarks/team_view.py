"""A corpus's index published to PostgreSQL and searched from there (issue 15's parity check).

`benchmarks.retrieval --backend postgres` indexes each corpus locally as usual, publishes the
index (MiniLM vectors, the default) to an embedded PostgreSQL as a revision, and answers every
question from a `PublishedReader` of that revision, as an editor on the team backend reads the
committed content. The published revision is named by the corpus, not a git commit (the eval
corpora are plain folders).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.pg_bench import database, postgres
from codeask.config import Settings
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.indexer import FolderIndex
from codeask.core.storage.postgres.publish import publish, revision_rows
from codeask.core.storage.postgres.published import PublishedReader
from codeask.core.storage.protocol import IndexReader


@dataclass
class PublishedView:
    """A `retrieve.Searchable` over a published revision."""

    root: Path
    settings: Settings
    storage: IndexReader
    embedder: CachedEmbedder


@contextmanager
def team_database() -> Iterator[str]:
    """The DSN of an empty database on a throwaway PostgreSQL with pgvector."""
    with postgres() as server:
        yield database(server, "parity")


def published_view(folder: FolderIndex, dsn: str, name: str) -> tuple[PublishedView, float]:
    """Publish `folder`'s index (MiniLM tier) as revision `name`; a view of it with its
    lexical tables in memory (as a server has them), and the seconds the build took."""
    model, dim, chunks, vectors, files = revision_rows(folder.storage, "minilm")
    sha = hashlib.sha1(name.encode()).hexdigest()
    result = publish(dsn, name, sha, model, dim, chunks, vectors, files)
    reader = PublishedReader(dsn, result.revision_id, model=model)
    reader.warm_up()
    view = PublishedView(folder.root, folder.settings, reader, folder.embedder)
    return view, reader.lexical.build_seconds
