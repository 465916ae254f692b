"""A build's vocabulary sorted once for both of its tables (issue 42).

A first pass builds each segment's chunk and whole-file tables in one go from one vocabulary
(lexical/file_postings.py). Each table sorted the vocabulary's Python strings, looked every
one up again for its rank and encoded them all for its term dictionary (the file table twice,
through a dict of its terms): ~10 % of the indexing process on kernel,mm,lib,fs,net,include.
Here that is done once per build, and a table takes the terms its postings use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from codeask.core.storage.lexical.asked import askable_flags


@dataclass(frozen=True)
class RankedVocab:
    """The terms sorted (as UTF-8 bytes: the same order as the strings), each term id's place
    among them, and whether a query can ask for each (asked.py: the others get no postings)."""

    names: list[bytes]
    rank: np.ndarray
    asked: np.ndarray

    @classmethod
    def of(cls, vocab: dict[str, int]) -> RankedVocab:
        names = sorted(vocab)
        rank = np.empty(len(names), dtype=np.int64)
        rank[np.fromiter(map(vocab.__getitem__, names), np.int64, len(names))] = np.arange(
            len(names)
        )
        return cls(list(map(str.encode, names)), rank, askable_flags(names))

    def used(self, places: np.ndarray) -> tuple[list[bytes], np.ndarray]:
        """(the terms at `places`, sorted and each once; `places` numbered among them)."""
        present = np.zeros(len(self.names), dtype=bool)
        present[places] = True
        if present.all():
            return self.names, places
        dense = np.cumsum(present) - 1
        return [self.names[i] for i in np.flatnonzero(present).tolist()], dense[places]
