"""Which of the secrets scan's keywords and token prefixes occur in a text, in one pass.

The scan (secrets.py) runs a rule's regex only when one of its keywords occurs. It found them
by splitting the text into its distinct words, joining those into a vocabulary and looking for
each keyword in it with `in` (31 scans of the vocabulary a file, 42 % of the scan on
drivers/gpu/drm/amd), then trying ~80 token prefixes on every distinct word. One RE2 set of
all of them answers both in a single linear pass over the text (RE2's automaton, as
Aho-Corasick would), with no split and no set of words: kernel,mm,lib 0.49 -> 0.12 CPU-s for
the gates, drm/amd/include 8.9 -> 1.8 (issue 42). The answers are those of the word split.

RE2 reports no match at all when its automaton runs out of memory; the set holds an empty
pattern that matches every text, so such an answer is told apart and the words answer instead.
A leaf: imports nothing of ours.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

#: The one byte between words of a text as the gates read it (secrets._WORD_BYTES).
SPACE = b" "


class KeywordGate:
    """Keyword runs found anywhere, and token prefixes found at a word's start on a word of
    `min_token` bytes or more, in a text whose words are separated by single spaces."""

    def __init__(self, runs: Sequence[bytes], prefixes: Sequence[bytes], min_token: int) -> None:
        self.runs = tuple(dict.fromkeys(r for r in runs if r))
        self.prefixes = tuple(dict.fromkeys(prefixes))
        self.min_token = min_token
        self._set: Any = None
        self._lock = threading.Lock()

    def scan(self, words: bytes) -> tuple[frozenset[bytes], frozenset[bytes]]:
        """(the runs that occur, the prefixes that start a long enough word)."""
        hits = self._compiled().Match(words)
        if not hits:  # the empty pattern always matches: RE2 ran out of memory
            return self.scan_words(words)
        runs, first = self.runs, 1 + len(self.runs)
        found = frozenset(runs[i - 1] for i in hits if 0 < i < first)
        heads = frozenset(self.prefixes[i - first] for i in hits if i >= first)
        return found, heads

    def scan_words(self, words: bytes) -> tuple[frozenset[bytes], frozenset[bytes]]:
        """`scan` by the distinct words: one `in` of each run on them, each prefix tried on
        each long word."""
        distinct = frozenset(words.split())
        vocab = SPACE.join(distinct)
        found = frozenset(r for r in self.runs if r in vocab)
        long_words = [w for w in distinct if len(w) >= self.min_token]
        heads = frozenset(p for p in self.prefixes if any(w.startswith(p) for w in long_words))
        return found, heads

    def _compiled(self) -> Any:
        """The RE2 set, compiled on first use (a search imports the scan but redacts nothing)."""
        regex_set = self._set
        if regex_set is None:
            with self._lock:
                if self._set is None:
                    self._set = self._build()
                regex_set = self._set
        return regex_set

    def _build(self) -> Any:
        import re2

        options = re2.Options()
        options.never_capture = True
        options.log_errors = False
        options.encoding = re2.Options.Encoding.LATIN1  # a byte is a character: lengths in bytes
        regex_set = re2.Set.SearchSet(options)
        regex_set.Add(b"")
        for run in self.runs:
            regex_set.Add(re2.escape(run))
        for prefix in self.prefixes:
            rest = max(0, self.min_token - len(prefix))
            regex_set.Add(b"(?:^|\\x20)" + re2.escape(prefix) + b"[^\\x20]{%d,}" % rest)
        regex_set.Compile()
        return regex_set
