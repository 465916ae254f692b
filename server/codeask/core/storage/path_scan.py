"""Files named in a question, found by scanning the paths' text (a one-shot process).

Why (issue 42): `codeask search --no-daemon` with a pasted report on the Linux kernel asks
`paths_named` ~14 times, and the first ask built the tail table over all 78k paths
(`symbol_table.SymbolTable`: ~0.35 s, a third of the report's search). A process that answers
one question and exits uses a handful of its entries. Here the paths are one string, and an
ask finds the lines whose last part is the key's last part, or whose stem or package folder is
(`path_tails`), with one regular expression that starts with that literal (CPython's matcher
then skips ahead to it: 2-9 ms over the kernel's 3.5 MB of paths); each line found is then
judged as the table judges it (`path_keys`): the same answer in the same order.

A scan costs about a 32nd of a build (`SCANS_PER_BUILD`) and each line it finds a little
more. Once the scans together have cost a build, the caller builds the table instead (`spent`):
a process that asks many questions is never slower than with the table alone by more than that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from codeask.core.runtime import resident
from codeask.core.storage.file_table import FileTable
from codeask.core.storage.symbol_table import SymbolTable, path_keys, path_tails

#: Scans that cost about as much as building the table (a scan reads the paths' text once in
#: C; a build makes two tails and a dict entry per path in Python: ~5 ms against ~0.35 s on
#: the kernel's 78k paths, ~70 scans; the budget counts half of that).
SCANS_PER_BUILD = 32


class PathScan:
    """`paths_named` over one set of paths, by scanning their text."""

    def __init__(self, key: object, paths: Iterable[str]) -> None:
        self.key = key
        """The path set's key (`FileTable.paths_key`) this scan was made for."""
        listed = [p for p in paths if "\n" not in p]  # a line per path (no path holds one)
        self._text = "\n" + "\n".join(listed) + "\n"
        self._budget = len(listed)
        self._scan_cost = max(1, len(listed) // SCANS_PER_BUILD)
        self._spent = 0

    def built_for(self, key: object) -> bool:
        return key == self.key

    def spent(self) -> bool:
        """Whether the scans have cost as much as building the table."""
        return self._spent >= self._budget

    def paths_named(self, key: str) -> list[str]:
        """Files whose `path_keys` hold `key`, in the order the paths were given (the answer
        of `SymbolTable.paths_named`: a path a key names has the key's last part among its
        `path_tails`)."""
        tail = key.rpartition("/")[2]
        if not tail or "\n" in tail:
            return []
        self._spent += self._scan_cost
        text, found, last = self._text, [], -1
        for match in _tail_pattern(tail).finditer(text):
            start = text.rfind("\n", 0, match.start()) + 1
            if start == last:
                continue  # a path is kept once
            last = start
            path = text[start : text.find("\n", match.end())]
            self._spent += 1
            if tail in path_tails(path) and key in path_keys(path):
                found.append(path)
        return found


class PathScans:
    """Which scan a storage's `paths_named` asks, if any (else its table)."""

    def __init__(self) -> None:
        self.scan: PathScan | None = None

    def current(self, table: SymbolTable, files: FileTable) -> PathScan | None:
        """The scan of `files`' paths as they are now; None (ask `table`) in a long-lived
        process, once `table` is built for these paths, or once the scans have cost a build."""
        key = files.paths_key()
        if not resident.one_shot() or table.built_for(key):
            return None
        if self.scan is None or not self.scan.built_for(key):
            self.scan = PathScan(key, files)
        if self.scan.spent():
            self.scan = None
        return self.scan


def _tail_pattern(tail: str) -> re.Pattern[str]:
    """Where `tail` is a line's last part, its stem (before the last dot, which has a suffix
    after it), or the folder of its `__init__`: the literal first, so the matcher skips to it,
    then what must come before it (a slash or the line's start) and after it."""
    literal = re.escape(tail)
    after = r"(?=\n|\.[^./\n]+\n|/__init__(?:\.[^./\n]+)?\n)"
    return re.compile(literal + r"(?<=[/\n]" + literal + ")" + after)
