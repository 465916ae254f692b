"""The static embedding tier: potion-base-8M (model2vec, MIT), vendored as float16.

A static model is a table of one vector per token: a text's vector is the mean of its tokens'
rows, L2-normalised. No neural network runs, so it embeds ~100× faster than MiniLM and every
chunk can have a dense vector during the first pass. Tokenization, truncation and pooling follow
model2vec 0.10's `StaticModel.encode` exactly: the text cut to 512 × the median token length
(characters), tokenized without special tokens and truncated to 512 tokens, then `[UNK]` dropped;
a text without tokens gives a zero row.

The matrix file's sha256 is pinned: a different file is refused with a clear error, never loaded.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from codeask.config import Settings, cache_dir
from codeask.core.embedding.embed import (
    CachedEmbedder,
    EmbeddingCache,
    EmbedError,
    file_sha256,
    model_slug,
)
from codeask.core.embedding.verified import VerifiedFiles
from codeask.core.embedding.vocab_cache import read_cached, write_cached
from codeask.core.embedding.wordpiece_ascii import AsciiWordPiece, normalised
from codeask.core.embedding.wordpiece_batch import BatchWordPiece, model_split_many
from codeask.core.embedding.wordpiece_mixed import mixed_ids
from codeask.core.embedding.wordpiece_reach import ReachTokenizers, reachable
from codeask.core.runtime import resident

if TYPE_CHECKING:
    from tokenizers import Tokenizer

STATIC_MODEL_NAME = "minishlab/potion-base-8M@bf8b0566-f16"
STATIC_DIM = 256
STATIC_MODEL_DIR = Path(__file__).resolve().parent.parent.parent / "models" / "potion-base-8M"
#: sha256 of the shipped files (scripts/vendor_potion.py writes them; NOTICE.md records them).
STATIC_FILES_SHA256 = {
    "model.safetensors": "3955b8a3acf2d48c6a88e980c002eb842336cafee896ee39e15007e05ee16229",
    "tokenizer.json": "e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50",
}
#: The token matrix (safetensors), mapped rather than read (`read_matrix`).
MATRIX_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
#: The record of model files already hashed (verified.py), in the cache folder.
VERIFIED_RECORD = "verified-models.json"
#: The pinned tokenizer's parsed vocabulary (vocab_cache.py), in the cache folder.
VOCAB_CACHE = "potion-vocab.msgpack"
_SHIPPED_TOKENIZER = STATIC_FILES_SHA256[TOKENIZER_FILE]
#: model2vec's default `max_length` (tokens per text).
MAX_TOKENS = 512
#: `char_cap` of the shipped tokenizer.json (512 × 6, the median length of its 29,528 tokens;
#: tests/unit/test_static_load.py checks it against the file).
PINNED_CHAR_CAP = 3072
#: Texts per tokenizer call: bounds the memory of one gathered (tokens × 256) block.
BATCH = 1024
#: Texts in one `embed` call from which the whole matrix is widened once, not per text.
WIDEN_AT = 64
#: Token rows gathered at once when texts of like length are summed together (1 MB of float32,
#: a core's L2 cache here: 2 MB blocks were no faster, 8 MB ones a half slower).
GROUP_ROWS = 1024
#: At most this many texts of at most this many characters in all (a query, a chunk's first
#: lines) are tokenized with only the vocabulary they reach; more build the whole tokenizer.
REACH_TEXTS = 8
REACH_CHARS = 2048
#: Distinct query words whose ids are remembered (wordpiece_ascii.py; a few hundred KB at most).
QUERY_WORDS = 4096


def read_matrix(path: Path, sha256: str = "", verified: VerifiedFiles | None = None) -> np.ndarray:
    """The `embeddings` tensor of a one-tensor safetensors file in its stored dtype (rows =
    token ids), read-only, over the file's own pages: the shipped float16 matrix (15 MB) is
    shared with every process that maps it and only the rows a query gathers are resident
    (issue 29; a private copy was 15 MB per process). With `sha256`, the mapped bytes are
    checked (the bytes hashed are the bytes used) and refused if they differ; hashing touches
    every page, which are let go again after. With `verified`, the very file (its fstat
    identity) already found to match is not hashed again (verified.py says what that gives
    up). `StaticEmbedder` widens only the rows a text gathers, which changes no bit of a
    vector."""
    try:
        with path.open("rb") as handle:
            stat = os.fstat(handle.fileno())
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        raise EmbedError(f"{path} is not a readable safetensors matrix: {exc}") from exc
    if sha256 and not (verified is not None and verified.known(path, stat, sha256)):
        actual = hashlib.sha256(mapped).hexdigest()
        resident.give_back(mapped)  # hashing touched every page
        if actual != sha256:
            mapped.close()
            raise EmbedError(
                f"refusing to load {path}: sha256 {actual} is not the pinned {sha256}; "
                "reinstall codeask"
            )
        if verified is not None:
            verified.remember(path, stat, sha256)
    try:
        (size,) = struct.unpack("<Q", mapped[:8])
        info = json.loads(mapped[8 : 8 + size])["embeddings"]
        start, end = info["data_offsets"]
        dtype = {"F16": "<f2", "F32": "<f4"}[info["dtype"]]
        data = np.frombuffer(
            mapped,
            dtype=dtype,
            count=(end - start) // np.dtype(dtype).itemsize,
            offset=8 + size + start,
        )
        return data.reshape(info["shape"])
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        mapped.close()
        raise EmbedError(f"{path} is not a readable safetensors matrix: {exc}") from exc


def _mapping_of(matrix: np.ndarray) -> mmap.mmap | None:
    """The mmap a `read_matrix` array is a view of."""
    base = matrix.base
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    return base if isinstance(base, mmap.mmap) else None


def _reach_of(path: Path, sha256: str, cache: Path | None = None) -> ReachTokenizers | None:
    """The pinned tokenizer's document for `ReachTokenizers`: from `cache` when it holds this
    very file's (vocab_cache.py), else its bytes checked against `sha256` and parsed once by
    msgspec (and cached). None if it is not a WordPiece tokenizer that can be cut down: the
    full tokenizer is used."""
    document: Any = None
    try:
        with path.open("rb") as handle:
            source = os.fstat(handle.fileno())
            if cache is not None:
                document = read_cached(cache, source, sha256)
            data = handle.read() if document is None else b""
    except OSError as exc:
        raise EmbedError(f"{path} is not a readable tokenizer: {exc}") from exc
    if document is None:
        actual = hashlib.sha256(data).hexdigest()
        if actual != sha256:
            raise EmbedError(
                f"refusing to load {path}: sha256 {actual} is not the pinned {sha256}; "
                "reinstall codeask"
            )
        try:
            document = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise EmbedError(f"{path} is not a readable tokenizer: {exc}") from exc
        if cache is not None and isinstance(document, dict):
            write_cached(cache, source, sha256, document)
    if not isinstance(document, dict) or not reachable(document):
        return None
    return ReachTokenizers(document, MAX_TOKENS)


def _check_sha256(folder: Path, pinned: dict[str, str]) -> None:
    """Refuse any shipped file whose bytes are not the pinned ones."""
    for name, expected in pinned.items():
        path = folder / name
        if not path.is_file():
            raise EmbedError(f"static embedding model file missing: {path}; reinstall codeask")
        if name == MATRIX_FILE or (name == TOKENIZER_FILE and expected == _SHIPPED_TOKENIZER):
            continue  # checked over the bytes used, by read_matrix / _reach_of
        actual = file_sha256(path)
        if actual != expected:
            raise EmbedError(
                f"refusing to load {path}: sha256 {actual} is not the pinned {expected}; "
                "reinstall codeask"
            )


def char_cap(vocab: Iterable[str]) -> int:
    """model2vec cuts each text to max_length × the median token length (in characters) before
    tokenizing, so a huge text costs no more than a long one."""
    return MAX_TOKENS * int(np.median([len(token) for token in vocab]))


def _vocabulary_facts(tokenizer: Tokenizer, pinned: bool) -> tuple[int, int | None, int]:
    """The tokenizer's size, its `[UNK]` id and the character cap. The pinned tokenizer's cap
    is `PINNED_CHAR_CAP`: its vocabulary as a dict (~25 ms, a twentieth of a one-shot search's
    CPU) is built only for another one."""
    unk = getattr(tokenizer.model, "unk_token", None)
    if pinned:
        unk_id = tokenizer.token_to_id(unk) if unk is not None else None
        return tokenizer.get_vocab_size(), unk_id, PINNED_CHAR_CAP
    vocab = tokenizer.get_vocab()
    return len(vocab), vocab.get(unk) if unk is not None else None, char_cap(vocab)


def sums_by_length(flat: np.ndarray, ends: np.ndarray, wide: np.ndarray) -> np.ndarray:
    """Each text's rows of `wide` (the widened matrix, its last row -0.0) summed: a bulk
    call's texts longest first, a few of like length at a time: their ids as one (tokens ×
    texts) block padded with the -0.0 row, gathered by one `take` and summed over its first
    axis. numpy adds each column token after token just as it does for one text's (tokens ×
    256) rows, but in inner loops as long as the block's row of texts rather than one per
    token. With `take` (faster than indexing): pooling 24-27 -> 16-19 CPU-ms per 1k chunks of
    kernel,mm,lib (issue 42)."""
    lengths = np.diff(ends, prepend=0)
    sums = np.zeros((len(lengths), wide.shape[1]), dtype=np.float32)
    longest = int(lengths.max()) if len(lengths) else 0
    padded = np.full((len(lengths), longest), wide.shape[0] - 1, dtype=np.intp)
    padded[np.arange(longest) < lengths[:, None]] = flat
    order = np.argsort(-lengths, kind="stable")
    padded, sorted_lengths = padded[order], lengths[order].tolist()
    first = 0
    while first < len(order) and sorted_lengths[first] > 0:
        size = sorted_lengths[first]
        last = min(len(order), first + max(1, GROUP_ROWS // size))
        block = wide.take(padded[first:last, :size].T, axis=0)
        sums[order[first:last]] = np.add.reduce(block, axis=0)
        first = last
    return sums


class StaticEmbedder:
    """potion-base-8M: tokenizer + float16 token matrix; `embed` is a mean of rows."""

    def __init__(
        self,
        folder: Path = STATIC_MODEL_DIR,
        pinned: dict[str, str] | None = None,
        verified: VerifiedFiles | None = None,
        vocab_cache: Path | None = None,
    ) -> None:
        hashes = STATIC_FILES_SHA256 if pinned is None else pinned
        _check_sha256(folder, hashes)
        self.name = STATIC_MODEL_NAME
        matrix = folder / MATRIX_FILE
        self._matrix = read_matrix(matrix, hashes.get(MATRIX_FILE, ""), verified)
        self.dim = int(self._matrix.shape[1])
        self._tokenizer_path = folder / TOKENIZER_FILE
        self._full: Tokenizer | None = None
        self._full_lock = threading.Lock()
        self._wide: np.ndarray | None = None
        self._wide_holders = 0
        self._wide_lock = threading.Lock()
        self._reach: ReachTokenizers | None = None
        self._ascii: AsciiWordPiece | None = None
        self._batch: BatchWordPiece | None = None
        self._reach_ascii: AsciiWordPiece | None = None
        pinned_tokenizer = hashes.get(TOKENIZER_FILE) == _SHIPPED_TOKENIZER
        self._pinned_tokenizer = pinned_tokenizer
        if pinned_tokenizer:
            self._reach = _reach_of(self._tokenizer_path, _SHIPPED_TOKENIZER, vocab_cache)
        self._unk_id: int | None
        if self._reach is not None:
            size, self._unk_id = len(self._reach.vocab), self._reach.unk_id
            self._char_cap = PINNED_CHAR_CAP
        else:
            tokenizer = self._full_tokenizer()
            size, self._unk_id, self._char_cap = _vocabulary_facts(tokenizer, pinned_tokenizer)
        if size != self._matrix.shape[0]:
            raise EmbedError(f"{folder}: {size} tokens but {self._matrix.shape[0]} rows")

    def _full_tokenizer(self) -> Tokenizer:
        """The tokenizer with its whole vocabulary (~40 ms to build): for many or long texts."""
        with self._full_lock:
            if self._full is None:
                from tokenizers import Tokenizer

                tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.no_padding()
                if self._pinned_tokenizer:  # the pipeline wordpiece_ascii.py reproduces
                    specials = [t.content for t in tokenizer.get_added_tokens_decoder().values()]
                    self._ascii = AsciiWordPiece.of(tokenizer, MAX_TOKENS, specials)
                    many = model_split_many(tokenizer)
                    self._batch = BatchWordPiece(self._ascii.word_ids, MAX_TOKENS, many)
                self._full = tokenizer
            return self._full

    def _reaches(self, texts: Sequence[str]) -> bool:
        """A query's few short texts are tokenized with only the vocabulary they reach (the
        same ids, wordpiece_reach.py), unless the full tokenizer is built already or a bulk
        run (inside `widened`) will need it anyway."""
        small = len(texts) <= REACH_TEXTS and sum(map(len, texts)) <= REACH_CHARS
        return self._full is None and self._reach is not None and small and not self._wide_holders

    def _ascii_for(self, reached: bool) -> AsciiWordPiece | None:
        """The Python path for ASCII texts: over the full tokenizer's model, or for a query
        over the reached vocabulary itself (WordPiece's greedy split, `ReachTokenizers.split`):
        building a cut-down tokenizer per query cost ~0.5 ms of a ~5 ms short question."""
        if not reached:
            return self._ascii
        if self._reach_ascii is None and self._reach is not None and self._pinned_tokenizer:
            reach = self._reach
            self._reach_ascii = AsciiWordPiece(reach.split, MAX_TOKENS, reach.specials, QUERY_WORDS)
        return self._reach_ascii

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """model2vec's tokenization: no special tokens, 512 tokens at most, then `[UNK]` dropped."""
        unk = self._unk_id  # rare in code: a scan in C finds most texts without one
        return [[i for i in ids if i != unk] if unk in ids else ids for ids in self._cut_ids(texts)]

    def _cut_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids cut at 512 tokens, `[UNK]` still in (`token_ids` drops it)."""
        cut = [text[: self._char_cap] for text in texts]
        reached = self._reaches(cut)
        if not reached:
            self._full_tokenizer()  # `_ascii` is made with it
        fast = self._ascii_for(reached)
        ids_of: list[list[int]] = [[] for _ in cut]
        rest: list[int] = []
        for n, text in enumerate(cut):
            ids = fast.ids(text) if fast is not None else None
            if ids is None:
                rest.append(n)
            else:
                ids_of[n] = ids
        if rest:
            left = [cut[n] for n in rest]
            reach = self._reach
            tokenizer = reach.for_texts(left) if reached and reach else self._full_tokenizer()
            encodings = tokenizer.encode_batch_fast(left, add_special_tokens=False)
            for n, encoding in zip(rest, encodings, strict=True):
                ids_of[n] = encoding.ids
        return ids_of

    def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
        """One L2-normalised float32 row per text (a text without tokens gives a zero row;
        `lanes`: a static model's call is a table lookup, one core is all it uses)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Many texts (indexing): one float32 copy of the matrix for this call (~10 ms, 30 MB
        # while it runs), since widening each text's gathered rows cost ~20% of a first
        # pass; a query widens only its own rows. The sums are bit for bit the same.
        matrix = self._matrix_for(len(texts))
        for start in range(0, len(texts), BATCH):
            out[start : start + BATCH] = self._embed_batch(texts[start : start + BATCH], matrix)
        return out

    def _matrix_for(self, count: int) -> np.ndarray:
        """The float32 copy from WIDEN_AT texts on (kept while `widened` is held, made at its
        first bulk call: an edit's few chunks never widen 30 MB), else whichever is there."""
        if count < WIDEN_AT:
            return self._matrix if self._wide is None else self._wide
        with self._wide_lock:
            if self._wide is None:
                wide = self._widen()
                if not self._wide_holders:
                    return wide
                self._wide = wide
            return self._wide

    @contextmanager
    def widened(self) -> Iterator[None]:
        """Bulk calls inside share one float32 copy of the matrix (`_matrix_for`): a pass
        embeds in many batches, and widening for each cost ~20 ms. Dropped when the last holder
        leaves, so a server at rest does not keep its 30 MB."""
        with self._wide_lock:
            self._wide_holders += 1
        try:
            yield
        finally:
            with self._wide_lock:
                self._wide_holders -= 1
                if self._wide_holders == 0:
                    self._wide = None
                    if self._ascii is not None:
                        self._ascii.forget()  # the words of a pass, not kept at rest
                    if self._batch is not None:
                        self._batch.forget()

    def _widen(self) -> np.ndarray:
        """The matrix as float32, with one more row of -0.0 after the tokens' (`sums_by_length`
        pads with it: x + -0.0 is x, bit for bit, whatever x)."""
        rows, dim = self._matrix.shape
        wide = np.empty((rows + 1, dim), dtype=np.float32)
        wide[:rows] = self._matrix
        wide[rows] = -0.0
        mapped = _mapping_of(self._matrix)
        if mapped is not None:
            resident.give_back(mapped)  # the widening touched every page of the file
        return wide

    def _embed_batch(self, texts: Sequence[str], matrix: np.ndarray) -> np.ndarray:
        # Each text's mean is its rows summed token after token (column by column), in float32:
        # gathered float16 rows are widened before the sum (exact), so every vector is bit for
        # bit the one a float32 matrix gives.
        bulk = matrix.shape[0] > self._matrix.shape[0]  # widened, with its -0.0 row
        held = self._wide_holders > 0  # inside `widened`, which drops the word table after
        flat, ends = self._bulk_ids(texts) if held else self._flat_ids(self._cut_ids(texts))
        if bulk:
            sums = sums_by_length(flat, ends, matrix)
        else:
            sums = self._sums_one_by_one(flat, ends, matrix)
        counts = np.diff(ends, prepend=0).astype(np.float32)
        means = sums / np.maximum(counts, 1)[:, None]
        norms = np.linalg.norm(means, axis=1, keepdims=True) + 1e-32
        return means / norms

    def _sums_one_by_one(
        self, flat: np.ndarray, ends: np.ndarray, matrix: np.ndarray
    ) -> np.ndarray:
        """A query's few texts: one small gather + sum each (~30x faster here than
        np.add.reduceat over the batch), only its own rows widened."""
        sums = np.zeros((len(ends), self.dim), dtype=np.float32)
        start = 0
        for row, end in enumerate(ends.tolist()):
            if end > start:
                rows = matrix.take(flat[start:end], axis=0)
                if rows.dtype != np.float32:  # astype is not free even when the dtype matches
                    rows = rows.astype(np.float32)
                sums[row] = np.add.reduce(rows, axis=0)
            start = end
        return sums

    def _bulk_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """`_flat_ids` of a bulk call: its plain ASCII texts tokenized together in numpy
        (wordpiece_batch.py: under half the CPU of one by one), the other texts' ASCII
        stretches too (wordpiece_mixed.py), a text writing out an added token alone."""
        self._full_tokenizer()
        fast, batch = self._ascii, self._batch
        if fast is None or batch is None:
            return self._flat_ids(self._cut_ids(texts))
        cut = [text[: self._char_cap] for text in texts]
        plain = {n for n, text in enumerate(cut) if fast.plain(text)}
        ids, counts = batch.flat([normalised(text) for n, text in enumerate(cut) if n in plain])
        rest = [n for n in range(len(cut)) if n not in plain]
        mixed = [n for n in rest if fast.unspecial(cut[n])]
        spans = mixed_ids([cut[n] for n in mixed], batch, self._encode_words, MAX_TOKENS)
        by_pieces = dict(zip(mixed, spans, strict=True))
        if not self._wide_holders:  # the pass ended meanwhile (a query's call): not kept at rest
            batch.forget()
        if len(plain) == len(cut):
            return _known(ids, np.cumsum(counts), self._unk_id)
        whole = iter(self._cut_ids([cut[n] for n in rest if n not in by_pieces]))
        pieces = iter(np.split(ids, np.cumsum(counts)[:-1]))
        return self._flat_ids(
            [
                next(pieces).tolist()
                if n in plain
                else by_pieces[n].tolist()
                if n in by_pieces
                else next(whole)
                for n in range(len(cut))
            ]
        )

    def _encode_words(self, words: list[str]) -> list[list[int]]:
        """Words holding characters past ASCII, through the full tokenizer in one call."""
        encodings = self._full_tokenizer().encode_batch_fast(words, add_special_tokens=False)
        return [encoding.ids for encoding in encodings]

    def _flat_ids(self, ids_of: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """The batch's ids as one array (numpy converting each text's list was ~a tenth of the
        embedding) and where each text ends, `[UNK]` dropped (`_known`)."""
        ends = np.cumsum(np.fromiter(map(len, ids_of), np.intp, len(ids_of)))
        total = int(ends[-1]) if len(ends) else 0
        return _known(np.fromiter(chain.from_iterable(ids_of), np.intp, total), ends, self._unk_id)


def _known(flat: np.ndarray, ends: np.ndarray, unk_id: int | None) -> tuple[np.ndarray, np.ndarray]:
    """`flat` and `ends` without `[UNK]`, dropped from the array at once (testing each text's
    list for it was ~3 % of a chunk worker's tokenizing)."""
    if unk_id is not None:
        known = flat != unk_id
        if not known.all():
            ends = np.cumsum(known)[ends - 1] * (ends > 0)
            flat = flat[known]
    return flat, ends


_shared: dict[str, CachedEmbedder] = {}
_shared_lock = threading.Lock()


def static_model_files(root: Path) -> dict[str, Any]:
    """The `StaticEmbedder` arguments of cache folder `root`: where its model files are
    recorded as verified and its vocabulary is cached (shared by every process using it)."""
    return {"verified": VerifiedFiles(root / VERIFIED_RECORD), "vocab_cache": root / VOCAB_CACHE}


def load_static_embedder(settings: Settings) -> CachedEmbedder:
    """The static model with its own content-hash cache file; one per cache folder (~0.1 s)."""
    root = cache_dir(settings)
    with _shared_lock:
        if str(root) not in _shared:
            model = StaticEmbedder(**static_model_files(root))
            path = root / "embeddings" / f"{model_slug(model.name)}.sqlite"
            _shared[str(root)] = CachedEmbedder(model, EmbeddingCache(path, model.dim))
        return _shared[str(root)]
