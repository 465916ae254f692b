"""A bulk call's texts with a few characters past ASCII: their ASCII stretches through the batch
tokenizer (wordpiece_batch.py), only the words holding other characters through the full one.

Such a text (0.5 % of a kernel's chunks: a name or an arrow in a comment) went whole through the
Rust pipeline, ~10 % of a chunk worker's tokenizing (issue 42). potion's pipeline is local to
the stretches between ASCII whitespace (space, tab, newline, carriage return): the normaliser
works a character at a time (control characters dropped, NFD, accents stripped, lower case,
CJK padded with spaces), and space, tab, newline and CR stay whitespace, which ends a word and
which no mark combines across; the pre-tokenizer splits at whitespace and punctuation; WordPiece
splits each word alone. So a text's ids are its stretches' ids one after another, cut at the
512-token limit. A text writing out an added token (`[CLS]`, ...) still goes whole to the
tokenizer (those are matched on the raw text). tests/unit/test_static_fast_path.py holds the
result to the full tokenizer's ids on hostile and seeded random Unicode.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from codeask.core.embedding.wordpiece_ascii import normalised
from codeask.core.embedding.wordpiece_batch import BatchWordPiece

#: Runs of characters past ASCII, and the whitespace that ends a stretch around them.
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")
_SPACE = re.compile(r"[ \t\n\r]")
_SPACES = " \t\n\r"


def pieces(text: str) -> list[tuple[bool, str]]:
    """`text` as ASCII stretches (True) and words holding other characters (False), in order;
    each word runs from the ASCII whitespace before it to the one after."""
    out: list[tuple[bool, str]] = []
    at = 0
    for run in _NOT_ASCII.finditer(text):
        if run.start() < at:
            continue  # in the word just taken
        start = max(at, *(text.rfind(space, at, run.start()) + 1 for space in _SPACES))
        space = _SPACE.search(text, run.end())
        end = space.start() if space else len(text)
        out += [(True, text[at:start]), (False, text[start:end])]
        at = end
    out.append((True, text[at:]))
    return [(plain, piece) for plain, piece in out if piece]


def mixed_ids(
    texts: Sequence[str],
    batch: BatchWordPiece,
    encode: Callable[[list[str]], list[list[int]]],
    max_tokens: int,
) -> list[np.ndarray]:
    """Each text's ids (`[UNK]` kept), cut at `max_tokens`: its ASCII stretches in one batch
    call, its other words in one `encode` call (the full tokenizer's)."""
    split = [pieces(text) for text in texts]
    plain = [normalised(piece) for parts in split for ascii_only, piece in parts if ascii_only]
    other = [piece for parts in split for ascii_only, piece in parts if not ascii_only]
    ids, counts = batch.flat(plain)
    plain_ids = iter(np.split(ids, np.cumsum(counts)[:-1]) if len(counts) else [])
    other_ids = iter(encode(other) if other else [])
    out = []
    for parts in split:
        got = [
            next(plain_ids) if ascii_only else np.array(next(other_ids), dtype=np.intp)
            for ascii_only, _ in parts
        ]
        out.append(np.concatenate([np.zeros(0, dtype=np.intp), *got])[:max_tokens])
    return out
