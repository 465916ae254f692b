"""A query is tokenized with only the vocabulary its words reach (wordpiece_reach.py), which
must give exactly the ids of potion's full tokenizer: on the engine's own source cut into
query-sized pieces and on hostile text (accents, combining marks, CJK, special tokens written
out, control characters, words at and past WordPiece's 100-character limit)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from tests.unit.fresh import last_json
from tokenizers import Tokenizer

from codeask.core.embedding.static import (
    MAX_TOKENS,
    REACH_CHARS,
    STATIC_MODEL_DIR,
    StaticEmbedder,
)
from codeask.core.embedding.wordpiece_reach import ReachTokenizers, reachable

SERVER = Path(__file__).resolve().parents[2] / "server" / "codeask"

HOSTILE = [
    "how are blueprints registered",
    "Ünïcödé façade naïve café résumé Ångström",
    "e\u0301\u0302 combining a\u0308\u0323 marks",
    "中文字符 and 日本語のテキスト mixed with 한국어",
    "[CLS] [SEP] [MASK] [PAD] [UNK] written out, [MASK]ed and x[SEP]y",
    "control \x00 \x01 \x1f \x7f chars\tand\r\nnewlines",
    "a" * 100 + " " + "b" * 101 + " " + "c" * 99,
    "##prefix ## # ###",
    "İstanbul STRASSE straße ﬁnal ＦＵＬＬＷＩＤＴＨ",
    "emoji 🙂👍🏽 zero\u200bwidth\u200djoiner rtl \u202eabc\u202c",
    "snake_case_name CamelCaseName kebab-case-name dotted.path.name",
    "",
    "   ",
]


def full_tokenizer() -> Tokenizer:
    """potion's whole tokenizer, truncating as the static tier does (the reference)."""
    tokenizer = Tokenizer.from_file(str(STATIC_MODEL_DIR / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()
    return tokenizer


@pytest.fixture(scope="module")
def reach() -> ReachTokenizers:
    document = msgspec.json.decode((STATIC_MODEL_DIR / "tokenizer.json").read_bytes())
    assert reachable(document)
    return ReachTokenizers(document, MAX_TOKENS)


def _ids(tokenizer: Tokenizer, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


def _source_pieces(shortest: int = 40, sizes: int = 7, step: int = 300) -> list[str]:
    """The engine's Python source cut into query-sized pieces (varied lengths and offsets; a
    text-sized cut with other arguments)."""
    pieces = []
    for path in sorted(SERVER.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        size = shortest + len(pieces) % sizes * step
        pieces += [text[i : i + size] for i in range(0, len(text), size)]
    return pieces


def test_hostile_text_gets_the_full_tokenizers_ids(reach: ReachTokenizers) -> None:
    full = full_tokenizer()
    for text in HOSTILE:
        assert _ids(reach.for_texts([text]), [text]) == _ids(full, [text]), text
    assert _ids(reach.for_texts(HOSTILE), HOSTILE) == _ids(full, HOSTILE)


def test_the_engines_source_gets_the_full_tokenizers_ids(reach: ReachTokenizers) -> None:
    full = full_tokenizer()
    pieces = _source_pieces()
    assert len(pieces) > 1000
    for start in range(0, len(pieces), 3):
        batch = pieces[start : start + 3]
        assert _ids(reach.for_texts(batch), batch) == _ids(full, batch), batch


def test_the_embedder_gives_the_same_vectors_either_way() -> None:
    static = StaticEmbedder()
    texts = [*HOSTILE, "x" * REACH_CHARS]
    small = [static.embed([text]) for text in texts]
    assert static._full is None  # every one of those went through the reach tokenizer
    big = static.embed(texts * 10)  # many texts: the full tokenizer
    assert static._full is not None
    for row, vector in enumerate(small):
        assert (vector[0] == big[row]).all(), texts[row]


EMBED_A_QUERY = """
import json
from codeask.core.embedding.static import StaticEmbedder
static = StaticEmbedder()
static.embed(["how are blueprints registered"])
print(json.dumps({"full_tokenizer_built": static._full is not None}))
"""


def test_a_query_builds_no_full_tokenizer() -> None:
    assert last_json(["-c", EMBED_A_QUERY]) == {"full_tokenizer_built": False}
