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

import json
import struct
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from codeask.config import Settings, cache_dir
from codeask.core.embed import (
    CachedEmbedder,
    EmbeddingCache,
    EmbedError,
    file_sha256,
    model_slug,
)

STATIC_MODEL_NAME = "minishlab/potion-base-8M@bf8b0566-f16"
STATIC_DIM = 256
STATIC_MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "potion-base-8M"
#: sha256 of the shipped files (scripts/vendor_potion.py writes them; NOTICE.md records them).
STATIC_FILES_SHA256 = {
    "model.safetensors": "3955b8a3acf2d48c6a88e980c002eb842336cafee896ee39e15007e05ee16229",
    "tokenizer.json": "e67e803f624fb4d67dea1c730d06e1067e1b14d830e2c2202569e3ef0f70bb50",
}
#: model2vec's default `max_length` (tokens per text).
MAX_TOKENS = 512
#: Texts per tokenizer call: bounds the memory of one gathered (tokens × 256) block.
BATCH = 1024
#: Texts in one `embed` call from which the whole matrix is widened once, not per text.
WIDEN_AT = 64


def read_matrix(path: Path) -> np.ndarray:
    """The `embeddings` tensor of a one-tensor safetensors file in its stored dtype (rows =
    token ids): the shipped float16 stays float16, 15 MB resident instead of 30 (issue 29);
    `StaticEmbedder` widens only the rows a text gathers, which changes no bit of a vector."""
    blob = path.read_bytes()
    try:
        (size,) = struct.unpack("<Q", blob[:8])
        info = json.loads(blob[8 : 8 + size])["embeddings"]
        start, end = info["data_offsets"]
        dtype = {"F16": "<f2", "F32": "<f4"}[info["dtype"]]
        data = np.frombuffer(
            blob,
            dtype=dtype,
            count=(end - start) // np.dtype(dtype).itemsize,
            offset=8 + size + start,
        )
        return data.reshape(info["shape"]).copy()  # its own buffer: the file's bytes go
    except (struct.error, ValueError, KeyError, TypeError) as exc:
        raise EmbedError(f"{path} is not a readable safetensors matrix: {exc}") from exc


def _check_sha256(folder: Path, pinned: dict[str, str]) -> None:
    """Refuse any shipped file whose bytes are not the pinned ones."""
    for name, expected in pinned.items():
        path = folder / name
        if not path.is_file():
            raise EmbedError(f"static embedding model file missing: {path}; reinstall codeask")
        actual = file_sha256(path)
        if actual != expected:
            raise EmbedError(
                f"refusing to load {path}: sha256 {actual} is not the pinned {expected}; "
                "reinstall codeask"
            )


class StaticEmbedder:
    """potion-base-8M: tokenizer + float16 token matrix; `embed` is a mean of rows."""

    def __init__(
        self, folder: Path = STATIC_MODEL_DIR, pinned: dict[str, str] | None = None
    ) -> None:
        from tokenizers import Tokenizer

        _check_sha256(folder, STATIC_FILES_SHA256 if pinned is None else pinned)
        self.name = STATIC_MODEL_NAME
        self._matrix = read_matrix(folder / "model.safetensors")
        self.dim = int(self._matrix.shape[1])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.no_padding()
        vocab = self._tokenizer.get_vocab()
        if len(vocab) != self._matrix.shape[0]:
            raise EmbedError(f"{folder}: {len(vocab)} tokens but {self._matrix.shape[0]} rows")
        unk = getattr(self._tokenizer.model, "unk_token", None)
        self._unk_id = vocab.get(unk) if unk is not None else None
        # model2vec cuts each text to max_length × the median token length (in characters)
        # before tokenizing, so a huge text costs no more than a long one.
        self._char_cap = MAX_TOKENS * int(np.median([len(token) for token in vocab]))

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """model2vec's tokenization: no special tokens, 512 tokens at most, then `[UNK]` dropped."""
        cut = [text[: self._char_cap] for text in texts]
        encodings = self._tokenizer.encode_batch_fast(cut, add_special_tokens=False)
        unk = self._unk_id
        return [[i for i in enc.ids if i != unk] for enc in encodings]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text (a text without tokens gives a zero row)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Many texts (indexing): one float32 copy of the matrix for this call (~10 ms, 30 MB
        # while it runs), since widening each text's gathered rows cost ~20% of a first
        # pass; a query widens only its own rows. The sums are bit for bit the same.
        matrix = self._matrix.astype(np.float32) if len(texts) >= WIDEN_AT else self._matrix
        for start in range(0, len(texts), BATCH):
            out[start : start + BATCH] = self._embed_batch(texts[start : start + BATCH], matrix)
        return out

    def _embed_batch(self, texts: Sequence[str], matrix: np.ndarray) -> np.ndarray:
        # One small gather + sum per text: ~30x faster here than np.add.reduceat over the batch.
        # Gathered float16 rows are widened before the sum (exact), so every vector is bit for
        # bit the one a float32 matrix gives.
        means = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, ids in enumerate(self.token_ids(texts)):
            if ids:
                rows = matrix[ids]
                if rows.dtype != np.float32:  # a query's own rows (astype is not free even
                    rows = rows.astype(np.float32)  # when the dtype already matches)
                means[row] = rows.sum(axis=0) / len(ids)
        norms = np.linalg.norm(means, axis=1, keepdims=True) + 1e-32
        return means / norms


_shared: dict[str, CachedEmbedder] = {}
_shared_lock = threading.Lock()


def load_static_embedder(settings: Settings) -> CachedEmbedder:
    """The static model with its own content-hash cache file; one per cache folder (~0.1 s)."""
    root = cache_dir(settings)
    with _shared_lock:
        if str(root) not in _shared:
            model = StaticEmbedder()
            path = root / "embeddings" / f"{model_slug(model.name)}.sqlite"
            _shared[str(root)] = CachedEmbedder(model, EmbeddingCache(path, model.dim))
        return _shared[str(root)]
