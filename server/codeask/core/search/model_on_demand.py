"""The model tier's list for a folder filled on demand (`core/embedding/on_demand.py`).

A folder past `embed.model_full_pass_chunks` has no full MiniLM tier: for a question the model
tier ranks (`model_gate`), the first pass's best `embed.model_candidates` candidates (lexical,
lead, symbol and static lists fused) are embedded when they have no vector yet, cached by
content hash, and ranked by the query's MiniLM vector. That list is fused like the full tier's
list. Only those candidates are ranked, whatever the cache holds from earlier questions, so
an answer is the same with a cold cache and a warm one.
"""

from __future__ import annotations

import heapq
from operator import itemgetter
from pathlib import Path
from typing import Protocol

import numpy as np

from codeask.config import Settings
from codeask.core.embedding import on_demand
from codeask.core.embedding.embed import CachedEmbedder
from codeask.core.indexer import index_dir_for
from codeask.core.storage.protocol import IndexReader


class Sized(Protocol):
    """What `active` reads of a folder (tiers.Searchable has it)."""

    settings: Settings

    @property
    def storage(self) -> IndexReader: ...


class Folder(Sized, Protocol):
    """What the list reads of a folder (retrieve.Searchable has it)."""

    root: Path

    @property
    def embedder(self) -> CachedEmbedder: ...


def active(folder: Sized) -> bool:
    """Whether the folder's model tier is filled on demand: it builds one and is past the size
    of a full pass (by the policy alone: the same ranking whatever its vectors cover)."""
    settings = folder.settings
    chunks = folder.storage.chunk_count()
    return "minilm" in settings.embed.tiers and not on_demand.full_pass(chunks, settings)


def ranked(folder: Folder, query: np.ndarray, fused: dict[int, float]) -> list[int]:
    """The first pass's best candidates (`fused`), best first by the model tier: vectors the
    index holds (files opened or changed), else the on-demand cache's, else embedded now."""
    best = heapq.nlargest(folder.settings.embed.model_candidates, fused.items(), key=itemgetter(1))
    storage = folder.storage
    read = storage.chunks([i for i, _ in best])
    ids = [i for i, _ in best if i in read]
    if not ids or not query.size:
        return []
    rows: dict[int, np.ndarray] = {}
    for chunk_id in ids:
        row = storage.vector("minilm", chunk_id)
        if row is not None:
            rows[chunk_id] = row
    wanted = [read[i] for i in ids if i not in rows]
    if wanted:
        embedder = folder.embedder
        cache = on_demand.cache_for(index_dir_for(folder.root, folder.settings), embedder.dim)
        keys = [chunk.content_hash() for chunk in wanted]
        texts = [chunk.embed_text() for chunk in wanted]
        fresh = on_demand.vectors(embedder, cache, keys, texts)
        rows.update((chunk.id, row) for chunk, row in zip(wanted, fresh, strict=True))
    scores = np.stack([rows[i] for i in ids]).astype(np.float32) @ query.astype(np.float32)
    order = sorted(range(len(ids)), key=lambda n: (-float(scores[n]), n))
    return [ids[n] for n in order]
