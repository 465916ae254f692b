"""The packaged model's chunk session, from a copy that loads without a peak (issue 29).

fastembed loads the packaged file and onnxruntime folds its int8 weights to float32 in the
loading process: the session keeps ~135 MB and the load reaches ~245 MB above the process for a
moment; a language server's peak during a cold index of sphinx 5.1.1 was that moment. The copy
`chunk_fold` writes (once per machine, in a child process, kept in the model cache with a
sidecar like the int8 query copy) keeps the word-piece table int8 and the folded weights in a
file onnxruntime maps. Loaded from it, the same chunk vectors to the bit cost ~110 MB at rest and
~90 MB at the load's peak (benchmarks/README.md, "A cold index's peak").

`ChunkSession` runs it the way fastembed ran the packaged model: the same tokenizer settings,
the same graph optimizations, mean pooling over the attention mask in float64, L2-normalised.
Without the `onnx` package, or when the copy cannot be made, `embed.FastEmbedder` loads the
packaged file through fastembed as before and logs why.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from codeask.core.embedding.query_encoder import (
    MODEL_MAX_TOKENS,
    NO_SPINNING,
    WORK_PREFIX,
    DerivationError,
    run_in_child,
    sweep_abandoned,
)
from codeask.core.runtime import private_files

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

#: Runs of one session at once for a caller who waits (`ChunkSession.embed`'s lanes): two
#: cores, what the laptop this is measured on has; a daemon shared by several sessions on a
#: bigger machine leaves the other cores to them.
MAX_LANES = 2
#: Lanes beyond one, for the whole process: a call gets its extra lanes only when they are
#: free, so many requests at once (a shared daemon's sessions) run one lane each as before and
#: none waits for another's lanes.
_SPARE_LANES = threading.BoundedSemaphore(MAX_LANES - 1)
#: Changes whenever chunk_fold's recipe changes: a copy made by another recipe is remade.
CHUNK_RECIPE = "word-table-int8+ort-basic-external/1"
CHUNK_FILE = "chunk-model.onnx"


class ChunkProvenance(msgspec.Struct, forbid_unknown_fields=True):
    """The sidecar of the chunk copy: what it was made from, how, and both files' digests."""

    source_sha256: str
    recipe: str
    sha256: str
    data_sha256: str


def _data_of(model: Path) -> Path:
    from codeask.core.embedding.chunk_fold import data_name

    return model.with_name(data_name(model))


def derive_chunk_model(source: Path, source_sha256: str, target: Path) -> Path:
    """`target`: the chunk copy of `source` (and its data file beside it), made now unless a
    verified one is there. Made in a work folder by a child process and renamed into place
    (data first, then the model, then the sidecar), so a kill never leaves a half copy."""
    from codeask.core.embedding.base import file_sha256

    sidecar = target.with_suffix(".json")
    with contextlib.suppress(OSError, msgspec.DecodeError):
        known = msgspec.json.decode(sidecar.read_bytes(), type=ChunkProvenance)
        fresh = known.source_sha256 == source_sha256 and known.recipe == CHUNK_RECIPE
        if (
            fresh
            and file_sha256(target) == known.sha256
            and file_sha256(_data_of(target)) == known.data_sha256
        ):
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_abandoned(target.parent)
    import tempfile

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=WORK_PREFIX) as work:
        made = Path(work) / CHUNK_FILE
        run_in_child("codeask.core.embedding.chunk_fold", source, made, "the chunk model's copy")
        if not _data_of(made).is_file():
            raise DerivationError("the chunk model's copy wrote no data file")
        provenance = ChunkProvenance(
            source_sha256, CHUNK_RECIPE, file_sha256(made), file_sha256(_data_of(made))
        )
        staged_sidecar = Path(work) / "sidecar.json"
        staged_sidecar.write_bytes(msgspec.json.encode(provenance))
        sidecar.unlink(missing_ok=True)  # no sidecar names a pair that is half replaced
        os.replace(_data_of(made), _data_of(target))
        os.replace(made, target)
        os.replace(staged_sidecar, sidecar)
    for path in (target, _data_of(target), sidecar):
        private_files.tighten(path)
    return target


class ChunkSession:
    """Texts → L2-normalised rows of the packaged model, as fastembed computed them."""

    def __init__(self, model: Path, tokenizer_dir: Path, threads: int) -> None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json"))
        tokenizer.enable_truncation(MODEL_MAX_TOKENS, direction="right")
        tokenizer.enable_padding(direction="right", pad_id=0, pad_type_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self.threads = threads
        """onnxruntime's threads for one run (0: the runtime's choice, one per core)."""
        self.session = self._session(model, threads)

    @staticmethod
    def _session(model: Path, threads: int) -> InferenceSession:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.enable_cpu_mem_arena = False  # as fastembed's sessions here (issue 29)
        # idle pool threads sleep instead of spinning: 25 kernel chunks took 4.3 CPU-s with
        # spinning and 2.2 without, the same vectors to the bit (a pasted report's candidates
        # embedded on demand; on a busy 2-core machine wall 9.8 -> 4.7 s; benchmarks/README.md)
        options.add_session_config_entry(NO_SPINNING, "0")
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = threads
        return ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])

    def embed(
        self, texts: Sequence[str], batch_size: int = 1, lanes: int = 1
    ) -> Iterator[np.ndarray]:
        """One row per text, in order; each batch padded to its own longest text.

        `lanes` > 1 on a session of one thread (the server's, `driver.SERVER_EMBED_THREADS`:
        its background embedding leaves a core to requests) runs that many batches at once,
        each on its own thread: onnxruntime runs one session from several threads at once,
        and with one thread a run computes on the thread that calls it. A report's 25
        candidates embedded on demand took one core for ~2.6 s in the daemon, while the same
        report without the daemon (a session of the runtime's two threads) took ~1.4 s of
        model time. Each batch is the same run either way: the same rows, bit for bit. Lanes
        beyond one are the process's (`_SPARE_LANES`): while another call holds them, this one
        runs its batches itself.
        """
        size = max(1, batch_size)
        batches = [list(texts[start : start + size]) for start in range(0, len(texts), size)]
        laned = lanes > 1 and self.threads == 1 and len(batches) > 1
        if laned and _SPARE_LANES.acquire(blocking=False):
            pool = ThreadPoolExecutor(MAX_LANES)
            try:
                for rows in pool.map(self._batch, batches):
                    yield from rows
            finally:  # a failed batch or a caller gone: the batches not started are dropped
                pool.shutdown(wait=True, cancel_futures=True)
                _SPARE_LANES.release()
            return
        for batch in batches:
            yield from self._batch(batch)

    def _batch(self, texts: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        states = np.asarray(self.session.run(None, feed)[0])
        return _pooled(states, mask)


def _pooled(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """fastembed's mean pooling and normalisation (float64 sums, cast back at the end)."""
    total = np.sum(states, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
    mean = total / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
    norm = np.maximum(np.linalg.norm(mean, ord=2, axis=1, keepdims=True), 1e-12)
    return (mean / norm).astype(states.dtype, copy=False)
