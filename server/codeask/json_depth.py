"""How deep a JSON-RPC message nests, and the id of one too deep to decode at all.

Python's decoders (json, msgspec) recurse once per level and give up at the interpreter's
recursion limit, which depends on how deep the stack already is: a 2 KB line nested 1,000
deep killed `codeask mcp` (RecursionError), and 985 deep passed the language server's framing
check but failed again inside pygls, leaving the request unanswered. The faces refuse every
message nested deeper than MAX_DEPTH (counted on the decoded value, without recursion, before
anything else walks it) and answer it by its id; one the decoder itself could not finish is
answered by the id read from the line's head.
"""

from __future__ import annotations

import json
import re

from codeask.config import nesting

#: Deepest nesting a message may have. Real ones stay under ten (LSP's initialize params:
#: six); every decoder and walker in the chain copes with this many at any stack depth.
MAX_DEPTH = 100
#: Only this much of an undecodable message is read for its id (clients write it first).
ID_HEAD_CHARS = 65536

#: A string, punctuation, or a bare scalar (number, true, false, null).
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')


def too_deep(message: object) -> bool:
    """Whether a decoded message nests more than MAX_DEPTH arrays/objects (stops counting
    there: the cost is bounded by the message's size, never its depth)."""
    return nesting(message, MAX_DEPTH) > MAX_DEPTH


def top_level_id(text: str | bytes) -> int | str | None:
    """The `id` member of the top-level object, when it is a string or an integer written
    in the first ID_HEAD_CHARS characters; else None (the answer then goes to `null`)."""
    if isinstance(text, bytes):
        text = text[: ID_HEAD_CHARS * 4].decode("utf-8", errors="replace")
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
            return valid_id(_scalar(token))
    return None


def valid_id(value: object) -> int | str | None:
    """`value` when it can be a request id (a string or an integer, never a bool)."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _scalar(token: str) -> object:
    try:
        return json.loads(token)
    except ValueError:
        return None
