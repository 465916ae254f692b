"""Words found by their bytes, many at once in numpy: each word's entry in a table of the words
met before, a batch's new words handed over together to be given their values.

Two hot loops of a first pass look up every word of a text: the static tier's tokenizer (a
word's WordPiece ids, embedding/wordpiece_batch.py) and the lexical tables' builder (a token's
term id, storage/lexical/batch.py). A Python string and a dictionary step per word cost ~250 ns
(issue 42). Here a word of up to `8 * widths` bytes is its own key (its bytes as little-endian
integers, zero past its end: ASCII text has no 0 byte, so no two words share a key), found in an
open-addressing table per key width (`WordTable`); only longer words become a string each. The
buffer a caller passes ends with `padding(widths)` (a key reads 8 bytes at each of its places).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np

#: One word's values (its token ids, or its term id); many words' at once (all of them flat,
#: and each word's count).
Split = Callable[[str], tuple[int, ...]]
SplitMany = Callable[[Sequence[str]], tuple[np.ndarray, np.ndarray]]

#: The mask of an integer's first n bytes.
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(9)], dtype=np.uint64)
#: Multiplicative hashing of a key's integers into a table (one odd constant per integer).
_MULTIPLIERS = tuple(
    np.uint64(m)
    for m in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)
)
#: Slots of each table by default (a power of two): distinct words met at most before it starts
#: afresh is half of it (a table stays at most half full; 2^17 words).
SLOTS_BITS = 18
#: Key widths (integers of 8 bytes) a table set may use.
MAX_WIDTHS = len(_MULTIPLIERS)


def padding(widths: int) -> bytes:
    """What a buffer ends with so every key of up to `widths` integers reads inside it."""
    return b" " * (8 * widths + 1)


Keys = tuple[np.ndarray, ...]


def keys_of(buffer: bytes, starts: np.ndarray, lengths: np.ndarray, width: int) -> Keys:
    """Each word's bytes as `width` little-endian integers, zero past its end; a word of width
    n has more than 8 * (n - 1) bytes."""
    every = np.ndarray(len(buffer) - 7, "<u8", buffer, strides=(1,))  # 8 bytes at each byte
    whole = tuple(every[starts + 8 * n] for n in range(width - 1))
    return (*whole, every[starts + 8 * (width - 1)] & _MASKS[lengths - 8 * (width - 1)])


def _home(keys: Keys, bits: int) -> np.ndarray:
    mixed = keys[0] * _MULTIPLIERS[0]
    for key, multiplier in zip(keys[1:], _MULTIPLIERS[1:], strict=False):
        mixed += key * multiplier
    return (mixed >> np.uint64(64 - bits)).astype(np.intp)


def _strings(keys: Keys) -> list[str]:
    """The words of keys: their bytes and a 0 each, split at the 0s (a word has none)."""
    rows = np.zeros((len(keys[0]), 8 * len(keys) + 1), dtype=np.uint8)
    for n, column in enumerate(keys):
        rows[:, 8 * n : 8 * n + 8] = column.astype("<u8").view(np.uint8).reshape(-1, 8)
    return list(filter(None, rows.tobytes().decode("ascii").split("\0")))


class Words:
    """Every word's entry number and every entry's values: words of up to 8 bytes in one table,
    of 9 to 16 in the next (two integers a key), and so on for `widths` tables; longer ones split
    one by one (`split`, a Python string each). Each table has 2^`slots_bits` slots (by default
    SLOTS_BITS), allocated on first use."""

    def __init__(
        self, split: Split, split_many: SplitMany, widths: int = 2, slots_bits: int | None = None
    ) -> None:
        if not 1 <= widths <= MAX_WIDTHS:
            raise ValueError(f"widths must be 1 to {MAX_WIDTHS}")
        self._split = split
        bits = SLOTS_BITS if slots_bits is None else slots_bits
        self.tables = [WordTable(width, split_many, bits) for width in range(1, widths + 1)]
        self.key_bytes = 8 * widths

    def clear(self) -> None:
        """Forget every word."""
        for table in self.tables:
            table.clear()

    def entries(
        self, buffer: bytes, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each word's entry number, and every entry's values (flat) and value count."""
        lengths = ends - starts
        entry = np.empty(len(starts), dtype=np.intp)
        tokens: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        learnt = 0
        long = lengths > self.key_bytes
        for table in self.tables:
            low = 8 * (table.width - 1)
            which = np.flatnonzero((lengths > low) & (lengths <= low + 8))
            found = table.lookup(keys_of(buffer, starts[which], lengths[which], table.width))
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


class WordTable:
    """Words' keys (`width` integers) -> entry numbers (open addressing, linear probing), every
    entry's values in one array. A batch's new words are split together (`split_many`)."""

    def __init__(self, width: int, split_many: SplitMany, slots_bits: int = SLOTS_BITS) -> None:
        self.width = width
        self.slots_bits = slots_bits
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
        words than half the table (which stays at most half full, so a probe always ends).

        The keys missing are learnt as many at a time as there is room for if each were new,
        then the rest looked up again (a cold table meets most words many times in a batch);
        a full table starts afresh, with the whole batch."""
        half = (1 << self.slots_bits) // 2
        if not len(self._values):
            self.clear(1 << self.slots_bits)
        slots = self._find(keys)
        missing = np.flatnonzero(slots < 0)
        afresh = False
        while len(missing):
            room = half - len(self.counts)
            if room <= 0:  # (a minified file: not unbounded)
                if afresh:
                    return None
                self.clear(1 << self.slots_bits)
                afresh, missing = True, np.arange(len(keys[0]))
                continue
            part, rest = missing[:room], missing[room:]
            slots[part] = self._learn(tuple(column[part] for column in keys))
            if len(rest):
                slots[rest] = self._find(tuple(column[rest] for column in keys))
            missing = rest[slots[rest] < 0]
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
        mask = (1 << self.slots_bits) - 1
        slot = _home(keys, self.slots_bits)
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
        mask = (1 << self.slots_bits) - 1
        slot = _home(keys, self.slots_bits)
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
