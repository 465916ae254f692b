"""MiniLM query vectors, fast: a search pays for its query's encoding every time, chunks once.

Three measured choices (benchmarks/README.md, rounds 5 and 6), all for the packaged model only:
- A query is read up to its first `embed.query_tokens` word pieces. A pasted report's
  reproducer and log past that cost encoding time (~0.2 ms per word piece on 2 cores) and did
  not help ranking (dev R@5 .892 → .909 at 96).
- `embed.query_int8` (default): the query runs through an int8 copy of the packaged model
  (per-channel dynamic quantization, onnxruntime's own), derived once, locally, from the
  sha-pinned packaged weights and kept in the model cache beside them: about twice as fast on
  CPU, vectors within cosine .99 of the model's (dev R@5 .909 → .895, MRR .683 → .681). Chunks
  keep the model itself. The quantizer runs in a child process (`int8_quantize`): its peak
  (~500 MB) would otherwise stay in the language server's high-water mark.
- A report's lead line is pooled again from the text's own pass instead of being encoded on its
  own (one encoding per report instead of two; dev R@5 .895 → .882, MRR .681 → .696).
Without the `onnx` package, or when the derivation fails, queries use the model itself (with the
word-piece cap) and the reason is logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from codeask.core.embedding.blend import blend_lead
from codeask.core.runtime import private_files

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

log = logging.getLogger(__name__)

#: The packaged model reads at most this many tokens (fastembed's limit for it).
MODEL_MAX_TOKENS = 256
#: Changes whenever the derivation below changes: a copy made by another recipe is remade.
INT8_RECIPE = "ort-basic+dynamic-qint8-per-channel/1"
INT8_FILE = "query-int8.onnx"


#: Work folders of a derivation (~110 MB while it runs, seconds); one older than an hour was
#: left by a killed process and is removed by the next derivation.
WORK_PREFIX = ".derive-"
ABANDONED_AFTER_S = 3600.0


class Int8Provenance(msgspec.Struct, forbid_unknown_fields=True):
    """The sidecar of the derived copy: what it was made from, how, and its own digest."""

    source_sha256: str
    recipe: str
    sha256: str


class DerivationError(Exception):
    """The int8 copy could not be made; the message says why (the child's own last words)."""


#: A derivation takes ~4 s on 2 idle cores; one still running after this is stopped.
DERIVE_TIMEOUT_S = 300.0


def derive_int8(source: Path, source_sha256: str, target: Path) -> Path:
    """`target`: the int8 copy of `source`, made now unless a verified one is already there.

    The quantization runs in a child process (`codeask.core.embedding.int8_quantize`): its ~500 MB
    peak never lands in the asking process. This process owns the files: the child writes into a
    temporary work folder beside `target`, and the result is renamed into place only after the
    child exited cleanly, so a crash, a kill or a second process deriving at the same time never
    leaves a half-written model under `target`'s name.
    """
    from codeask.core.embedding.base import file_sha256

    sidecar = target.with_suffix(".json")
    with contextlib.suppress(OSError, msgspec.DecodeError):
        known = msgspec.json.decode(sidecar.read_bytes(), type=Int8Provenance)
        fresh = known.source_sha256 == source_sha256 and known.recipe == INT8_RECIPE
        if fresh and target.is_file() and file_sha256(target) == known.sha256:
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    sweep_abandoned(target.parent)
    import tempfile  # a derivation's own imports: a query with the model cached needs none

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=WORK_PREFIX) as work:
        made = Path(work) / INT8_FILE
        _quantize_in_child(source, made)
        provenance = Int8Provenance(source_sha256, INT8_RECIPE, file_sha256(made))
        staged_sidecar = Path(work) / "sidecar.json"
        staged_sidecar.write_bytes(msgspec.json.encode(provenance))
        os.replace(made, target)
        os.replace(staged_sidecar, sidecar)
    for path in (target, sidecar):
        private_files.tighten(path)
    return target


def _quantize_in_child(source: Path, output: Path) -> None:
    run_in_child("codeask.core.embedding.int8_quantize", source, output, "quantization")


def run_in_child(module: str, source: Path, output: Path, what: str) -> None:
    """`python -m module SOURCE OUTPUT` in a child process, in OUTPUT's folder; DerivationError
    (`what` and the child's last words) unless it exited cleanly and OUTPUT exists."""
    # The child finds codeask and its dependencies where this process found them (an editable
    # install, a test run's source folder, a venv) and nowhere else: `-P` keeps `-m` from
    # putting the working directory first on its path, and it runs in the work folder anyway (a
    # language server's working directory is often the workspace: a cloned repository's own
    # `onnx/` or `numpy/` must never be imported).
    import subprocess

    paths = [entry for entry in sys.path if entry]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = [sys.executable, "-P", "-m", module, str(source), str(output)]
    try:
        done = subprocess.run(
            command,
            cwd=output.parent,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=DERIVE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:  # run() has killed the child
        raise DerivationError(f"{what} stopped after {exc.timeout:.0f} s") from exc
    if done.returncode != 0 or not output.is_file():
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1].strip() if lines else "no message"
        raise DerivationError(f"{what} exited with {done.returncode}: {why}")


