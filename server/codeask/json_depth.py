"""How deep a JSON-RPC message nests, read without decoding it, and its top-level id.

Python's decoders (json, msgspec) recurse once per level and give up at the interpreter's
recursion limit, which depends on how deep the stack already is: a 2 KB line nested 1,000
deep killed `codeask mcp` (RecursionError), and 985 deep passed the language server's framing
check but failed again inside pygls, leaving the request unanswered. The faces refuse any
message nested deeper than MAX_DEPTH before a decoder sees it, and answer it by its id.

Standard library only (`re`): the language server and the MCP server both use it.
"""

from __future__ import annotations

import json
import re

#: Deepest nesting a message may have. Real ones stay under ten (LSP's initialize params:
#: six); a decoder anywhere in the chain copes with this many at any stack depth.
MAX_DEPTH = 100
#: Only this much of a too-deep message is read for its id (clients write it first).
ID_HEAD_CHARS = 65536

#: A JSON string (skipped whole, brackets inside it do not count), or a bracket.
_BRACKETS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
#: A string, punctuation, or a bare scalar (number, true, false, null).
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether `text` opens more than `limit` arrays/objects inside each other (strings
    skipped). A message with few brackets is passed at C speed, without a scan."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for match in _BRACKETS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth -= 1
    return False


def top_level_id(text: str) -> int | str | None:
    """The `id` member of the top-level object, when it is a string or an integer written
    in the first ID_HEAD_CHARS characters; else None (the answer then goes to `null`)."""
    depth, key, after_colon, expect_key = 0, None, False, False
    for match in _TOKENS.finditer(text, 0, ID_HEAD_CHARS):
        token = match.group()
        if token in "[{":
            depth += 1
            expect_key = depth == 1 and token == "{"
            after_colon = False
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return None
        elif depth != 1:
            continue
        elif token == ",":
            expect_key, key, after_colon = True, None, False
        elif token == ":":
            after_colon = True
        elif expect_key:
            key, expect_key = token, False
        elif after_colon and key == '"id"':
            return _id_value(token)
    return None


def _id_value(token: str) -> int | str | None:
    try:
        value = json.loads(token)
    except ValueError:
        return None
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None
