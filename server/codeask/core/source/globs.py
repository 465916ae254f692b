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
#: Longest glob or ignore line accepted (longer: refused with a warning or an error, never
#: slow). Matching is linear in the path times the pattern: 32 hostile lines of this length in
#: one file cost ~0.2 s against a 255-character name and ~1-3 s against a 4,096-character path
#: (measured, loaded 2-core box), with the interpreter released; real lines are a few dozen
#: characters. pathspec needs ~3 s to translate one 100,000-character line: refused before.
MAX_GLOB_CHARS = 1024


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


def check_length(glob: str, what: str = "pattern") -> None:
    """GlobError when `glob` is longer than MAX_GLOB_CHARS."""
    if len(glob) > MAX_GLOB_CHARS:
        raise GlobError(f"{what} is {len(glob):,} characters; the maximum is {MAX_GLOB_CHARS:,}")


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
        self._alone: list[tuple[int, Regex]] = []
        for start in range(0, len(patterns), SET_SIZE):
            self._add(patterns[start : start + SET_SIZE], start)

    def _add(self, patterns: Sequence[str], start: int) -> None:
        """One set of `patterns`; halved when RE2 refuses the set (over its memory budget: long
        hostile lines), a lone pattern matched by itself."""
        if len(patterns) == 1:
            self._alone.append((start, linear(patterns[0])))
            return
        regex_set = re2.Set.SearchSet(_SET_OPTIONS)
        try:
            for pattern in patterns:
                regex_set.Add(pattern.encode("utf-8"))
            regex_set.Compile()
        except re2.error:
            half = len(patterns) // 2
            self._add(patterns[:half], start)
            self._add(patterns[half:], start + half)
            return
        self._sets.append((start, regex_set))

    def matching(self, text: bytes) -> list[int] | None:
        """Indices (into the patterns given) of those that match `text`, in no set order
        (empty or None when none does)."""
        if len(self._sets) == 1 and not self._alone:
            return self._sets[0][1].Match(text)
        found = [start + i for start, rs in self._sets for i in rs.Match(text) or ()]
        return found + [start for start, regex in self._alone if regex.search(text)]


def glob_error(glob: str) -> str:
    """'' when `glob` can filter a search, else why not: for an agent's or an editor's
    argument error naming its field (a crash of the search said nothing)."""
    try:
        path_spec(glob)
    except ValueError as exc:
        return str(exc)
    return ""


def path_spec(glob: str) -> GitIgnoreSpec:
    """A search's `--path` glob (gitignore syntax), matched by RE2.

    Raises ValueError for a glob that is invalid (pathspec's error) or that RE2 refuses.
    """
    from pathspec import GitIgnoreSpec

    check_length(glob, "the path glob")
    try:
        return GitIgnoreSpec.from_lines([glob], backend="re2")
    except re2.error as exc:
        raise GlobError(f"path glob too long or complex to match safely ({exc})") from exc
