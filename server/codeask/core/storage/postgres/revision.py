"""What a `PublishedReader` loads once about its revision: the row, the file list and a small
index of every chunk (id, path, kind, symbol, whether it has a vector, a history chunk's
commit). A revision never changes, so nothing here is ever invalidated.

From it come `paths`, `file`, `FileRecord.chunk_ids` (the file's chunk ids in id order: the
indexer numbers a file's chunks in file order), `history_commits`, the counts, and the
exact-name tables (`symbol_ids`, `paths_named`), built by `core/symbol_table.SymbolTable`
from the `symbol` column, so their semantics are the local storage's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from codeask.core.records import HISTORY_KINDS, Chunk, FileRecord
from codeask.core.storage.postgres.connect import PgError
from codeask.core.storage.postgres.schema import (
    CHUNK_TABLE,
    FILE_TABLE,
    REPOSITORY_TABLE,
    REVISION_TABLE,
)
from codeask.core.storage.symbol_table import SymbolTable

if TYPE_CHECKING:
    import psycopg

#: Runs one query: (sql, args, what it is doing) → rows.
Query = Callable[[str, Sequence[Any], str], list[tuple[Any, ...]]]

#: The chunk columns a `Chunk` is built from (`chunk_of` reads them in this order).
CHUNK_COLUMNS = (
    "chunk_id, path, language, kind, start_line, end_line, text, symbol, parent, docstring, "
    "calls, part, meta"
)


def meta_of(value: object) -> dict[str, str]:
    """A chunk's `meta` from its jsonb column (a dict, or text/binary jsonb)."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        loaded = json.loads(value[1:] if isinstance(value, bytes) else value)  # binary jsonb: v1
        return {str(k): str(v) for k, v in loaded.items()}
    return {}


def chunk_of(row: Sequence[Any]) -> Chunk:
    """A chunk from a row of CHUNK_COLUMNS."""
    return Chunk(
        path=row[1],
        language=row[2],
        kind=row[3],
        start_line=int(row[4]),
        end_line=int(row[5]),
        text=row[6],
        symbol=row[7],
        parent=row[8],
        docstring=row[9],
        calls=list(row[10]),
        part=int(row[11]),
        id=int(row[0]),
        meta=meta_of(row[12]),
    )


@dataclass(frozen=True)
class RevisionInfo:
    """The published revision a reader serves."""

    id: int
    repository: str
    sha: str
    model: str
    dim: int
    chunk_count: int
    file_count: int
    published_at: float
    """Epoch seconds."""


@dataclass
class RevisionIndex:
    """The revision's files and chunk index, in memory."""

    info: RevisionInfo
    records: dict[str, FileRecord]
    #: Every chunk id, and those with a vector.
    ids: set[int] = field(default_factory=set)
    embedded: set[int] = field(default_factory=set)
    #: Files in the order of their first chunk id.
    paths: list[str] = field(default_factory=list)
    #: Commits with history chunks, by their first chunk id.
    history: list[str] = field(default_factory=list)
    symbols: SymbolTable = field(default_factory=SymbolTable)


def _info(query: Query, revision_id: int, location: str) -> RevisionInfo:
    row = query(
        f"""SELECT r.id, p.name, r.sha, r.model, r.dim, r.chunk_count, r.file_count,
                   r.complete, extract(epoch FROM r.published_at)::float8
            FROM {REVISION_TABLE} r JOIN {REPOSITORY_TABLE} p ON p.id = r.repository_id
            WHERE r.id = %s""",
        (revision_id,),
        "reading the revision",
    )
    if not row or not row[0][7]:
        raise PgError(
            f"revision {revision_id} is not published in the team index {location} "
            "(or was removed by gc)"
        )
    r = row[0]
    return RevisionInfo(int(r[0]), r[1], r[2], r[3], int(r[4]), int(r[5]), int(r[6]), float(r[8]))


def load_revision(query: Query, revision_id: int, location: str) -> RevisionIndex:
    """Three queries: the revision row, its files, its chunk index (`PgError` when the
    revision is missing or incomplete)."""
    info = _info(query, revision_id, location)
    files = query(
        f"SELECT path, sha256, language FROM {FILE_TABLE} WHERE revision_id = %s",
        (revision_id,),
        "reading the file list",
    )
    rows = query(
        f"""SELECT chunk_id, path, kind, symbol, vec IS NOT NULL, meta ->> 'sha'
            FROM {CHUNK_TABLE} WHERE revision_id = %s ORDER BY chunk_id""",
        (revision_id,),
        "reading the chunk index",
    )
    records = {
        path: FileRecord(path=path, size=0, mtime_ns=0, sha256=sha256, language=language)
        for path, sha256, language in files
    }
    index = RevisionIndex(info, records)
    history: dict[str, list[int]] = {}
    named: list[Chunk] = []
    for chunk_id, path, kind, symbol, has_vec, sha in rows:
        cid = int(chunk_id)
        index.ids.add(cid)
        if has_vec:
            index.embedded.add(cid)
        if kind in HISTORY_KINDS:
            history.setdefault(sha or "", []).append(cid)
            continue
        record = records.get(path)
        if record is not None:
            record.chunk_ids.append(cid)
        if symbol:
            named.append(
                Chunk(
                    path=path,
                    language="",
                    kind=kind,
                    start_line=0,
                    end_line=0,
                    text="",
                    symbol=symbol,
                    id=cid,
                )
            )
    history.pop("", None)
    big = float("inf")
    index.paths = sorted(
        records, key=lambda p: (records[p].chunk_ids[0] if records[p].chunk_ids else big, p)
    )
    index.history = list(history)  # dict order: by first chunk id
    index.symbols.rebuild(info.id, named, index.paths)
    return index


def nearest_revision(
    conn: psycopg.Connection,
    repo_name: str,
    candidate_shas: Sequence[str],
    model: str | None = None,
) -> RevisionInfo | None:
    """The complete published revision of `repo_name` for the FIRST of `candidate_shas` that has
    one (the caller passes HEAD, then its ancestors nearest first); None when none is. With
    several models published for that sha, the newest publish wins unless `model` is given."""
    shas = [s for s in candidate_shas if s]
    if not shas:
        return None
    row = conn.execute(
        f"""SELECT r.id, p.name, r.sha, r.model, r.dim, r.chunk_count, r.file_count,
                   extract(epoch FROM r.published_at)::float8
            FROM {REVISION_TABLE} r JOIN {REPOSITORY_TABLE} p ON p.id = r.repository_id
            WHERE p.name = %s AND r.sha = ANY(%s) AND r.complete
              AND (%s::text IS NULL OR r.model = %s)
            ORDER BY array_position(%s::text[], r.sha), r.published_at DESC, r.id DESC
            LIMIT 1""",
        (repo_name, shas, model, model, shas),
    ).fetchone()
    if row is None:
        return None
    return RevisionInfo(
        int(row[0]), row[1], row[2], row[3], int(row[4]), int(row[5]), int(row[6]), float(row[7])
    )
