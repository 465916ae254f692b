"""Gitignore-style globs matched in time linear in the path, whoever wrote them.

Globs reach codeask from sources it cannot vet: an agent's `path` argument, an editor's
pathGlob, `--path`, a cloned repository's `.gitignore`, settings. pathspec translates each into
a regex, and Python's `re` backtracks: `*a*a*a*a*a*a*a*a*a*a*a*a*b` against a 60-character name
of `a`s runs for hours while holding the interpreter, and with it every thread of the daemon.
RE2 (google-re2) matches without backtracking and releases the interpreter while it does, so
every glob is matched through it; pathspec still translates, so the syntax stays pathspec's.
Paths are matched as UTF-8 bytes: google-re2 converts a str on every call, which cost more than
the match itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import re2

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

#: RE2's default memory budget (8 MiB) per compiled glob: a longer pattern is refused, not slow.
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_SET_OPTIONS = re2.Options()
_SET_OPTIONS.log_errors = False
_SET_OPTIONS.never_capture = True
#: Regexes per RE2 set: a set's DFA state holds all of them, and a set that runs out of memory
#: reports no match; small sets keep each state small (~2 KB for 32 ignore lines).
SET_SIZE = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


class Match(Protocol):
    def end(self) -> int: ...


class Regex(Protocol):
    """What discover uses of a compiled glob: the same call as an `re.Pattern`, on bytes."""

    def search(self, text: bytes) -> Match | None: ...


class GlobError(ValueError):
    """A glob RE2 cannot compile (too long or too complex); the message says so."""


def encoded(path: str) -> bytes:
    """`path` as UTF-8 for RE2. A name that is not UTF-8 (lone surrogates from the file system's
    surrogateescape) gets U+FFFD instead, which wildcards match as they matched the surrogate."""
    try:
        return path.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", path).encode("utf-8")


def linear(pattern: str) -> Regex:
    """`pattern` (a regex pathspec made from a glob) compiled for linear-time matching."""
    try:
        return re2.compile(pattern.encode("utf-8"), options=_OPTIONS)
    except re2.error as exc:
        raise GlobError(f"too long or complex to match safely ({exc})") from exc


class AnyOf:
    """Which of many regexes match a text, in one RE2 pass per SET_SIZE of them.

    One call costs about what two `re` searches do, so a layer of 11 ignore lines is checked
    ~4x faster than line by line. Every pattern must compile alone (see `linear`) first.
    """

    def __init__(self, patterns: Sequence[str]) -> None:
        self._sets: list[tuple[int, re2.Set]] = []
        for start in range(0, len(patterns), SET_SIZE):
            regex_set = re2.Set.SearchSet(_SET_OPTIONS)
            for pattern in patterns[start : start + SET_SIZE]:
                regex_set.Add(pattern.encode("utf-8"))
            regex_set.Compile()
            self._sets.append((start, regex_set))

    def matching(self, text: bytes) -> list[int]:
        """Indices (into the patterns given) of those that match `text`, in no set order."""
        if len(self._sets) == 1:
            return self._sets[0][1].Match(text)
        return [start + i for start, regex_set in self._sets for i in regex_set.Match(text)]


def path_spec(glob: str) -> GitIgnoreSpec:
    """A search's `--path` glob (gitignore syntax), matched by RE2.

    Raises ValueError for a glob that is invalid (pathspec's error) or that RE2 refuses.
    """
    from pathspec import GitIgnoreSpec

    try:
        return GitIgnoreSpec.from_lines([glob], backend="re2")
    except re2.error as exc:
        raise GlobError(f"path glob too long or complex to match safely ({exc})") from exc
