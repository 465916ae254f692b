"""The records every stage agrees on. Ground floor beside `config`: imports nothing of ours.

They are msgspec Structs because they are also the on-disk format of the index metadata.
"""

from __future__ import annotations

import hashlib

import msgspec

#: Chunk kinds. Code: function, method, class, module (top-level code outside any definition).
#: Text: section (markdown heading), window (line window of a file without a grammar).
#: History: commit, hunk.
CODE_KINDS = ("function", "method", "class", "module")
TEXT_KINDS = ("section", "window")
HISTORY_KINDS = ("commit", "hunk")
#: What joins the disjoint runs of lines of one chunk (a class outline's elided bodies): its
#: line range then spans lines its text does not hold.
ELISION = "\n...\n"


class Chunk(msgspec.Struct, kw_only=True, array_like=True, omit_defaults=True, gc=False):
    """A piece of a file (or of git history) that is searched, embedded and cited.

    Not tracked by the cyclic collector (`gc=False`): it holds strings, numbers and a list and
    a dict of strings, so it is never part of a cycle, and a collection need not walk the
    chunks a pass makes or a search reads and keeps (storage/recent_chunks.py)."""

    path: str
    """Workspace-relative POSIX path (for history chunks: the main file touched, or '')."""
    language: str
    """Language name from the languages table ('text', 'markdown', 'git' for history)."""
    kind: str
    """One of CODE_KINDS, TEXT_KINDS or HISTORY_KINDS."""
    start_line: int
    """1-based, inclusive."""
    end_line: int
    """1-based, inclusive."""
    text: str
    """The source text of the lines (for history: the message or the hunk)."""
    symbol: str = ""
    """Name of the function/class/section ('' for windows). Commits: the short sha."""
    parent: str = ""
    """Enclosing symbol (class of a method, outer heading of a section), '' if none."""
    docstring: str = ""
    calls: list[str] = msgspec.field(default_factory=list)
    """Names called inside the chunk, deduplicated, in order of first call."""
    part: int = 0
    """0 for a whole node; 1..n for the windows of an oversized node."""
    id: int = 0
    """Assigned by the store; stable for the life of the chunk in the index; 0 before."""
    meta: dict[str, str] = msgspec.field(default_factory=dict)
    """Extra facts (history: sha, author, date; 'uncommitted': '1')."""

    def embed_text(self) -> str:
        """What the model sees: path, symbol, docstring, code, calls (the issue's recipe)."""
        head = self.path
        if self.symbol:
            head += f" {self.parent + '.' if self.parent else ''}{self.symbol}"
        parts = [head]
        if self.docstring and self.docstring not in self.text:
            parts.append(self.docstring)
        parts.append(self.text)
        if self.calls:
            parts.append("calls: " + ", ".join(self.calls[:30]))
        return "\n".join(parts)

    def content_hash(self) -> str:
        """Key of the embedding cache: equal texts share one vector, across files and branches."""
        return hashlib.blake2b(self.embed_text().encode("utf-8"), digest_size=16).hexdigest()


class FileRecord(msgspec.Struct, kw_only=True, array_like=True, omit_defaults=True):
    """What the index knows about one file, to decide cheaply whether it changed."""

    path: str
    size: int
    mtime_ns: int
    sha256: str
    language: str = ""
    chunk_ids: list[int] = msgspec.field(default_factory=list)
    skipped: str = ""
    """Why the file has no chunks (binary, too large, not UTF-8, ...); '' when indexed."""
