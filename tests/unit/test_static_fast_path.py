"""The static tier's cheaper first-pass paths (issue 42) against the code they replaced, kept
here as the reference: ASCII normalised by one `bytes.translate`, special tokens found by one
regex and words scanned in windows that stop at the 512-token cut (wordpiece_ascii.py), rows
gathered with `take` and `[UNK]` dropped from the batch's id array (static.py). Same ids and
bit for bit the same vectors on the engine's own source, seeded random ASCII and Unicode, and
hostile text."""

from __future__ import annotations

import random
import re
import string
import sys
from collections.abc import Iterator, Sequence
from itertools import chain, islice

import numpy as np
import pytest
from tests.unit.test_static_reach import HOSTILE, _source_pieces, full_tokenizer
from tests.unit.test_wordpiece_ascii import SPECIALS, _random_ascii

from codeask.core.embedding import wordpiece_ascii, wordpiece_batch, wordpiece_mixed
from codeask.core.embedding.static import MAX_TOKENS, WIDEN_AT, StaticEmbedder
from codeask.core.embedding.wordpiece_ascii import WINDOW, AsciiWordPiece, normalised
from codeask.core.embedding.wordpiece_batch import BatchWordPiece, model_split_many, one_by_one
from codeask.core.runtime import word_table

# -- the replaced code, verbatim but for its names (main at a2d4814) --------------------------
_OLD_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_OLD_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")


def _old_ids(fast: AsciiWordPiece, text: str) -> list[int] | None:
    """`AsciiWordPiece.ids` before: lower(), a regex for control characters, five `in` tests
    for the special tokens and one regex scan of the whole text."""
    if not text.isascii() or any(s in text for s in SPECIALS):
        return None
    low = text.lower()
    if _OLD_CONTROL.search(low):
        low = _OLD_CONTROL.sub("", low)
    words = map(fast._words.__getitem__, _OLD_WORD.findall(low))
    return list(islice(chain.from_iterable(words), MAX_TOKENS))


def _old_vectors(model: StaticEmbedder, texts: Sequence[str], matrix: np.ndarray) -> np.ndarray:
    """`StaticEmbedder._embed_batch` before: `[UNK]` dropped from each text's list, rows
    gathered by indexing."""
    means = np.zeros((len(texts), model.dim), dtype=np.float32)
    ids_of = model.token_ids(texts)
    ends = np.cumsum(np.fromiter(map(len, ids_of), np.intp, len(ids_of))).tolist()
    flat = np.fromiter(chain.from_iterable(ids_of), np.intp, ends[-1] if ends else 0)
    start = 0
    for row, end in enumerate(ends):
        if end > start:
            rows = matrix[flat[start:end]]
            if rows.dtype != np.float32:
                rows = rows.astype(np.float32)
            means[row] = np.add.reduce(rows, axis=0) / (end - start)
        start = end
    norms = np.linalg.norm(means, axis=1, keepdims=True) + 1e-32
    return means / norms


# -- texts -------------------------------------------------------------------------------------
def _source_chunks() -> list[str]:
    """The engine's source cut into chunk-sized pieces, from a few lines to past the 3072
    characters a text is cut to (so past the first window and the 512-token cut)."""
    return _source_pieces(200, 11, 400)


def _random_unicode(rng: random.Random) -> str:
    """ASCII code with a little of everything else: accents, CJK, emoji, odd spaces."""
    others = ["é", "ß", "中", "🙂", "\u00a0", "\u2028", "\u0301", "İ", "ﬁ", "\u200b", "Ω"]
    text = _random_ascii(rng)
    at = rng.randint(0, len(text))
    return text[:at] + rng.choice(others) + text[at:]


