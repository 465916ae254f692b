"""Which tokens a query can ask for: one rule, followed by `query_terms` and by every build.

A query drops stopwords, one-character tokens and numbers (`index.query_terms`), so their
postings are never read, yet they are ~20 % of a code chunk's (term, row) pairs (`if`, `i`,
`0`, `the`: 20.3 % of 1.87M in 1,500 kernel files, issue 42). A build leaves them out of its
postings and term dictionary but not out of its rows' lengths, which BM25 normalises by: every
score any query gets is what it was, and a first pass sorts, merges and writes a fifth less.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

STOPWORDS = frozenset(
    """
    a an and are as at be but by can do does for from has have how i if in into is it its of
    on or so that the then there these this to was we what when where which while who why
    will with would you your not no yes all any some my me our us they them their he she his
    her been being were should could may might must also just only very more most other such
    than too using use used get got
    """.split()  # noqa: SIM905
)
#: Tokens never asked for that a set answers at once (the rest are numbers or one character).
_NEVER = STOPWORDS | frozenset(string.ascii_lowercase + string.digits)


def askable(token: str) -> bool:
    """Whether a query may ask for `token` (a lower-cased code token)."""
    return len(token) > 1 and token not in _NEVER and not token.isdigit()


def askable_flags(names: Sequence[str]) -> np.ndarray:
    """`askable` of each of a build's terms at once (C-level maps, no Python loop)."""
    size = len(names)
    never = np.fromiter(map(_NEVER.__contains__, names), dtype=bool, count=size)
    never |= np.fromiter(map(str.isdigit, names), dtype=bool, count=size)
    never |= np.fromiter(map(len, names), dtype=np.int64, count=size) <= 1
    return ~never
