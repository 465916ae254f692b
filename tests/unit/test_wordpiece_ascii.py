"""ASCII texts are tokenized in Python from remembered words (wordpiece_ascii.py), which must
give exactly the ids of potion's full tokenizer: on the engine's own source files, on seeded
random ASCII built to hit every edge (control characters, every punctuation mark, special
tokens written out, words at and past WordPiece's 100-character limit, the 512-token cut), and,
through the static embedder, bit for bit the same vectors."""

from __future__ import annotations

import random
import string
from pathlib import Path

import msgspec
import numpy as np
import pytest
from tests.unit.test_static_reach import HOSTILE, _ids, _source_pieces, full_tokenizer
from tokenizers import Tokenizer

from codeask.core.embedding import wordpiece_ascii
from codeask.core.embedding.static import MAX_TOKENS, STATIC_MODEL_DIR, StaticEmbedder
from codeask.core.embedding.wordpiece_ascii import AsciiWordPiece
from codeask.core.embedding.wordpiece_reach import ReachTokenizers

SERVER = Path(__file__).resolve().parents[2] / "server" / "codeask"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


@pytest.fixture(scope="module")
def full() -> Tokenizer:
    return full_tokenizer()


def _fast(tokenizer: Tokenizer) -> AsciiWordPiece:
    specials = [t.content for t in tokenizer.get_added_tokens_decoder().values()]
    assert sorted(specials) == sorted(SPECIALS)
    return AsciiWordPiece.of(tokenizer, MAX_TOKENS, specials)


def _reference(tokenizer: Tokenizer, texts: list[str]) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]


def _random_ascii(rng: random.Random) -> str:
    """Text made of pieces that stress the BERT pipeline's ASCII rules."""
    pieces = [
        lambda: "".join(rng.choice(string.ascii_letters) for _ in range(rng.randint(1, 12))),
        lambda: "".join(rng.choice(string.digits) for _ in range(rng.randint(1, 6))),
        lambda: rng.choice(string.punctuation),
        lambda: rng.choice(" \t\n\r\x0b\x0c  "),
        lambda: chr(rng.choice([*range(0, 9), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])),
        lambda: "a" * rng.choice([99, 100, 101, 150]),
        lambda: rng.choice(["Parse", "HTTP", "request", "_id", "##x", "snake_case", "x2y"]),
        lambda: rng.choice(["[cls]", "[Mask]", "[SEP", "UNK]", "[ PAD ]"]),
    ]
    weights = [30, 8, 25, 20, 3, 1, 10, 2]
    return "".join(rng.choices(pieces, weights)[0]() for _ in range(rng.randint(0, 400)))


def test_real_source_files_get_the_full_tokenizers_ids(full: Tokenizer) -> None:
    fast = _fast(full)
    texts = [p.read_text("utf-8")[:3072] for p in sorted(SERVER.rglob("*.py"))]
    covered = [(t, fast.ids(t)) for t in texts]
    covered = [(t, ids) for t, ids in covered if ids is not None]
    assert len(covered) > 0.5 * len(texts)  # (its docstrings like their arrows and dashes)
    reference = _reference(full, [t for t, _ in covered])
    assert [ids for _, ids in covered] == reference


def test_seeded_random_ascii_gets_the_full_tokenizers_ids(full: Tokenizer) -> None:
    fast = _fast(full)
    rng = random.Random(20261127)
    texts = [_random_ascii(rng) for _ in range(3000)]
    ours = [fast.ids(t) for t in texts]
    covered = [(t, ids) for t, ids in zip(texts, ours, strict=True) if ids is not None]
    assert len(covered) > 0.95 * len(texts)  # left out: a special token spelled by chance
    assert [ids for _, ids in covered] == _reference(full, [t for t, _ in covered])
    assert any(len(ids) == MAX_TOKENS for _, ids in covered)  # the cut was exercised


def test_what_it_does_not_cover_is_left_to_the_full_tokenizer(full: Tokenizer) -> None:
    fast = _fast(full)
    assert fast.ids("café au lait") is None
    assert fast.ids("x = 1  # 中文") is None
    for special in SPECIALS:
        assert fast.ids(f"before{special}after") is None
    assert fast.ids("") == []


def test_the_remembered_words_are_bounded_and_can_be_dropped(
    full: Tokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wordpiece_ascii, "MAX_WORDS", 50)
    fast = _fast(full)
    text = " ".join(f"word{i}" for i in range(400))
    assert fast.ids(text) == _reference(full, [text])[0]
    assert 0 < len(fast._words) <= 50
    fast.forget()
    assert fast._words == {}
    assert fast.ids(text) == _reference(full, [text])[0]


def test_bulk_static_vectors_are_bit_for_bit_those_of_the_full_tokenizer() -> None:
    texts = [p.read_text("utf-8") for p in sorted(SERVER.rglob("*.py"))][:200]
    texts += ["naïve café " * 40, "[CLS] x [SEP]", "", "\x00\x01"]
    fast = StaticEmbedder()
    slow = StaticEmbedder()
    slow._pinned_tokenizer = False  # the same model without the Python path
    with fast.widened():
        ours = fast.embed(texts)
    with slow.widened():
        reference = slow.embed(texts)
    assert fast._ascii is not None and slow._ascii is None
    assert ours.dtype == reference.dtype == np.float32
    assert ours.tobytes() == reference.tobytes()


def _split_path() -> tuple[ReachTokenizers, AsciiWordPiece]:
    document = msgspec.json.decode((STATIC_MODEL_DIR / "tokenizer.json").read_bytes())
    reach = ReachTokenizers(document, MAX_TOKENS)
    return reach, AsciiWordPiece(reach.split, MAX_TOKENS, reach.specials)


def test_the_greedy_split_gives_the_full_tokenizers_ids(full: Tokenizer) -> None:
    """A query's ASCII words split over the vocabulary in Python (issue 44 LAT: no tokenizer
    built per query) get the full tokenizer's ids: the engine's source in query-sized pieces,
    seeded random ASCII and the hostile texts it covers (the rest it leaves to a tokenizer)."""
    reach, fast = _split_path()
    texts = [*_source_pieces(), *HOSTILE]
    rng = random.Random(20261129)
    texts += [_random_ascii(rng) for _ in range(1500)]
    covered = [(t, ids) for t in texts if (ids := fast.ids(t)) is not None]
    assert len(covered) > 0.8 * len(texts)
    assert [ids for _, ids in covered] == _ids(full, [t for t, _ in covered])
    assert fast.ids(HOSTILE[1]) is None and fast.ids(HOSTILE[4]) is None  # accents; [CLS] ...
    assert reach.split("a" * 101) == (reach.unk_id,)  # past WordPiece's 100 characters


def test_an_ascii_query_is_split_in_python_and_embeds_as_before() -> None:
    static = StaticEmbedder()
    queries = ["how are blueprints registered", "parse_http_header()", "naïve café"]
    vectors = [static.embed([q])[0] for q in queries]
    assert static._full is None
    assert static._reach_ascii is not None and "blueprints" in static._reach_ascii._words
    reference = StaticEmbedder()
    reference._pinned_tokenizer = False  # the same model through `tokenizers` only
    for query, vector in zip(queries, vectors, strict=True):
        assert vector.tobytes() == reference.embed([query])[0].tobytes(), query
