"""A bulk call's ASCII texts tokenized together in numpy: the ids `AsciiWordPiece` gives, as
one array, without a Python string per word.

A chunk worker's tokenizer spent its time making a string of every word (the regex) and looking
each up (issue 42). Here the texts, already normalised (wordpiece_ascii.normalised), are joined
by spaces into one buffer; each byte's class (space, letter or digit, other mark) gives where
BertPreTokenizer's words start and end; a word of at most 8 bytes is its own key (its bytes as a
little-endian integer: ASCII bytes are never 0, so no two words share one), found in an
open-addressing table of the words met before. Only a word met for the first time, or longer
than 8 bytes (~2 % of a kernel's words), becomes a string, split by the same `words` mapping
`AsciiWordPiece` uses. Each text's tokens are then cut at `max_tokens`, as islice does there.
tests/unit/test_static_fast_path.py holds both to the same ids.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np

#: Byte classes: 0 space, 1 letter or digit (a run is one word), 2 any other mark (a word alone).
_CLASS = np.full(256, 2, dtype=np.uint8)
_CLASS[[ord(c) for c in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"]] = 0
_CLASS[list(b"abcdefghijklmnopqrstuvwxyz0123456789")] = 1
#: Bytes of a word kept in its key, and the mask of a word's first n bytes.
KEY_BYTES = 8
_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(KEY_BYTES + 1)], dtype=np.uint64)
#: Fibonacci hashing of a key into the table.
_FACTOR = 0x9E3779B97F4A7C15
_MULTIPLIER = np.uint64(_FACTOR)
_WORD_MASK = (1 << 64) - 1
#: Slots of the table (a power of two): distinct words met at most before it starts afresh is
#: half of it (the table stays at most half full; 2^17 words as wordpiece_ascii.MAX_WORDS).
SLOTS_BITS = 18


class BatchWordPiece:
    """Token ids of many normalised ASCII texts at once; `split` gives one word's ids."""

    def __init__(self, split: Callable[[str], tuple[int, ...]], max_tokens: int) -> None:
        self._max_tokens = max_tokens
        self._table = _WordTable(split)
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
        """Drop the remembered words and the table's 4 MB (a pass is over)."""
        with self._lock:
            self._table.clear()


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


class _WordTable:
    """Short words' keys -> entry numbers (open addressing, linear probing), every entry's
    token ids in one array; long words and new ones go through `split` (a Python string)."""

    def __init__(self, split: Callable[[str], tuple[int, ...]]) -> None:
        self._split = split
        self.clear()

    def clear(self, slots: int = 0) -> None:
        """Forget every word; the table has `slots` slots (none until it is used)."""
        self._keys = np.zeros(slots, dtype=np.uint64)
        self._values = np.zeros(slots, dtype=np.intp)
        self._learnt = 0
        self._tokens = np.zeros(0, dtype=np.intp)
        self._counts = np.zeros(0, dtype=np.intp)

    def entries(
        self, buffer: bytes, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each word's entry number, and every entry's tokens (flat) and token count."""
        lengths = ends - starts
        short = lengths <= KEY_BYTES
        every = np.ndarray(len(buffer) - KEY_BYTES + 1, "<u8", buffer, strides=(1,))
        keys = every[starts[short]] & _MASKS[lengths[short]]
        slots = self._slots(keys)
        if slots is None:  # more distinct words than the table takes: each split alone
            short[:] = False
            slots = np.zeros(0, dtype=np.intp)
        entry = np.empty(len(starts), dtype=np.intp)
        entry[short] = self._values[slots]
        long = np.flatnonzero(~short)
        extra = [self._split(buffer[s:e].decode("ascii")) for s, e in _spans(starts, ends, long)]
        entry[long] = self._learnt + np.arange(len(long))
        counts = np.fromiter(map(len, extra), np.intp, len(extra))
        tokens = np.fromiter(chain.from_iterable(extra), np.intp, int(counts.sum()))
        return entry, np.concatenate([self._tokens, tokens]), np.concatenate([self._counts, counts])

    def _slots(self, keys: np.ndarray) -> np.ndarray | None:
        """Each key's slot, the new ones learnt; None when the batch alone holds more distinct
        words than half the table (which stays at most half full, so a probe always ends)."""
        half = (1 << SLOTS_BITS) // 2
        if not len(self._keys):
            self.clear(1 << SLOTS_BITS)
        slots = self._find(keys)
        if not (slots < 0).any():
            return slots
        new = np.unique(keys[slots < 0])
        if self._learnt + len(new) > half:
            self.clear(1 << SLOTS_BITS)  # (a minified file must not grow it without bound)
            new = np.unique(keys)
        if len(new) > half:
            return None
        self._learn(new)
        return self._find(keys)

    def _find(self, keys: np.ndarray) -> np.ndarray:
        """Each key's slot, or -1 where the table does not hold it."""
        mask = (1 << SLOTS_BITS) - 1
        slot = ((keys * _MULTIPLIER) >> np.uint64(64 - SLOTS_BITS)).astype(np.intp)
        found = np.full(len(keys), -1, dtype=np.intp)
        pending = np.arange(len(keys))
        while len(pending):
            held = self._keys[slot[pending]]
            hit = held == keys[pending]
            found[pending[hit]] = slot[pending[hit]]
            pending = pending[~hit & (held != 0)]  # a full slot of another key: probe on
            slot[pending] = (slot[pending] + 1) & mask
        return found

    def _learn(self, new: np.ndarray) -> None:
        """Split and store keys the table does not hold."""
        mask = (1 << SLOTS_BITS) - 1
        added: list[tuple[int, ...]] = []
        for key in new.tolist():
            word = key.to_bytes(KEY_BYTES, "little").rstrip(b"\0").decode("ascii")
            slot = ((key * _FACTOR) & _WORD_MASK) >> (64 - SLOTS_BITS)
            while self._keys[slot]:
                slot = (slot + 1) & mask
            self._keys[slot] = key
            self._values[slot] = self._learnt + len(added)
            added.append(self._split(word))
        self._learnt += len(added)
        counts = np.fromiter(map(len, added), np.intp, len(added))
        flat = np.fromiter(chain.from_iterable(added), np.intp, int(counts.sum()))
        self._tokens = np.concatenate([self._tokens, flat])
        self._counts = np.concatenate([self._counts, counts])


def _spans(starts: np.ndarray, ends: np.ndarray, which: np.ndarray) -> zip[tuple[int, int]]:
    return zip(starts[which].tolist(), ends[which].tolist(), strict=True)
