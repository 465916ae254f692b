"""The user config read without tomllib, when it is simple enough to read exactly.

`daemon.enabled` usually comes from `~/.config/codeask/config.toml`, and every forwarded
search reads it. tomllib imports `re` and its compiler: ~15-20 ms of CPU, as much again as the
rest of a forwarded search's own work. `loads` reads the plain subset of TOML a hand-written
config is made of: comments, `[table]` headers with one bare name, `key = value` with a bare
key and a value that is `true`, `false`, a decimal integer, or a one-line string without
escapes. For anything else (arrays, floats, dates, dotted or quoted keys, escapes, multi-line
values, a duplicate key or table, a control character) it answers None and the caller asks
tomllib. What it does answer is tomllib's answer (tests/daemon/test_light_toml.py). Kept on
purpose: tomllib added 17 ms of CPU to a forwarded search (docs/architecture.md, "Copies kept
on purpose").
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def loads(text: str) -> dict[str, Any] | None:
    """The document as tomllib.loads gives it, or None (not plain enough to be sure)."""
    if "\x7f" in text or any(c < " " and c not in "\t\n\r" for c in text):
        return None
    doc: dict[str, Any] = {}
    table = doc
    lines = text.split("\n")
    for at, raw in enumerate(lines):
        line = raw[:-1] if raw.endswith("\r") and at < len(lines) - 1 else raw
        if "\r" in line:
            return None  # a carriage return not followed by a newline
        line = line.strip(" \t")
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            name, rest = _header(line)
            if name is None or name in doc or not _comment(rest):
                return None
            table = doc[name] = {}
            continue
        key, equals, value = line.partition("=")
        key = key.strip(" \t")
        if not equals or not _bare(key) or key in table:
            return None
        parsed = _value(value.lstrip(" \t"))
        if parsed is None:
            return None
        table[key] = parsed[0]
    return doc


def _header(line: str) -> tuple[str | None, str]:
    """(the table's name, what follows `]`) of `[name]`; None for anything but a bare name."""
    if line.startswith("[["):
        return None, ""
    name, closed, rest = line[1:].partition("]")
    name = name.strip(" \t")
    return (name if closed and _bare(name) else None), rest


def _value(text: str) -> tuple[Any] | None:
    """(the value,) of a plain value followed by nothing but a comment, else None."""
    if text[:1] in ('"', "'"):
        quote = text[0]
        body, closed, rest = text[1:].partition(quote)
        if not closed or "\\" in body:
            return None  # unterminated, or an escape (in '...' too: left to tomllib)
        return (body,) if _comment(rest) else None
    token, rest = text, ""
    for at, char in enumerate(text):
        if char in " \t#":
            token, rest = text[:at], text[at:]
            break
    if not _comment(rest):
        return None
    if token in ("true", "false"):
        return (token == "true",)
    if token.isascii() and token.isdigit() and (token == "0" or token[0] != "0"):
        return (int(token),)
    return None


def _comment(rest: str) -> bool:
    """Nothing, or whitespace and a comment."""
    rest = rest.lstrip(" \t")
    return not rest or rest.startswith("#")


def _bare(key: str) -> bool:
    return bool(key) and all(char in _BARE for char in key)
