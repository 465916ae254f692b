"""A bulk call's ASCII texts tokenized together in numpy: the ids `AsciiWordPiece` gives, as
one array, without a Python string per word.

A chunk worker's tokenizer spent its time making a string of every word (the regex) and looking
each up (issue 42). Here the texts, already normalised (wordpiece_ascii.normalised), are joined
by spaces into one buffer; each byte's class (space, letter or digit, other mark) gives where
BertPreTokenizer's words start and end; a word of at most 16 bytes is its own key (its bytes as
one or two little-endian integers: ASCII bytes are never 0, so no two words share one), found in an
open-addressing table of the words met before. The words a batch meets for the first time are
placed in the table together and split by one call of the tokenizer's WordPiece model (a cold
worker learnt them one call and one table slot at a time, issue 42); only words longer than 16
bytes (~0.02 % of a kernel's) become a string each, split by the same `words` mapping
`AsciiWordPiece` uses. Each text's tokens are then cut at `max_tokens`, as islice does there.
tests/unit/test_static_fast_path.py holds both to the same ids.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from itertools import chain
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: One word's WordPiece ids; many words' ids at once (all of them flat, and each word's count).
Split = Callable[[str], tuple[int, ...]]
SplitMany = Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]

#: Byte classes: 0 space, 1 letter or digit (a run is one word), 2 any other mark (a word alone).
_CLASS = np.full(256, 2, dtype=np.uint8)
_CLASS[[ord(c) for c in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"]] = 0
_CLASS[list(b"abcdefghijklmnopqrstuvwxyz0123456789")] = 1
#: Bytes of a word kept in a short word's key (one integer) and a longer word's (two), and the
#: mask of an integer's first n bytes.
SHORT_BYTES = 8
KEY_BYTES = 16
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
#: Multiplicative hashing of a key's integers into a table.
_MULTIPLIERS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F))
#: Slots of each table (a power of two): distinct words met at most before it starts afresh is
#: half of it (a table stays at most half full; 2^17 words as wordpiece_ascii.MAX_WORDS).
SLOTS_BITS = 18


class BatchWordPiece:
    """Token ids of many normalised ASCII texts at once. `split` gives one word's ids (words
    past KEY_BYTES), `split_many` a batch of new words' (default: `split` on each)."""

    def __init__(self, split: Split, max_tokens: int, split_many: SplitMany | None = None) -> None:
        self._max_tokens = max_tokens
        self._table = _Words(split, split_many or one_by_one(split))
        self._lock = threading.Lock()  # a query may embed beside a pass's bulk calls

    def flat(self, texts: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """All the texts' ids in text order, and each text's count (at most `max_tokens`)."""
        if not texts:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
        buffer = b" ".join(texts) + b" " * (KEY_BYTES + 1)
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


Keys = tuple[np.ndarray, ...]


def _keys(buffer: bytes, starts: np.ndarray, lengths: np.ndarray, width: int) -> Keys:
    """Each word's bytes as `width` little-endian integers, zero past its end (ASCII bytes are
    never 0, so no two words share a key); a word of two has more than 8 bytes."""
    every = np.ndarray(len(buffer) - 7, "<u8", buffer, strides=(1,))  # 8 bytes at each byte
    if width == 1:
        return (every[starts] & _MASKS[lengths],)
    return every[starts], every[starts + 8] & _MASKS[lengths - 8]


def _home(keys: Keys) -> np.ndarray:
    mixed = keys[0] * _MULTIPLIERS[0]
    if len(keys) > 1:
        mixed += keys[1] * _MULTIPLIERS[1]
    return (mixed >> np.uint64(64 - SLOTS_BITS)).astype(np.intp)


def _strings(keys: Keys) -> list[str]:
    """The words of keys: their bytes and a 0 each, split at the 0s (a word has none)."""
    rows = np.zeros((len(keys[0]), 8 * len(keys) + 1), dtype=np.uint8)
    for n, column in enumerate(keys):
        rows[:, 8 * n : 8 * n + 8] = column.astype("<u8").view(np.uint8).reshape(-1, 8)
    return list(filter(None, rows.tobytes().decode("ascii").split("\0")))


class _Words:
    """Every word's entry number and every entry's token ids: words of up to 8 bytes in one
    table, of 9 to 16 in another (two integers a key), longer ones split one by one (`split`,
    a Python string each)."""

    def __init__(self, split: Split, split_many: SplitMany) -> None:
        self._split = split
        self._short = _WordTable(1, split_many)
        self._middle = _WordTable(2, split_many)

    def clear(self) -> None:
        """Forget every word."""
        self._short.clear()
        self._middle.clear()

    def entries(
        self, buffer: bytes, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each word's entry number, and every entry's tokens (flat) and token count."""
        lengths = ends - starts
        entry = np.empty(len(starts), dtype=np.intp)
        tokens: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        learnt = 0
        long = lengths > KEY_BYTES
        for table, low in ((self._short, 0), (self._middle, SHORT_BYTES)):
            which = np.flatnonzero((lengths > low) & (lengths <= low + 8))
            found = table.lookup(_keys(buffer, starts[which], lengths[which], table.width))
            if found is None:  # more words than the table takes: each split alone
                long[which] = True
                continue
            entry[which] = found + learnt
            tokens.append(table.tokens)
            counts.append(table.counts)
            learnt += len(table.counts)
        others = np.flatnonzero(long)
        extra = [self._split(buffer[s:e].decode("ascii")) for s, e in _spans(starts, ends, others)]
        entry[others] = learnt + np.arange(len(others))
        counts.append(np.fromiter(map(len, extra), np.intp, len(extra)))
        tokens.append(np.fromiter(chain.from_iterable(extra), np.intp, int(counts[-1].sum())))
        return entry, np.concatenate(tokens), np.concatenate(counts)


class _WordTable:
    """Words' keys (`width` integers) -> entry numbers (open addressing, linear probing), every
    entry's token ids in one array. A batch's new words are split together (`split_many`)."""

    def __init__(self, width: int, split_many: SplitMany) -> None:
        self.width = width
        self._split_many = split_many
        self.clear()

    def clear(self, slots: int = 0) -> None:
        """Forget every word; the table has `slots` slots (none until it is used)."""
        self._held = [np.zeros(slots, dtype=np.uint64) for _ in range(self.width)]
        self._values = np.zeros(slots, dtype=np.intp)
        self.tokens = np.zeros(0, dtype=np.intp)
        self.counts = np.zeros(0, dtype=np.intp)

    def lookup(self, keys: Keys) -> np.ndarray | None:
        """Each key's entry number, the new ones learnt; None when the batch alone holds more
        words than half the table (which stays at most half full, so a probe always ends)."""
        half = (1 << SLOTS_BITS) // 2
        if not len(self._values):
            self.clear(1 << SLOTS_BITS)
        slots = self._find(keys)
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            if len(self.counts) + len(missing) > half:  # (a minified file: not unbounded)
                self.clear(1 << SLOTS_BITS)
                missing = np.arange(len(keys[0]))
            if len(missing) > half:
                return None
            slots[missing] = self._learn(tuple(column[missing] for column in keys))
        return self._values[slots]

    def _matches(self, slot: np.ndarray, keys: Keys) -> tuple[np.ndarray, np.ndarray]:
        """Whether each slot holds its key, and whether it is empty."""
        held = self._held[0][slot]
        same = held == keys[0]
        for column, key in zip(self._held[1:], keys[1:], strict=True):
            same &= column[slot] == key
        return same, held == 0

    def _find(self, keys: Keys) -> np.ndarray:
        """Each key's slot, or -1 where the table does not hold it."""
        mask = (1 << SLOTS_BITS) - 1
        slot = _home(keys)
        found = np.full(len(slot), -1, dtype=np.intp)
        pending = np.arange(len(slot))
        while len(pending):
            hit, empty = self._matches(slot[pending], tuple(k[pending] for k in keys))
            found[pending[hit]] = slot[pending[hit]]
            pending = pending[~hit & ~empty]  # a full slot of another key: probe on
            slot[pending] = (slot[pending] + 1) & mask
        return found

    def _learn(self, keys: Keys) -> np.ndarray:
        """Store keys the table does not hold (some more than once), all at once: each round,
        one key takes each free slot it reaches, a key meeting its own is placed, the others
        probe on; the placed words are split together. Returns each key's slot."""
        mask = (1 << SLOTS_BITS) - 1
        slot = _home(keys)
        pending = np.arange(len(slot))
        placed: list[np.ndarray] = []
        while len(pending):
            same, empty = self._matches(slot[pending], tuple(k[pending] for k in keys))
            free = np.flatnonzero(empty)
            _, first = np.unique(slot[pending[free]], return_index=True)
            winners = free[first]  # places in `pending`
            won = pending[winners]
            for column, key in zip(self._held, keys, strict=True):
                column[slot[won]] = key[won]
            self._values[slot[won]] = len(self.counts) + sum(map(len, placed)) + np.arange(len(won))
            placed.append(won)
            on = ~same & ~empty  # a free slot's losers look again: it may now hold their key
            slot[pending[on]] = (slot[pending[on]] + 1) & mask
            on[free] = True
            on[winners] = False
            pending = pending[on]
        new = np.concatenate(placed)
        tokens, counts = self._split_many(_strings(tuple(key[new] for key in keys)))
        self.tokens = np.concatenate([self.tokens, tokens])
        self.counts = np.concatenate([self.counts, counts])
        return slot


def _spans(starts: np.ndarray, ends: np.ndarray, which: np.ndarray) -> zip[tuple[int, int]]:
    return zip(starts[which].tolist(), ends[which].tolist(), strict=True)
