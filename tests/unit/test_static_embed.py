"""The vendored static model: shape, normalisation, determinism, meaning, and its pinned bytes."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from codeask.core.embedding.embed import EmbedError
from codeask.core.embedding.static import (
    MAX_TOKENS,
    STATIC_DIM,
    STATIC_FILES_SHA256,
    STATIC_MODEL_DIR,
    WIDEN_AT,
    StaticEmbedder,
    read_matrix,
)

CONFIG_PARSER = '''def load_config(path):
    """Read the YAML configuration file and return the settings dict."""
    with open(path) as handle:
        return yaml.safe_load(handle)
'''
HTTP_RETRY = '''def fetch_with_retry(url, attempts=3):
    """GET a URL, retrying on connection errors with exponential backoff."""
    for attempt in range(attempts):
        try:
            return requests.get(url, timeout=10)
        except requests.ConnectionError:
            time.sleep(2 ** attempt)
'''


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    return StaticEmbedder()


def test_rows_are_256_d_unit_float32(static: StaticEmbedder) -> None:
    rows = static.embed([CONFIG_PARSER, HTTP_RETRY, "x = 1"])
    assert static.dim == STATIC_DIM
    assert rows.shape == (3, STATIC_DIM) and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)


def test_same_text_same_vector_in_any_batch(static: StaticEmbedder) -> None:
    alone = static.embed([HTTP_RETRY])
    batched = static.embed([CONFIG_PARSER, HTTP_RETRY, "", HTTP_RETRY])
    assert np.array_equal(alone[0], batched[1]) and np.array_equal(batched[1], batched[3])


def test_text_without_tokens_gives_a_zero_row(static: StaticEmbedder) -> None:
    rows = static.embed(["", "   \n\t", "x = 1"])
    assert not rows[:2].any()
    assert np.isclose(np.linalg.norm(rows[2]), 1.0, atol=1e-5)
    assert static.embed([]).shape == (0, STATIC_DIM)


def test_query_is_nearer_the_code_it_describes(static: StaticEmbedder) -> None:
    query, config, retry = static.embed(["parse the configuration file", CONFIG_PARSER, HTTP_RETRY])
    assert float(query @ config) > float(query @ retry) + 0.05


def test_long_text_is_truncated_like_model2vec(static: StaticEmbedder) -> None:
    huge = "x = 1\n" * 5000
    assert len(static.token_ids([huge])[0]) == MAX_TOKENS
    tail_changed = huge + "retry backoff connection " * 100
    assert np.array_equal(static.embed([huge]), static.embed([tail_changed]))


def test_a_changed_matrix_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "potion"
    shutil.copytree(STATIC_MODEL_DIR, copy)
    blob = bytearray((copy / "model.safetensors").read_bytes())
    blob[-1] ^= 0xFF
    (copy / "model.safetensors").write_bytes(bytes(blob))
    with pytest.raises(EmbedError, match=r"sha256 \w+ is not the pinned"):
        StaticEmbedder(copy)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(EmbedError, match="model file missing"):
        StaticEmbedder(tmp_path)


def test_a_garbled_matrix_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{oops")
    with pytest.raises(EmbedError, match="not a readable safetensors matrix"):
        read_matrix(bad)


def test_pinned_hashes_cover_what_is_loaded() -> None:
    assert set(STATIC_FILES_SHA256) == {"model.safetensors", "tokenizer.json"}
    assert read_matrix(STATIC_MODEL_DIR / "model.safetensors").shape == (29528, STATIC_DIM)


def test_the_matrix_stays_float16_and_rows_are_bitwise_the_float32_ones(
    static: StaticEmbedder,
) -> None:
    """Half the bytes resident (15 MB, not 30), and not one bit of any vector changes: float16 →
    float32 is exact, and the rows of one text are gathered and summed in the same order."""
    assert static._matrix.dtype == np.float16
    wide = read_matrix(STATIC_MODEL_DIR / "model.safetensors").astype(np.float32)
    texts = [CONFIG_PARSER, HTTP_RETRY, "x = 1", "", "parse the configuration file" * 40]
    expected = np.zeros((len(texts), STATIC_DIM), dtype=np.float32)
    for row, ids in enumerate(static.token_ids(texts)):
        if ids:
            expected[row] = wide[ids].sum(axis=0) / len(ids)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True) + 1e-32
    assert np.array_equal(static.embed(texts), expected)


def test_a_bulk_call_widens_once_and_gives_the_same_bits_as_one_text_at_a_time(
    static: StaticEmbedder,
) -> None:
    """Indexing embeds hundreds of texts per call from a float32 copy made for that call (per
    text widening cost ~20% of a first pass); the rows are the ones a query gets."""
    texts = [f"{CONFIG_PARSER} {n}" if n % 3 else f"{HTTP_RETRY} v{n}" for n in range(WIDEN_AT * 2)]
    bulk = static.embed(texts)
    one_by_one = np.vstack([static.embed([text]) for text in texts])
    assert np.array_equal(bulk, one_by_one)
    assert static._matrix.dtype == np.float16  # the copy lived for the call only


LOAD_CHILD = """
import gc, ctypes, json
from pathlib import Path
import numpy, tokenizers

