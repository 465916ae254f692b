"""A bounded window of a document around the cursor, for huge documents.

Hover, related code and askCode's selection must not chunk, split or copy a 10 MB document
per request (that froze the server for 20 s and took gigabytes). Lines are found by counting
newlines in blocks (C speed, no copies), and at most `WINDOW_CHARS` characters around the
cursor, `WINDOW_LINES` lines either side, are handed on.
"""

from __future__ import annotations

from dataclasses import dataclass

from codeask.core.source.limits import WINDOW_CHARS, WINDOW_LINES, LimitError, max_chars

BLOCK = 64 * 1024


@dataclass(frozen=True)
class Window:
    """`text` holds document lines from `first_line` (0-based); the cursor is at
    (`line`, `character`) relative to it."""

    text: str
    first_line: int
    line: int
    character: int


def line_offset(text: str, line: int, start: int = 0, start_line: int = 0) -> int:
    """Offset where 0-based `line` starts (len(text) past the end); counting from `start`,
    which is the start of `start_line`."""
    pos, current, size = start, start_line, len(text)
    while current < line and pos < size:
        end = min(size, pos + BLOCK)
        count = text.count("\n", pos, end)
        if current + count < line:
            current, pos = current + count, end
            continue
        while current < line:
            pos = text.find("\n", pos, end) + 1
            current += 1
    return min(pos, size)


def _clean(text: str) -> str:
    """Unpaired surrogates (legal in JSON, not in UTF-8) would break tree-sitter: '?'."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


def window(text: str, line: int, character: int) -> Window:
    """The part of `text` hover and related code look at; the whole text when small."""
    if len(text) <= WINDOW_CHARS:
        return Window(_clean(text), 0, line, character)
    first = max(0, line - WINDOW_LINES)
    lo = line_offset(text, first)
    cursor = line_offset(text, line, lo, first)
    hi = line_offset(text, line + WINDOW_LINES + 1, cursor, line)
    if hi - lo <= WINDOW_CHARS:
        return Window(_clean(text[lo:hi]), first, line - first, character)
    cursor_end = text.find("\n", cursor)
    cursor_end = len(text) if cursor_end == -1 else cursor_end + 1
    half = WINDOW_CHARS // 2
    if cursor_end - cursor > WINDOW_CHARS:  # one giant line: a slice around the character
        start = max(cursor, min(cursor + character - half, cursor_end - WINDOW_CHARS))
        body = text[start : start + WINDOW_CHARS]
        return Window(_clean(body), line, 0, character - (start - cursor))
    if cursor - lo > half:
        lo = text.find("\n", cursor - half, cursor) + 1 or cursor
    if hi - lo > WINDOW_CHARS:
        cut = text.rfind("\n", cursor_end, lo + WINDOW_CHARS)
        hi = cut + 1 if cut != -1 else cursor_end
    first = line - text.count("\n", lo, cursor)
    return Window(_clean(text[lo:hi]), first, line - first, character)


def slice_range(text: str, start: tuple[int, int], end: tuple[int, int]) -> str:
    """The text of an LSP range (line, character pairs) without splitting the whole document;
    LimitError when it is longer than the `selection` limit."""
    begin = line_offset(text, start[0])
    begin = min(begin + start[1], _line_end(text, begin))
    stop = line_offset(text, end[0], *((begin, start[0]) if end[0] >= start[0] else (0, 0)))
    stop = min(stop + end[1], _line_end(text, stop))
    if stop <= begin:
        return ""
    check = max_chars("lsp", "selection")
    if stop - begin > check:
        raise LimitError(f"the selected range is {stop - begin} characters; the maximum is {check}")
    return text[begin:stop]


def _line_end(text: str, offset: int) -> int:
    """Offset of the newline ending the line at `offset` (or the end of the text)."""
    end = text.find("\n", offset)
    return len(text) if end == -1 else end