def _window_edges(rng: random.Random) -> Iterator[str]:
    """Texts whose words, spaces and multi-piece words fall at and around a window's end and
    at the 512-token cut."""
    for shift in range(-3, 4):
        yield "x" * (WINDOW + shift) + " " + "ab " * 700
        yield "a " * ((WINDOW + shift) // 2) + "unbelievably " * 300
        yield ("(" * (WINDOW + shift)) + " tail " * 400
        yield "word\t" * (WINDOW // 5 + shift) + "CamelCaseName " * 200
    for _ in range(200):
        words = rng.choices(["a", "ab", "xyzzy", "unbelievably", "(", ")", "Name", "x1"], k=900)
        seps = rng.choices([" ", "  ", "\n", "\t", "", ""], k=900)
        yield "".join(w + s for w, s in zip(words, seps, strict=True))
    yield "a" * 5000  # no space to end a window at
    yield " " * 3000 + "tail"


@pytest.fixture(scope="module")
def fast() -> AsciiWordPiece:
    return AsciiWordPiece.of(full_tokenizer(), MAX_TOKENS, SPECIALS)


def _same_ids(fast: AsciiWordPiece, texts: list[str]) -> int:
    covered = 0
    for text in texts:
        assert fast.ids(text) == _old_ids(fast, text), text[:80]
        covered += fast.ids(text) is not None
    return covered


def test_the_engines_source_gets_the_old_paths_ids(fast: AsciiWordPiece) -> None:
    texts = _source_chunks()
    assert _same_ids(fast, texts) > 0.5 * len(texts)
    assert any(len(fast.ids(t) or []) == MAX_TOKENS for t in texts)  # the cut was reached


def test_random_ascii_and_unicode_get_the_old_paths_ids(fast: AsciiWordPiece) -> None:
    rng = random.Random(20261129)
    ascii_texts = [_random_ascii(rng) for _ in range(1500)]
    ascii_texts += [_random_ascii(rng) * 6 for _ in range(200)]  # long: several windows
    assert _same_ids(fast, ascii_texts) > 0.9 * len(ascii_texts)
    unicode_texts = [_random_unicode(rng) for _ in range(300)]
    assert _same_ids(fast, unicode_texts) == 0  # all left to the full tokenizer


def test_hostile_text_and_window_edges_get_the_old_paths_ids(fast: AsciiWordPiece) -> None:
    rng = random.Random(42)
    texts = HOSTILE + [t * 40 for t in HOSTILE] + list(_window_edges(rng))
    texts += ["".join(chr(c) for c in range(128)) * 30, string.printable * 50]
    assert _same_ids(fast, texts) > len(texts) // 2


def test_words_past_the_cut_are_not_scanned_mock_spy(
    fast: AsciiWordPiece, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A text past 512 tokens is scanned only up to the window holding its cut (a spy on the
    real regex records what it was asked to scan); its ids are still the old path's."""
    scanned: list[int] = []

    class Spy:
        def findall(self, text: str, start: int = 0, end: int = sys.maxsize) -> list[str]:
            scanned.append(min(end, len(text)) - start)
            return _OLD_WORD.findall(text, start, end)

    monkeypatch.setattr(wordpiece_ascii, "_WORD", Spy())
    text = "word " * 2000  # 10,000 characters, one token a word: the cut is at 2,560
    assert fast.ids(text) == _old_ids(fast, text)
    assert sum(scanned) < 2560 + WINDOW + 10 < len(text)


def test_vectors_are_bit_for_bit_the_old_paths() -> None:
    """Bulk (widened) and query-sized calls, texts with `[UNK]`, empty and non-ASCII ones."""
    rng = random.Random(7)
    texts = _source_chunks()[:400] + HOSTILE + [_random_unicode(rng) for _ in range(50)]
    texts += ["[UNK] " * 600, "a" * 150 + " x " + "b" * 120, "", "\u2603 " * 40]
    model = StaticEmbedder()
    assert len(texts) >= WIDEN_AT
    with model.widened():
        assert model._wide is None  # made at the first bulk call
        ours = model.embed(texts)
        assert model._wide is not None
        reference = _old_vectors(model, texts, model._wide)
    assert ours.tobytes() == reference.tobytes()
    for text in [*HOSTILE, "x " * 700]:  # a query's path: the float16 rows, widened per text
        alone = StaticEmbedder()
        assert alone.embed([text]).tobytes() == _old_vectors(alone, [text], alone._matrix).tobytes()


def test_a_held_run_of_a_few_chunks_never_widens_the_matrix() -> None:
    """An edit's pass embeds a handful of chunks inside `widened`: no 30 MB float32 copy is
    made for them (issue 42), and their vectors are the bulk path's, bit for bit."""
    texts = _source_chunks()[: WIDEN_AT - 1]
    bulk = StaticEmbedder()
    with bulk.widened():
        expected = bulk.embed(texts * 2)  # a bulk call: widened
    model = StaticEmbedder()
    with model.widened():
        few = model.embed(texts)
        assert model._wide is None
    assert few.tobytes() == expected[: len(texts)].tobytes()


# -- the batch tokenizer (wordpiece_batch.py) ----------------------------------------------------
def _batch_matches(batch: BatchWordPiece, fast: AsciiWordPiece, texts: list[str]) -> int:
    """Holds the batch tokenizer's ids, in batches of varied size, to the old path's; returns
    how many texts it covered."""
    plain = [t for t in texts if fast.plain(t)]
    at, size = 0, 1
    while at < len(plain):
        part = plain[at : at + size]
        ids, counts = batch.flat([normalised(t) for t in part])
        expected = [_old_ids(fast, t) or [] for t in part]
        assert counts.tolist() == [len(e) for e in expected]
        assert ids.tolist() == list(chain.from_iterable(expected)), part[0][:80]
        at, size = at + size, size % 150 + 7
    return len(plain)


@pytest.fixture(scope="module", params=["one_by_one", "model_split_many"])
def many(request: pytest.FixtureRequest) -> wordpiece_batch.SplitMany | None:
    """How a batch's new words are split: one `split` call each, or the model in one call."""
    return None if request.param == "one_by_one" else model_split_many(full_tokenizer())


def test_the_batch_tokenizer_gives_the_old_paths_ids(
    fast: AsciiWordPiece, many: wordpiece_batch.SplitMany | None
) -> None:
    """The engine's source, seeded random ASCII (long and short), hostile text and window
    edges, in batches of 1 to 150 texts."""
    batch = BatchWordPiece(fast.word_ids, MAX_TOKENS, many)
    rng = random.Random(99)
    texts = _source_chunks() + [_random_ascii(rng) for _ in range(800)]
    texts += [_random_ascii(rng) * 6 for _ in range(100)] + HOSTILE + list(_window_edges(rng))
    texts += ["".join(chr(c) for c in range(128)) * 30, string.printable * 50, "", " "]
    texts += ["a" * n + " " + "b" * (n + 1) for n in range(1, 20)]  # at the 8-byte key
    assert _batch_matches(batch, fast, texts) > 0.8 * len(texts)
    batch.forget()
    assert _batch_matches(batch, fast, texts[:300]) == len(
        [t for t in texts[:300] if fast.plain(t)]
    )


def test_the_batch_tokenizers_table_starts_afresh_when_half_full(
    fast: AsciiWordPiece, many: wordpiece_batch.SplitMany | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A table of 64 slots takes 32 words: many more words (colliding, met twice in a batch)
    still give the old path's ids."""
    monkeypatch.setattr(word_table, "SLOTS_BITS", 6)
    batch = BatchWordPiece(fast.word_ids, MAX_TOKENS, many)
    rng = random.Random(5)
    texts = [
        " ".join(f"w{rng.randrange(400)}x" for _ in range(rng.randint(0, 60))) for _ in range(300)
    ]
    assert _batch_matches(batch, fast, texts) == len(texts)
    assert len(batch._table.tables[0].counts) <= 32


def _words_of(texts: list[str]) -> list[str]:
    plain = [normalised(t).decode("ascii") for t in texts if t.isascii()]
    return sorted({w for t in plain for w in _OLD_WORD.findall(t)})


def test_the_models_split_of_many_words_is_one_split_each() -> None:
    """One call over many words (the source's, punctuation, digits, unknown and over-long
    ones) gives each word the ids and count `model.tokenize` gives it alone."""
    tokenizer = full_tokenizer()
    rng = random.Random(3)
    texts = _source_chunks() + [_random_ascii(rng) for _ in range(300)]
    words = [*_words_of(texts), "a" * 150, "x" * 101, "zzqqxxjj", "0" * 40, "~", "_"]
    model = tokenizer.model
    reference = one_by_one(lambda word: tuple(t.id for t in model.tokenize(word)))
    split_many = model_split_many(tokenizer)
    for part in (words, words[:1], words[-7:], []):
        ids, counts = split_many(part)
        expected_ids, expected_counts = reference(part)
        assert ids.tolist() == expected_ids.tolist()
        assert counts.tolist() == expected_counts.tolist()


def test_a_batchs_new_words_are_learnt_in_one_call_mock_spy(fast: AsciiWordPiece) -> None:
    """A cold table learns a batch's new words of up to 16 bytes with one `split_many` call
    for each of its two tables (up to 8 bytes, 9 to 16), each word once, and none again in a
    later batch that holds only words it knows (a spy around the real model split records
    the calls)."""
    calls: list[list[str]] = []
    split_many = model_split_many(full_tokenizer())

    def spy(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        calls.append(list(words))
        return split_many(words)

    batch = BatchWordPiece(fast.word_ids, MAX_TOKENS, spy)
    texts = [t for t in _source_chunks()[:120] if fast.plain(t)]
    assert _batch_matches(batch, fast, texts[:1]) == 1
    calls.clear()
    ids, _ = batch.flat([normalised(t) for t in texts])
    assert ids.tolist() == list(chain.from_iterable(_old_ids(fast, t) or [] for t in texts))
    assert len(calls) == 2
    keyed = [w for w in _words_of(texts) if len(w) <= wordpiece_batch.KEY_BYTES]
    assert sorted(chain(*calls)) == sorted(set(keyed) - set(_words_of(texts[:1])))
    assert all(len(w) <= wordpiece_batch.SHORT_BYTES for w in calls[0])
    assert all(len(w) > wordpiece_batch.SHORT_BYTES for w in calls[1])
    batch.flat([normalised(t) for t in reversed(texts)])
    assert len(calls) == 2


# -- texts past ASCII by stretches (wordpiece_mixed.py) ------------------------------------------
def _mixed_texts(rng: random.Random) -> list[str]:
    """Unicode beside ASCII words, controls, every kind of space, at word edges and past the
    512-token cut."""
    others = ["é", "中文", "🙂", "\u00a0", "\u2028", "\u0301", "İ", "ﬁ", "\u200b", "Σ", "ΑΣ", "→"]
    glue = ["", " ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x00", "\x7f", "_", "."]
    texts = [_random_unicode(rng) for _ in range(300)] + list(HOSTILE)
    for _ in range(300):
        parts = [rng.choice(["word", "CamelCase", "x1", "(", "unbelievably", rng.choice(others)])]
        for _ in range(rng.randint(0, 80)):
            parts += [rng.choice(glue), rng.choice(["ab", "Name", "é", "中", "Σ", "x" * 20, "🙂"])]
        texts.append("".join(parts))
    texts += [t[:500] + "→" + t[500:] for t in _source_chunks()[:100]]  # long: past the cut
    texts += ["é" * 3000, "aé " * 900, "x" * 200 + "é", " é ", "é", "\u0301 a", "a \u0301b"]
    return texts


def test_texts_past_ascii_by_stretches_get_the_full_tokenizers_ids() -> None:
    tokenizer = full_tokenizer()
    fast = AsciiWordPiece.of(tokenizer, MAX_TOKENS, SPECIALS)
    batch = BatchWordPiece(fast.word_ids, MAX_TOKENS, model_split_many(tokenizer))

    def encode(words: list[str]) -> list[list[int]]:
        return [e.ids for e in tokenizer.encode_batch_fast(words, add_special_tokens=False)]

    texts = [t for t in _mixed_texts(random.Random(11)) if fast.unspecial(t)]
    assert sum(not t.isascii() for t in texts) > 700
    expected = encode(texts)
    at, size = 0, 1
    while at < len(texts):
        part = texts[at : at + size]
        got = wordpiece_mixed.mixed_ids(part, batch, encode, MAX_TOKENS)
        assert [g.tolist() for g in got] == expected[at : at + size], part[0][:80]
        at, size = at + size, size % 40 + 3


def test_a_text_past_ascii_is_cut_at_ascii_whitespace_only() -> None:
    """Stretches end only at space, tab, newline or CR: a control character or another space
    the normaliser drops or maps stays inside the word it touches."""
    pieces = wordpiece_mixed.pieces
    assert pieces("ab cé\x0bd ef") == [(True, "ab "), (False, "cé\x0bd"), (True, " ef")]
    assert pieces("é") == [(False, "é")]
    assert pieces("x\u00a0y z\tq→") == [(False, "x\u00a0y"), (True, " z\t"), (False, "q→")]
    assert pieces("a\x1cé\nb") == [(False, "a\x1cé"), (True, "\nb")]
    assert pieces("plain") == [(True, "plain")]