def sweep_abandoned(folder: Path) -> None:
    """Remove work folders older than an hour (left by a killed derivation)."""
    import shutil

    now = time.time()
    for work in folder.glob(WORK_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if now - work.stat().st_mtime > ABANDONED_AFTER_S:
                shutil.rmtree(work)
                log.info("removed %s, left by a derivation that did not finish", work)


#: onnxruntime's session setting for its intra-op pool's busy-waiting ("0": idle threads sleep;
#: vectors are the same to the bit, and spinning doubled the CPU of on-demand embedding on 2 cores).
NO_SPINNING = "session.intra_op.allow_spinning"


class QueryEncoder:
    """One query → one L2-normalised vector of the packaged model's space."""

    def __init__(
        self,
        model_dir: Path,
        source_sha256: str,
        *,
        max_tokens: int,
        int8: bool,
        threads: int,
        fallback: Callable[[str], np.ndarray],
    ) -> None:
        from tokenizers import Tokenizer

        limit = MODEL_MAX_TOKENS if max_tokens <= 0 else min(max_tokens + 2, MODEL_MAX_TOKENS)
        self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(limit)  # [CLS] and [SEP] included
        self._fallback = fallback
        self._session = self._int8_session(model_dir, source_sha256, threads) if int8 else None
        self.int8 = self._session is not None

    @staticmethod
    def _int8_session(model_dir: Path, source_sha256: str, threads: int) -> InferenceSession | None:
        try:
            import onnxruntime as ort

            path, scratch = _derive_anywhere(model_dir, source_sha256)
            options = ort.SessionOptions()
            # no CPU arena: it kept ~12 MB after 40 queries that nothing else reuses, and the
            # vectors are the same to the bit without it (issue 29; fastembed's sessions too)
            options.enable_cpu_mem_arena = False
            options.add_session_config_entry(NO_SPINNING, "0")
            if threads:
                options.intra_op_num_threads = threads
            try:
                return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
            finally:
                if scratch is not None:  # the session holds the model in memory now
                    import shutil

                    shutil.rmtree(scratch, ignore_errors=True)
        except Exception as exc:  # ImportError (no onnx), a full disk, a broken runtime
            log.warning("int8 query model unavailable, queries use the model itself: %s", exc)
            return None

    def encode(self, text: str, lead: str = "", lead_weight: float = 0.0) -> np.ndarray:
        """The query's vector: mean of the token states over its first word pieces.

        With a `lead` (a report's summary line) inside `text`, the lead's own tokens are pooled
        again from the same pass and blended in (`blend_lead`): the summary counts twice
        without a second encoding, which cost as much as the first (dev R@5 .895 → .882, MRR
        .681 → .696; benchmarks/README.md round 6). A lead outside the text or past the cap is
        encoded on its own, as is every lead without the int8 model.
        """
        encoding = self._tokenizer.encode(text)
        if self._session is None:
            ends = [end for _, end in encoding.offsets if end]
            vector = self._fallback(text[: ends[-1]] if ends else text)
            return self._with_lead(vector, lead, lead_weight)
        ids = np.asarray([encoding.ids], dtype=np.int64)
        feed = {
            "input_ids": ids,
            "attention_mask": np.ones_like(ids),
            "token_type_ids": np.zeros_like(ids),
        }
        states = np.asarray(self._session.run(None, feed)[0][0])
        vector = _unit(states.mean(axis=0))
        if not lead or lead_weight <= 0:
            return vector
        at = text.find(lead)
        span = [
            i
            for i, (start, end) in enumerate(encoding.offsets)
            if end > start and at >= 0 and start >= at and end <= at + len(lead)
        ]
        if not span:
            return self._with_lead(vector, lead, lead_weight)
        return blend_lead(vector, _unit(states[span].mean(axis=0)), lead_weight)

    def _with_lead(self, vector: np.ndarray, lead: str, lead_weight: float) -> np.ndarray:
        """`vector` blended with the lead encoded on its own (no lead: `vector`)."""
        if not lead or lead_weight <= 0:
            return vector
        return blend_lead(vector, self.encode(lead), lead_weight)


def _unit(vector: np.ndarray) -> np.ndarray:
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).astype(np.float32)


_derive_lock = threading.Lock()


def _derive_anywhere(model_dir: Path, source_sha256: str) -> tuple[Path, Path | None]:
    """The copy in the model cache; a read-only cache derives into a scratch folder (returned
    second, for the caller to remove once the model is loaded)."""
    with _derive_lock:
        try:
            target = model_dir / INT8_FILE
            return derive_int8(model_dir / "model.onnx", source_sha256, target), None
        except PermissionError:
            import tempfile

            scratch = Path(tempfile.mkdtemp(prefix="codeask-query-model-"))
            target = scratch / INT8_FILE
            return derive_int8(model_dir / "model.onnx", source_sha256, target), scratch
