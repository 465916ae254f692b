"""File names as text: which ones can be stored, and how to show any of them on one line.

A POSIX file name is bytes. Python hands over names that are not UTF-8 with surrogate escapes
(PEP 383), and nothing downstream accepts those (msgspec, sqlite and the LSP's JSON all encode
strict UTF-8), so the walker skips them (`is_utf8`). Names with a newline, a carriage return or
another control character are legitimate files and are indexed, but a raw newline would split a
`path:line` output line in two and lets a file name forge lines of a prompt or a log: every text
output shows paths through `display_path`. Ground floor: imports nothing of ours.
"""

from __future__ import annotations

import unicodedata

#: Categories never shown raw: controls (C0, DEL, C1), surrogates, line/paragraph separators.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
#: Bidirectional overrides and isolates: they reorder what a reader sees ("trojan source").
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def is_utf8(name: str) -> bool:
    """Whether the name came from valid UTF-8 bytes (no surrogate escapes in it)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _unsafe(char: str) -> bool:
    return char in _BIDI_CONTROLS or unicodedata.category(char) in _UNSAFE_CATEGORIES


def _escape(char: str) -> str:
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # a surrogate-escaped byte: show the byte itself
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def display_path(path: str) -> str:
    """`path` unchanged when every character is printable, else backslash-escaped (a literal
    backslash too, so the escaped form is unambiguous): always one line of valid UTF-8."""
    if not any(_unsafe(char) for char in path):
        return path
    return "".join(_escape(char) if _unsafe(char) or char == "\\" else char for char in path)


def scrub(text: str) -> str:
    """`text` with each surrogate escape shown as `\\xNN` (else unchanged): git hands over
    paths and messages that need not be UTF-8, and the index can only store UTF-8."""
    if is_utf8(text):
        return text
    return "".join(_escape(char) if "\ud800" <= char <= "\udfff" else char for char in text)


def input_text(text: str) -> str:
    """A query or question as valid UTF-8 text: bytes that were not UTF-8 (argv hands them over
    as surrogate escapes) and lone surrogates (JSON allows `\\ud800`) become U+FFFD, so the
    tokenizers, msgspec and the LSP's JSON never see them."""
    if is_utf8(text):
        return text
    try:  # only PEP 383 escapes: give the bytes back, decoded with replacement
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)


def display_text(text: str) -> str:
    """One line of text (a preview line, a symbol, a commit subject) safe to print: controls
    other than tab, bidi overrides and surrogates backslash-escaped; backslashes kept as is
    (unlike `display_path`, nothing needs to be read back)."""
    if not any(_unsafe(char) and char != "\t" for char in text):
        return text
    return "".join(_escape(char) if _unsafe(char) and char != "\t" else char for char in text)


def bad_text(value: str) -> str | None:
    """Why a string from a client is not well-formed text (NUL, unpaired surrogate), or None:
    the faces refuse such arguments with this reason (the LSP, the MCP server)."""
    if "\x00" in value:
        return "contains a NUL character"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "contains an unpaired surrogate (not valid Unicode text)"
    return None
