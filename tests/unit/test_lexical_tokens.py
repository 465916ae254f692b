"""The lexical tokenizer (storage/lexical/tokens.py) gives exactly the tokens of the regex one
it replaced (kept here as the reference): same tokens, same order, same multiplicity."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import codeask
from codeask.core.records import Chunk
from codeask.core.storage.lexical import tokens
from codeask.core.storage.lexical.index import (
    chunks_columns,
    code_tokens,
    doc_columns,
    file_row,
    identifier_parts,
    token_text,
)

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def reference_parts(identifier: str) -> list[str]:
    """identifier_parts as it was: CAMEL_PART over every piece between underscores."""
    return [p.lower() for piece in identifier.split("_") for p in _CAMEL_PART.findall(piece)]


def reference_tokens(text: str) -> list[str]:
    """The tokenizer as it was (index.py before LEXTOK): a regex over the text, then each word."""
    out: list[str] = []
    for word in _IDENTIFIER.findall(text):
        whole = word.replace("_", "").lower()
        if not whole:
            continue
        parts = reference_parts(word)
        out.extend((whole, *parts) if len(parts) > 1 else (whole,))
    return out


def _check(text: str) -> None:
    expected = reference_tokens(text)
    assert code_tokens(text) == expected
    assert token_text(text) == " ".join(expected)


def test_the_engines_own_source_tokenizes_as_the_reference_did() -> None:
    root = Path(codeask.__file__).parent
    files = sorted(root.rglob("*.py"))
    assert len(files) > 100
    for path in files:
        _check(path.read_text(encoding="utf-8"))


HOSTILE = [
    "",
    " ",
    "_",
    "___ __ _",
    "__init__",
    "2to3_x 12__ 007bond 9_ _9 __1a 0x1F 1e10 3.14",
    "HTTPServer_config2 parseHTTPRequest XMLHttpRequest getID2Name ABC a1B2c3",
    "naïve café Straße ΑΒΓ идентификатор 変数名 emoji😀done",
    "tab\there\r\nnull\x00byte\x7fdel\x80\xff",
    "lone \ud800 surrogate\udfffhere",
    "ǅungla ﬁle ＡＢＣ１２３ ٣٤ K (Kelvin sign) İstanbul",
    "a" * 5000 + "B" * 3000 + "_" * 100 + "9" * 400,
    "x_" * 2000,
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_tokenizes_as_the_reference_did(text: str) -> None:
    _check(text)


def _random_text(rng: random.Random, alphabet: str, size: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(size))


def test_random_ascii_and_unicode_tokenize_as_the_reference_did() -> None:
    rng = random.Random(42)
    ascii_code = "aAbBzZxX019_ _.:;()[]{}<>\n\t\"'-+*/#@$\\"
    unicode_mix = ascii_code + "éßΣσЖж日本😀\u0301\u200b\x00\x85\u2028ǅﬁＡ１٣İK"
    for round_ in range(400):
        alphabet = ascii_code if round_ % 2 else unicode_mix
        _check(_random_text(rng, alphabet, rng.randrange(0, 300)))
    printable = "".join(chr(c) for c in range(32, 127))
    for _ in range(200):
        _check(_random_text(rng, printable, rng.randrange(0, 200)))


def test_identifier_parts_are_the_references_on_any_text() -> None:
    """name_match and name_cover split question words and paths (any text) with it too."""
    rng = random.Random(7)
    alphabet = "aAbBzZ09_éÉßΣσ日 .-"
    words = [*HOSTILE, *(_random_text(rng, alphabet, rng.randrange(0, 40)) for _ in range(2000))]
    for word in words:
        assert identifier_parts(word) == reference_parts(word), word


def test_new_words_of_every_shape_tokenize_as_the_reference_did() -> None:
    """A word not yet cached is cut by one CAMEL_PART pass over the whole word (`_run_text`):
    the reference's tokens for register names, hex numbers, snake/Camel/UPPER words with digits
    and runs of underscores, each tokenized afresh (not from the cache)."""
    rng = random.Random(11)
    words = [
        "mmUVD_LMI_RBC_IB_64BIT_BAR_LOW",
        "GC_CAC_WEIGHT_CU_0__WEIGHT_CU_SIG0_MASK",
        "0x00ff00FFul",
        "regDCHUBBUB_ARB_DRAM_STATE_CNTL_BASE_IDX",
        "__PHYS_ADDR_T_TYPE__",
        "_9a_B",
        "ABc_dEF_GhI2jK",
        "x86_64",
    ]
    words += [_random_text(rng, "aAbBzZ019__", rng.randrange(1, 30)) for _ in range(3000)]
    expected = [" ".join(reference_tokens(word)) for word in words]
    assert [tokens._run_text(word) for word in words] == expected


def test_a_full_cache_is_dropped_and_tokens_stay_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "CACHE_WORDS", 8)
    text = " ".join(f"word{i}_Part{i % 5}" for i in range(100))
    _check(text)
    assert len(tokens._RUNS) <= 8
    _check(text)


def test_columns_are_the_reference_tokens_joined() -> None:
    text = "def open_connection(self):\n    return self._pool.get(HOST_2)\n"
    place = {"path": "src/http_client/HTTPConnection.py", "start_line": 1, "end_line": 2}
    chunk = Chunk(**place, language="python", kind="method", text=text, symbol="open_connection")
    chunk.parent, chunk.docstring = "HTTPConnection", "Open a pooled connection."
    body, symbol, path = doc_columns(chunk)
    assert body == " ".join(reference_tokens(f"{chunk.docstring}\n{chunk.text}"))
    assert symbol == " ".join(reference_tokens("HTTPConnection open_connection"))
    assert path == " ".join(reference_tokens(chunk.path))
    assert file_row(chunk.path, [(body, symbol, path)]) == (body, path)


def test_a_files_columns_tokenize_its_path_once_with_the_same_columns() -> None:
    """`chunks_columns` (a chunk worker's, path tokens computed once per path) gives each
    chunk's `doc_columns`, on the engine's own source and on chunks whose paths interleave,
    repeat, hold no word or non-ASCII letters."""
    from codeask.config import build_settings
    from codeask.core.source.chunk import chunk_file

    settings, _ = build_settings({}, {}, {}, {})
    root = Path(codeask.__file__).parent
    chunks: list[Chunk] = []
    for source in sorted(root.rglob("*.py"))[:80]:
        rel = source.relative_to(root).as_posix()
        chunks += chunk_file(rel, source.read_text("utf-8"), settings.chunk).chunks
    assert len({c.path for c in chunks}) > 50
    paths = ["a/HTTPServer_x.py", "", "--/..", "dir/naïve_Ünïcode.py", "a/HTTPServer_x.py"]
    odd = [
        Chunk(path=p, language="text", kind="window", start_line=1, end_line=1, text=f"x{i} {p}")
        for i, p in enumerate(paths * 3)
    ]
    for batch in (chunks, odd, odd + chunks[:40] + odd):
        assert chunks_columns(batch) == [doc_columns(c) for c in batch]