def status():
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) / 1024
    return out

def settled():
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return status()

from codeask.core.embedding.static import StaticEmbedder
numpy.linalg.norm(numpy.ones((2, 2), dtype=numpy.float32), axis=1)  # its library's pages
start = settled()
static = StaticEmbedder()
for query in ("parse the configuration file", "retry with backoff", "write the html pages"):
    static.embed([query])
queries = settled()
static.embed([f"def handler_{n}(request): return render(request, 'p{n}.html')" for n in range(99)])
bulk = settled()
print(json.dumps({
    "queries": {k: queries[k] - start[k] for k in start},
    "bulk": {k: bulk[k] - start[k] for k in start},
}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_the_matrix_is_read_from_the_files_pages_not_copied() -> None:
    """A server embeds only queries once its tier is complete: the 15 MB float16 matrix is the
    mapped file (shared with every other process, a query touching a few of its pages), not a
    private copy; after a bulk call (indexing) its pages are let go again (issue 29)."""
    import json
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", LOAD_CHILD], capture_output=True, text=True, check=True
    )
    grown = json.loads(done.stdout)
    # the tokenizer (~9 MB, Rust) is private; the matrix would add 15 MB more
    assert grown["queries"]["RssAnon"] < 12, grown
    assert grown["queries"]["RssFile"] < 8, grown  # its code pages; the matrix is 15 MB
    assert grown["bulk"]["RssAnon"] < 12 and grown["bulk"]["RssFile"] < 8, grown


def test_a_batch_with_unknown_tokens_and_empty_texts_gives_each_texts_own_mean(
    static: StaticEmbedder,
) -> None:
    """The batch path (ids gathered once for the batch, `[UNK]` filtered only where present)
    gives, bit for bit, each text's own mean of its token rows over the float32 matrix."""
    texts = [CONFIG_PARSER, "", "\u2603\u2603 snowman \u2603", "   ", HTTP_RETRY, "x", "[UNK] y"]
    texts = texts * (WIDEN_AT // len(texts) + 1)  # a bulk call: the widened matrix
    matrix = np.asarray(static._matrix, dtype=np.float32)
    unk = static._unk_id
    raw = static._full_tokenizer().encode_batch(texts, add_special_tokens=False)
    assert unk is not None and sum(unk in e.ids for e in raw) >= 2  # filtered in two of them
    rows = static.embed(texts)
    for text, row in zip(texts, rows, strict=True):
        (ids,) = static.token_ids([text])
        assert unk not in ids
        if not ids:
            assert not row.any()
            continue
        means = (np.add.reduce(matrix[ids], axis=0) / len(ids))[None, :]
        expected = means / (np.linalg.norm(means, axis=1, keepdims=True) + 1e-32)
        assert row.tobytes() == expected[0].tobytes()
