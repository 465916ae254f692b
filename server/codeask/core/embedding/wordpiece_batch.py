"""A bulk call's ASCII texts tokenized together in numpy: the ids `AsciiWordPiece` gives, as
one array, without a Python string per word.

A chunk worker's tokenizer spent its time making a string of every word (the regex) and looking
each up (issue 42). Here the texts, already normalised (wordpiece_ascii.normalised), are joined
by spaces into one buffer; each byte's class (space, letter or digit, other mark) gives where
BertPreTokenizer's words start and end; a word of at most 16 bytes is its own key (its bytes as
one or two little-endian integers: ASCII bytes are never 0, so no two words share one), found in an
open-addressing table of the words met before (runtime/word_table.py, which the lexical tables'
builder shares). The words a batch meets for the first time are
placed in the table together and split by one call of the tokenizer's WordPiece model (a cold
worker learnt them one call and one table slot at a time, issue 42); only words longer than 16
bytes (~0.02 % of a kernel's) become a string each, split by the same `words` mapping
`AsciiWordPiece` uses. Each text's tokens are then cut at `max_tokens`, as islice does there.
tests/unit/test_static_fast_path.py holds both to the same ids.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

from codeask.core.runtime import word_table

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: One word's WordPiece ids; many words' ids at once (all of them flat, and each word's count).
Split = word_table.Split
SplitMany = word_table.SplitMany

#: Byte classes: 0 space, 1 letter or digit (a run is one word), 2 any other mark (a word alone).
_CLASS = np.full(256, 2, dtype=np.uint8)
_CLASS[[ord(c) for c in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"]] = 0
_CLASS[list(b"abcdefghijklmnopqrstuvwxyz0123456789")] = 1
#: Bytes of a word kept in a short word's key (one integer) and a longer word's (two): the
#: word table's first two widths (runtime/word_table.py; its table holds 2^17 words as
#: wordpiece_ascii.MAX_WORDS).
SHORT_BYTES = 8
KEY_BYTES = 16


class BatchWordPiece:
    """Token ids of many normalised ASCII texts at once. `split` gives one word's ids (words
    past KEY_BYTES), `split_many` a batch of new words' (default: `split` on each)."""

    def __init__(self, split: Split, max_tokens: int, split_many: SplitMany | None = None) -> None:
        self._max_tokens = max_tokens
        self._table = word_table.Words(split, split_many or one_by_one(split), widths=2)
        self._lock = threading.Lock()  # a query may embed beside a pass's bulk calls

    def flat(self, texts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """All the texts' ids in text order, and each text's count (at most `max_tokens`)."""
        if not texts:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
        buffer = b" ".join(texts) + word_table.padding(2)
        starts, ends = _words(buffer)
        with self._lock:
            entries, tokens, counts = self._table.entries(buffer, starts, ends)
        # each word's tokens, in order: where its run starts in `tokens`, one after another
        count_of = counts[entries]
        total = int(count_of.sum())
        first_out = np.cumsum(count_of) - count_of
        at = np.repeat((np.cumsum(counts) - counts)[entries] - first_out, count_of)
        ids = tokens[at + np.arange(total)]
        # each token's text: texts start after the joined lengths and their spaces
        text_starts = np.cumsum([0, *[len(text) + 1 for text in texts[:-1]]])
        text_of = np.repeat(np.searchsorted(text_starts, starts, side="right") - 1, count_of)
        per_text = np.bincount(text_of, minlength=len(texts))
        place = np.arange(total) - (np.cumsum(per_text) - per_text)[text_of]
        kept = place < self._max_tokens
        return ids[kept], np.minimum(per_text, self._max_tokens)

    def forget(self) -> None:
        """Drop the remembered words and the tables' 10 MB (a pass is over)."""
        with self._lock:
            self._table.clear()


def one_by_one(split: Split) -> SplitMany:
    """`split` on each word: a `SplitMany` for any one-word splitter."""

    def split_many(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        parts = [split(word) for word in words]
        counts = np.fromiter(map(len, parts), np.intp, len(parts))
        return np.fromiter(chain.from_iterable(parts), np.intp, int(counts.sum())), counts

    return split_many


def model_split_many(tokenizer: Tokenizer) -> SplitMany:
    """Many words split by `tokenizer`'s own WordPiece model in one call: the words joined by
    spaces, split back by a whitespace pre-tokenizer, no normaliser, truncation nor special
    token; a word's tokens start at each one not marked as a continuation ("##"). ~0.8 µs a
    word against ~1.7 µs for a `model.tokenize` call and a tuple each. Built on first use (a
    server that only embeds queries never needs it)."""
    model = tokenizer.model
    each = one_by_one(lambda word: tuple(t.id for t in model.tokenize(word)))
    built: list[tuple[Tokenizer, np.ndarray]] = []

    def split_many(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        if not built:
            built.append(_bare(tokenizer))
        bare, going_on = built[0]
        encoding = bare.encode_batch_fast([" ".join(words)], add_special_tokens=False)[0]
        ids = np.array(encoding.ids, dtype=np.intp)
        first = np.flatnonzero(~going_on[ids])
        if len(first) != len(words) or (len(ids) and first[0] != 0):
            return each(words)  # (never met: a word whose pieces are not this model's)
        return ids, np.diff(first, append=len(ids))

    return split_many


def _bare(tokenizer: Tokenizer) -> tuple[Tokenizer, np.ndarray]:
    """A tokenizer of `tokenizer`'s model alone that splits at whitespace, and which ids
    continue a word."""
    from tokenizers import Tokenizer as Bare
    from tokenizers.pre_tokenizers import WhitespaceSplit

    model = tokenizer.model
    bare = Bare(model)
    bare.pre_tokenizer = WhitespaceSplit()
    prefix = getattr(model, "continuing_subword_prefix", "##")
    vocab = tokenizer.get_vocab()
    going_on = np.zeros(max(vocab.values(), default=0) + 1, dtype=bool)
    going_on[[i for token, i in vocab.items() if token.startswith(prefix)]] = True
    return bare, going_on


def _words(buffer: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Where BertPreTokenizer's words start and end in `buffer` (it ends with spaces)."""
    kind = _CLASS[np.frombuffer(buffer, dtype=np.uint8)]
    run = kind == 1
    mark = kind == 2
    opens = mark.copy()
    opens[0] |= run[0]
    opens[1:] |= run[1:] & ~run[:-1]
    closes = mark.copy()
    closes[:-1] |= run[:-1] & ~run[1:]
    return np.flatnonzero(opens), np.flatnonzero(closes) + 1
