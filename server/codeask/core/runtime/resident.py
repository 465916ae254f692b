"""Index pages a one-shot process gives back as soon as a step has read them.

Why (issue 42): `codeask search --no-daemon` on the Linux kernel peaked at 755 MB, 122 MB of it
its own memory: the rest were pages of the index files it maps (lexical segments, chunk table,
static vectors). A page fault maps a whole page-cache folio, and on a recent Linux a file read
with a large readahead (8 MB here) sits in folios of up to 2 MB, so a bisection of a segment's
term dictionary maps megabytes for a few bytes it reads, once per segment and term. A process
that answers one question and exits keeps nothing warm for a next one, so it drops each
mapping's pages (`madvise(MADV_DONTNEED)`: they stay in the page cache) once the step that read
them is done: its peak is then one step's pages, not every page it ever touched. A long-lived
process (daemon, language server, MCP) keeps them: its next query reads them for free, and
mapped_rows.py lets an idle tier's pages go after a while.
"""

from __future__ import annotations

import contextlib
import mmap

_one_shot = False


def answer_once() -> None:
    """Say that this process answers one question and exits (the CLI answering in-process)."""
    global _one_shot
    _one_shot = True


def one_shot() -> bool:
    """Whether this process gives index pages back after each step."""
    return _one_shot


def give_back(mapping: mmap.mmap) -> None:
    """Drop a read-only shared mapping's pages from this process now (they stay in the page
    cache and come back on the next touch). A reader running meanwhile only faults them in."""
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is not None and hasattr(mapping, "madvise"):
        with contextlib.suppress(OSError, ValueError):  # ValueError: closed meanwhile
            mapping.madvise(advice)


def step_done(mapping: mmap.mmap | None) -> None:
    """A step has read what it needed of `mapping`: a one-shot process gives its pages back."""
    if _one_shot and mapping is not None:
        give_back(mapping)
