"""Which of the secrets scan's keywords and token prefixes occur in a text, in one pass.

The scan (secrets.py) runs a rule's regex only when one of its keywords occurs. It found them
by splitting the text into its distinct words, joining those into a vocabulary and looking for
each keyword in it with `in` (31 scans of the vocabulary a file, 42 % of the scan on
drivers/gpu/drm/amd), then in the whole text for keywords with symbols (`</`, `value=`), and
tried ~80 token prefixes on every distinct word. One RE2 set of all of them answers every
keyword and prefix in a single linear pass over the lowered text (RE2's automaton, as
Aho-Corasick would), with no split, no set of words and no second scan: redaction on
kernel,mm,lib 22.3 -> 9.0 ms/MB, drm/amd 19.2 -> 6.9 (issue 42). The answers are those of
`in` and of the words.

RE2 reports no match at all when its automaton runs out of memory; the set holds an empty
pattern that matches every text, so such an answer is told apart and the words answer instead.
A leaf: imports nothing of ours.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

#: What `bytes.translate` makes of a byte outside a word (secrets._WORD_BYTES).
SPACE = 0x20


class KeywordGate:
    """In a lowered text's UTF-8 bytes: the keywords that occur anywhere, and the token prefixes
    that start a word of `min_token` bytes or more. A word is a run of the bytes `table` (a
    `bytes.translate` table) does not turn into a space; keywords and prefixes are ASCII."""

    def __init__(
        self, keywords: Sequence[bytes], prefixes: Sequence[bytes], min_token: int, table: bytes
    ) -> None:
        self.keywords = tuple(dict.fromkeys(keywords))
        self.prefixes = tuple(dict.fromkeys(prefixes))
        self.min_token = min_token
        self.table = table
        self._set: Any = None
        self._lock = threading.Lock()

    def scan(self, lower: bytes) -> tuple[frozenset[bytes], frozenset[bytes]]:
        """(the keywords that occur, the prefixes that start a long enough word)."""
        hits = self._compiled().Match(lower)
        if not hits:  # the empty pattern always matches: RE2 ran out of memory
            return self.scan_words(lower)
        keywords, first = self.keywords, 1 + len(self.keywords)
        found = frozenset(keywords[i - 1] for i in hits if 0 < i < first)
        heads = frozenset(self.prefixes[i - first] for i in hits if i >= first)
        return found, heads

    def scan_words(self, lower: bytes) -> tuple[frozenset[bytes], frozenset[bytes]]:
        """`scan` without RE2: `in` per keyword, each prefix tried on each long distinct word."""
        found = frozenset(k for k in self.keywords if k in lower)
        words = frozenset(lower.translate(self.table).split())
        long_words = [w for w in words if len(w) >= self.min_token]
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
        word = b"".join(b"\\x%02x" % b for b in range(256) if self.table[b] != SPACE)
        regex_set = re2.Set.SearchSet(options)
        regex_set.Add(b"")
        for keyword in self.keywords:
            regex_set.Add(re2.escape(keyword))
        for prefix in self.prefixes:
            rest = max(0, self.min_token - len(prefix))
            regex_set.Add(b"(?:^|[^%s])%s[%s]{%d,}" % (word, re2.escape(prefix), word, rest))
        regex_set.Compile()
        return regex_set
