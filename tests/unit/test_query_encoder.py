"""The packaged model's query path: the word-piece cap, the int8 copy, and what happens to that
copy on a bad day (corrupted, stale, half-written, no `onnx` package). Real model, real files."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from tests.unit.no_onnx import shadow_onnx

from codeask.config import build_settings
from codeask.core.embedding import query_encoder
from codeask.core.embedding.embed import (
    PACKAGED_ONNX_SHA256,
    TOKENIZER_DIR,
    FastEmbedder,
    file_sha256,
    packaged_model_dir,
)
from codeask.core.embedding.query_encoder import (
    INT8_FILE,
    INT8_RECIPE,
    WORK_PREFIX,
    DerivationError,
    Int8Provenance,
    QueryEncoder,
)
from codeask.core.embedding.query_encoder import derive_int8 as derive

QUERIES = [
    "where is the JSON provider configured",
    "how does the test client handle cookies",
    "autodoc: a documented attribute of a dataclass loses its type annotation when "
    "autodoc_typehints is description",
]
LONG_REPORT = (
    "Search ranks the test file first. Steps to reproduce: index the project, then ask for the "
    + " ".join(f"word{i} value{i}" for i in range(300))
)


def model(tmp_path: Path, **embed: Any) -> FastEmbedder:
    """The packaged model with its own model cache; int8 queries on unless `embed` says no."""
    settings, _ = build_settings({"embed": {"query_int8": True, **embed}})
    return FastEmbedder(settings.embed, tmp_path / "models")


def first_word_pieces(text: str, count: int) -> str:
    """`text` up to the end of its `count`-th word piece (the model's own tokenizer)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(TOKENIZER_DIR / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    ends = [end for _, end in tokenizer.encode(text, add_special_tokens=False).offsets]
    assert len(ends) > count
    return text[: ends[count - 1]]


def int8_encoder(folder: Path) -> QueryEncoder:
    """The query encoder over `folder`'s model, int8 on (its fallback must not be needed)."""
    return QueryEncoder(
        folder,
        PACKAGED_ONNX_SHA256,
        max_tokens=96,
        int8=True,
        threads=0,
        fallback=lambda text: np.zeros(384, np.float32),
    )


def assert_unit(vector: np.ndarray) -> None:
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_int8_query_vectors_stay_close_to_the_model_and_are_normalised(tmp_path: Path) -> None:
    embedder = model(tmp_path)
    encoder = embedder.prepare_queries()
    assert encoder is not None and encoder.int8
    for query in QUERIES:
        fast, exact = embedder.embed_query(query), embedder.embed([query])[0]
        assert fast.dtype == np.float32 and fast.shape == (embedder.dim,)
        assert_unit(fast)
        assert cosine(fast, exact) > 0.98, query
    # the copy sits beside the packaged model with a sidecar naming source, recipe and digest
    folder = tmp_path / "models" / "all-minilm-l6-v2-int8"
    provenance = msgspec.json.decode((folder / "query-int8.json").read_bytes(), type=Int8Provenance)
    assert provenance.source_sha256 == PACKAGED_ONNX_SHA256
    assert provenance.recipe == INT8_RECIPE
    assert provenance.sha256 == file_sha256(folder / INT8_FILE)


def test_the_query_sessions_idle_threads_sleep(tmp_path: Path) -> None:
    """A query runs on a pool whose idle threads would otherwise spin after every question (the
    chunk session's spinning doubled its CPU on 2 cores; the vectors do not depend on it)."""
    encoder = model(tmp_path).prepare_queries()
    assert encoder is not None and encoder.int8
    session = encoder._session
    assert session is not None
    options = session.get_session_options()
    assert options.get_session_config_entry(query_encoder.NO_SPINNING) == "0"


def test_a_long_report_is_read_up_to_the_word_piece_cap(tmp_path: Path) -> None:
    embedder = model(tmp_path, query_tokens=16)
    long_vector = embedder.embed_query(LONG_REPORT)
    # everything after the 16th word piece changes nothing
    assert np.allclose(long_vector, embedder.embed_query(LONG_REPORT + " trailing log line"))
    head = first_word_pieces(LONG_REPORT, 16)
    np.testing.assert_allclose(long_vector, embedder.embed_query(head), atol=1e-5)
    assert cosine(long_vector, embedder.embed_query(first_word_pieces(LONG_REPORT, 15))) < 0.9999
    # 0 means the model's own limit: the rest of the report is read
    whole = model(tmp_path, query_tokens=0)
    assert cosine(whole.embed_query(LONG_REPORT), long_vector) < 0.99


def test_without_int8_the_model_itself_reads_the_capped_query(tmp_path: Path) -> None:
    embedder = model(tmp_path, query_int8=False, query_tokens=16)
    encoder = embedder.prepare_queries()
    assert encoder is not None and not encoder.int8
    head = first_word_pieces(LONG_REPORT, 16)
    np.testing.assert_allclose(
        embedder.embed_query(LONG_REPORT), embedder.embed([head])[0], atol=1e-6
    )
    assert not (tmp_path / "models" / "all-minilm-l6-v2-int8" / INT8_FILE).exists()


def test_a_corrupted_or_stale_copy_is_remade_never_loaded(tmp_path: Path) -> None:
    folder = packaged_model_dir(tmp_path / "models")
    source, target = folder / "model.onnx", folder / INT8_FILE
    derive(source, PACKAGED_ONNX_SHA256, target)
    good = file_sha256(target)
    sidecar = target.with_suffix(".json")
    # flipped bytes: the digest in the sidecar no longer matches, so the copy is made again
    data = bytearray(target.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\0" * 64
    target.write_bytes(bytes(data))
    derive(source, PACKAGED_ONNX_SHA256, target)
    assert file_sha256(target) == good
    # a copy made by another recipe, or from other weights, is remade too
    for field, value in (("recipe", "older/0"), ("source_sha256", "0" * 64)):
        stale = msgspec.structs.replace(
            msgspec.json.decode(sidecar.read_bytes(), type=Int8Provenance), **{field: value}
        )
        sidecar.write_bytes(msgspec.json.encode(stale))
        stamp = target.stat().st_mtime_ns
        derive(source, PACKAGED_ONNX_SHA256, target)
        assert target.stat().st_mtime_ns != stamp
        assert msgspec.json.decode(sidecar.read_bytes(), type=Int8Provenance).recipe == INT8_RECIPE
    # garbage in the sidecar is a missing sidecar
    sidecar.write_bytes(b"{not json")
    derive(source, PACKAGED_ONNX_SHA256, target)
    assert file_sha256(target) == good


def test_a_derivation_killed_midway_leaves_nothing_under_the_models_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A real kill: the quantizing child needs ~3 s; stopped after 1 s, it is killed mid-work."""
    monkeypatch.setattr(query_encoder, "DERIVE_TIMEOUT_S", 1.0)
    folder = packaged_model_dir(tmp_path / "models")
    with pytest.raises(DerivationError, match="stopped after 1 s"):
        derive(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / INT8_FILE)
    assert_nothing_published(folder)
    # and the query path falls back to the model itself, with a logged reason, not an error
    embedder = model(tmp_path)
    with caplog.at_level("WARNING"):
        encoder = embedder.prepare_queries()
    assert encoder is not None and not encoder.int8
    assert "int8 query model unavailable" in caplog.text
    np.testing.assert_allclose(
        embedder.embed_query(QUERIES[0]), embedder.embed([QUERIES[0]])[0], atol=1e-6
    )


def test_a_child_that_fails_reports_why_and_publishes_nothing(tmp_path: Path) -> None:
    """A source the runtime cannot read: the child exits non-zero, its last words are the error."""
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "model.onnx").write_bytes(b"not an onnx model" * 100)
    with pytest.raises(DerivationError, match="quantization exited with 1: ") as failure:
        derive(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / INT8_FILE)
    assert "Traceback" not in str(failure.value)
    assert_nothing_published(folder)


def assert_nothing_published(folder: Path) -> None:
    assert not (folder / INT8_FILE).exists()
    assert not (folder / "query-int8.json").exists()
    assert not list(folder.glob(WORK_PREFIX + "*"))


def test_the_asking_process_never_holds_the_quantizers_peak(tmp_path: Path) -> None:
    """The ~500 MB the quantizer needs is the child's: the asking process's own high-water mark
    (VmHWM: its memory's peak, not inherited across exec as ru_maxrss is) stays far below."""
    folder = packaged_model_dir(tmp_path / "models")
    measure = (
        "import re, sys; from pathlib import Path;"
        "from codeask.core.embedding.query_encoder import derive_int8;"
        "f = Path(sys.argv[1]); derive_int8(f / 'model.onnx', sys.argv[2], f / 'query-int8.onnx');"
        "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", measure, str(folder), PACKAGED_ONNX_SHA256],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert int(done.stdout) // 1024 < 150, done.stdout
    assert (folder / INT8_FILE).is_file()


def test_a_killed_derivations_work_folder_is_swept_by_the_next(tmp_path: Path) -> None:
    folder = packaged_model_dir(tmp_path / "models")
    abandoned, running = folder / f"{WORK_PREFIX}killed", folder / f"{WORK_PREFIX}running"
    for work in (abandoned, running):
        work.mkdir()
        (work / "folded.onnx").write_bytes(b"x" * 1024)
    old = time.time() - 2 * 3600
    os.utime(abandoned, (old, old))
    derive(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / INT8_FILE)
    assert not abandoned.exists()
    assert running.exists()  # another process may still be using a fresh one


DERIVE_IN_A_PROCESS = """
import sys
from pathlib import Path
from codeask.core.embedding.embed import PACKAGED_ONNX_SHA256
from codeask.core.embedding.query_encoder import derive_int8
folder = Path(sys.argv[1])
derive_int8(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / "query-int8.onnx")
"""


def test_two_processes_deriving_at_once_leave_one_verified_copy(tmp_path: Path) -> None:
    folder = packaged_model_dir(tmp_path / "models")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    runs = [
        subprocess.Popen([sys.executable, "-c", DERIVE_IN_A_PROCESS, str(folder)], env=env)
        for _ in range(2)
    ]
    assert [run.wait(timeout=300) for run in runs] == [0, 0]
    provenance = msgspec.json.decode((folder / "query-int8.json").read_bytes(), type=Int8Provenance)
    assert provenance.sha256 == file_sha256(folder / INT8_FILE)
    assert not list(folder.glob(WORK_PREFIX + "*"))
    encoder = int8_encoder(folder)
    assert encoder.int8
    assert_unit(encoder.encode(QUERIES[0]))


def test_without_the_onnx_package_queries_use_the_model_simulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Simulated: an `onnx` package whose import fails stands first on the path the quantizing
    child inherits (as an uninstalled one would fail); the search still answers."""
    shadow_onnx(tmp_path, monkeypatch)
    embedder = model(tmp_path)
    with caplog.at_level("WARNING"):
        encoder = embedder.prepare_queries()
    assert encoder is not None and not encoder.int8
    assert "int8 query model unavailable" in caplog.text
    assert "needs the onnx package" in caplog.text
    assert_nothing_published(tmp_path / "models" / "all-minilm-l6-v2-int8")
    np.testing.assert_allclose(
        embedder.embed_query(QUERIES[1]), embedder.embed([QUERIES[1]])[0], atol=1e-6
    )


def test_a_read_only_model_cache_derives_into_a_scratch_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated where the tests run as root (chmod does not stop root): the model cache
    refuses the write with PermissionError, as a read-only one would."""
    folder = packaged_model_dir(tmp_path / "models")
    real_mkdir = Path.mkdir

    def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
        if self == folder:
            raise PermissionError(13, "Read-only file system", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    encoder = int8_encoder(folder)
    assert encoder.int8
    assert not (folder / INT8_FILE).exists()
    assert_unit(encoder.encode(QUERIES[0]))
    assert list(scratch.iterdir()) == []  # the scratch copy is gone once loaded


def test_query_settings_are_checked(tmp_path: Path) -> None:
    settings, warnings = build_settings({"embed": {"query_tokens": -1, "batch_size": 4}})
    assert "embed.query_tokens must be 0" in warnings[0]
    assert settings.embed.query_tokens == 96 and settings.embed.batch_size == 1  # the defaults
    # more than the model reads is the model's limit (256 word pieces), not an error
    huge, limit = model(tmp_path, query_tokens=10_000), model(tmp_path, query_tokens=0)
    np.testing.assert_allclose(huge.embed_query(LONG_REPORT), limit.embed_query(LONG_REPORT))


REPORT = (
    "Search ranks the test file first\n"
    "Steps: index the project, ask for the ranking code, and the test file is the first hit "
    "while the module that ranks is third."
)
LEAD = "Search ranks the test file first"


class CountingSession:
    """The real int8 session, counting its runs (one encoding per report is the point)."""

    def __init__(self, session: Any) -> None:
        self.session, self.runs = session, 0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.session.run(*args, **kwargs)


def test_a_reports_lead_is_pooled_again_from_the_same_pass(tmp_path: Path) -> None:
    embedder = model(tmp_path)
    encoder = embedder.prepare_queries()
    assert encoder is not None and encoder.int8
    plain, lead_alone = encoder.encode(REPORT), encoder.encode(LEAD)
    counting = CountingSession(encoder._session)
    encoder._session = counting  # type: ignore[assignment]
    leaning = embedder.embed_query(REPORT, LEAD, 0.5)
    assert counting.runs == 1
    assert_unit(leaning)
    # the summary counts twice: the vector leans toward the lead, and stays the report's
    assert cosine(leaning, lead_alone) > cosine(plain, lead_alone) + 0.01
    assert cosine(leaning, plain) > 0.9
    # no lead, or weight 0: the text alone
    np.testing.assert_allclose(embedder.embed_query(REPORT, "", 0.5), plain, atol=1e-6)
    np.testing.assert_allclose(embedder.embed_query(REPORT, LEAD, 0.0), plain, atol=1e-6)


def test_a_lead_outside_the_read_text_is_encoded_on_its_own(tmp_path: Path) -> None:
    """Past the word-piece cap (or not in the text at all), the lead's own pass is blended in."""
    from codeask.core.embedding.blend import blend_lead

    embedder = model(tmp_path, query_tokens=16)
    encoder = embedder.prepare_queries()
    assert encoder is not None and encoder.int8
    late = "the module that ranks is third"  # after the 16th word piece
    assert late in REPORT
    for lead in (late, "a summary the report never repeats"):
        expected = blend_lead(encoder.encode(REPORT), encoder.encode(lead), 0.5)
        np.testing.assert_allclose(embedder.embed_query(REPORT, lead, 0.5), expected, atol=1e-6)


def test_without_int8_the_lead_is_embedded_by_the_model_itself(tmp_path: Path) -> None:
    from codeask.core.embedding.blend import blend_lead

    embedder = model(tmp_path, query_int8=False)
    text_vector, lead_vector = embedder.embed([REPORT, LEAD])
    np.testing.assert_allclose(
        embedder.embed_query(REPORT, LEAD, 0.5),
        blend_lead(text_vector, lead_vector, 0.5),
        atol=1e-5,
    )


def test_a_search_does_not_wait_for_the_query_path_being_built(tmp_path: Path) -> None:
    """While the background build holds the query path (the first int8 derivation takes
    seconds), a query is answered by the model itself instead of waiting."""
    embedder = model(tmp_path)
    with embedder._query_lock:  # as `prepare_queries` in the language server's background
        # a query that waited for the lock would never return (this thread holds it): the
        # test would fail by pytest's timeout
        vector = embedder.embed_query(QUERIES[0])
    np.testing.assert_allclose(vector, embedder.embed([QUERIES[0]])[0], atol=1e-6)
    assert embedder._query is None  # not built by the query; the background build still owns it
    encoder = embedder.prepare_queries()
    assert encoder is not None and encoder.int8


def test_a_workspace_cannot_plant_modules_in_the_quantizing_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The language server often runs in the workspace: a cloned repository's own `onnx/` at
    its root must not be what the child imports (it would run the repository's code)."""
    workspace = tmp_path / "cloned-repo"
    planted = workspace / "onnx"
    planted.mkdir(parents=True)
    marker = tmp_path / "planted-code-ran"
    (planted / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(workspace)
    folder = packaged_model_dir(tmp_path / "models")
    derive(folder / "model.onnx", PACKAGED_ONNX_SHA256, folder / INT8_FILE)
    assert not marker.exists()
    assert (folder / INT8_FILE).is_file()


def test_the_int8_session_keeps_no_memory_arena_and_answers_bit_for_bit_the_same(
    tmp_path: Path,
) -> None:
    """onnxruntime's CPU arena kept ~12 MB after 40 queries (issue 29, benchmarks/README.md
    'Memory'); without it every query vector is the same to the bit."""
    import onnxruntime as ort

    folder = packaged_model_dir(tmp_path / "models")
    lean = int8_encoder(folder)
    assert lean._session is not None
    assert not lean._session.get_session_options().enable_cpu_mem_arena
    with_arena = int8_encoder(folder)
    with_arena._session = ort.InferenceSession(
        str(folder / INT8_FILE), ort.SessionOptions(), providers=["CPUExecutionProvider"]
    )
    assert with_arena._session.get_session_options().enable_cpu_mem_arena
    for query in [*QUERIES, LONG_REPORT]:
        assert np.array_equal(lean.encode(query), with_arena.encode(query)), query
