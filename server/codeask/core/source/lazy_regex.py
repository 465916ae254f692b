"""A regular expression compiled the first time it is used, not when its module is imported.

Every search imports the redaction modules (through the operations), but only a prompt, a
chunked file, a commit or an MCP result runs them: compiling their ~60 patterns at import cost a
one-shot `codeask search` 14–25 ms of its ~0.5 CPU-s (issue 29). A leaf: imports nothing of ours.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator


class LazyRegex:
    """`re.compile(pattern, flags)` on first use; then the compiled pattern's methods."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now if it was not yet; two threads may both compile
        it once, which is harmless)."""
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self.flags)
        return compiled

    @property
    def is_compiled(self) -> bool:
        """Whether anything has used the pattern yet."""
        return self._compiled is not None

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[str]:
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str) -> str:
        return self.compiled.sub(repl, string)
