"""ASCII texts through a BERT WordPiece tokenizer without its Rust pipeline: the same ids for
about a sixth of the CPU.

A first pass spent most of its CPU in `tokenizers`' encode (laravel: 3.5 of ~8 CPU-seconds;
semble pays the same, through model2vec): normalizer, pre-tokenizer and WordPiece run character
by character over every chunk, though code repeats the same few thousand words. For an ASCII
text, potion's pipeline (BertNormalizer with `clean_text` and `lowercase`, BertPreTokenizer,
WordPiece) comes down to: drop the control characters, lowercase, and split into runs of
letters and digits and single other characters (every ASCII punctuation mark, `_` included,
is a word of its own). Each distinct word goes through the tokenizer's own WordPiece model once
and is remembered. Whatever this does not cover goes through the full tokenizer: a text that is
not ASCII, or that holds an added token (`[CLS]`, `[UNK]`, ...: matched on the raw text, before
normalization). tests/unit/test_wordpiece_ascii.py holds both to the same ids on real source
files and on seeded random ASCII.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from itertools import chain, islice
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenizers import Tokenizer

#: The BERT normalizer on ASCII in one `bytes.translate`: upper case lowered, and the control
#: characters it drops deleted (tab, newline and CR become spaces, which split words anyway).
#: `lower()` and a regex search for control characters took three times as long (issue 42).
_LOWER = bytes.maketrans(string.ascii_uppercase.encode(), string.ascii_lowercase.encode())
_CONTROLS = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
#: BertPreTokenizer on lower-cased ASCII: runs of letters and digits, each other mark alone.
_WORD = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")
#: Characters scanned for words at a time, each window ended at a space (no word spans one):
#: a fifth of the kernel's chunks pass 512 tokens, and the words past the cut (a sixth of all
#: words) were found by the regex only to be dropped.
WINDOW = 1024
#: Distinct words remembered at most (a minified file must not grow it without bound).
MAX_WORDS = 1 << 17


class AsciiWordPiece:
    """Token ids of ASCII texts, truncated like the tokenizer (`max_tokens`), unknowns kept.
    `split`: one word's WordPiece ids (the tokenizer's own model, or wordpiece_reach's greedy
    split over the same vocabulary); `max_words`: distinct words remembered at most."""

    def __init__(
        self,
        split: Callable[[str], tuple[int, ...]],
        max_tokens: int,
        specials: Sequence[str],
        max_words: int | None = None,
    ) -> None:
        self._max_tokens = max_tokens
        # one search for all of them (five `in` tests were a twentieth of this path)
        self._specials = re.compile("|".join(map(re.escape, specials))) if specials else None
        self._words = _Words(split, max_words)

    @classmethod
    def of(cls, tokenizer: Tokenizer, max_tokens: int, specials: Sequence[str]) -> AsciiWordPiece:
        """Words split by `tokenizer`'s own WordPiece model."""
        model = tokenizer.model
        return cls(lambda word: tuple(t.id for t in model.tokenize(word)), max_tokens, specials)

    def plain(self, text: str) -> bool:
        """Whether `text` is this path's: ASCII without an added token written out."""
        return text.isascii() and self.unspecial(text)

    def unspecial(self, text: str) -> bool:
        """Whether `text` writes out no added token (the tokenizer matches those on raw text)."""
        return not (self._specials is not None and self._specials.search(text))

    def ids(self, text: str) -> list[int] | None:
        """The ids the full tokenizer gives `text`, or None when it must tokenize it itself."""
        if not self.plain(text):
            return None
        low = normalised(text).decode("ascii")
        cap, size, start = self._max_tokens, len(low), 0
        ids: list[int] = []
        while start < size and len(ids) < cap:
            end = low.find(" ", start + WINDOW) if start + WINDOW < size else -1
            end = size if end < 0 else end
            # one loop in C (a Python loop over the words was half of this call, issue 42);
            # `islice` stops at the limit, so words past it are neither looked up nor learnt
            words = map(self._words.__getitem__, _WORD.findall(low, start, end))
            ids.extend(islice(chain.from_iterable(words), cap - len(ids)))
            start = end
        return ids

    def word_ids(self, word: str) -> tuple[int, ...]:
        """One pre-tokenized word's ids (remembered; wordpiece_batch.py splits with it)."""
        return self._words[word]

    def forget(self) -> None:
        """Drop the remembered words (a pass is over; a server at rest does not keep them)."""
        self._words.clear()


def normalised(text: str) -> bytes:
    """An ASCII text as the BERT normalizer leaves it (lower case, control characters gone)."""
    return text.encode("ascii").translate(_LOWER, _CONTROLS)


class _Words(dict[str, tuple[int, ...]]):
    """word -> its WordPiece ids; an unknown word is split once (`__missing__`, called from C
    by a lookup that misses), at most `max_words` (default MAX_WORDS) remembered."""

    def __init__(self, split: Callable[[str], tuple[int, ...]], max_words: int | None) -> None:
        super().__init__()
        self._split = split
        self._max_words = max_words

    def __missing__(self, word: str) -> tuple[int, ...]:
        ids = self._split(word)
        if len(self) >= (MAX_WORDS if self._max_words is None else self._max_words):
            self.clear()
        self[word] = ids
        return ids
