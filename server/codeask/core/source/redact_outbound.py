"""Redaction of text that leaves the machine: a prompt for an endpoint that is not on
loopback, a remote embedding server's input, an MCP tool's result (moved from ask/prompt.py so
that embedding need not import ask).

`redact_secrets`: `secrets.redact` (known formats, key blocks, high-entropy assignments), then
every literal assigned to a secret-looking name replaced by [REDACTED]. `redact_path`: a path
shown to an agent, with a token used as a file or folder name replaced (and `unredact_path`, the
way back when the agent passes that path to a tool).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable
from pathlib import Path

from codeask.core.source import secrets
from codeask.core.source.lazy_regex import LazyRegex

REDACTED = "[REDACTED]"


#: `name = "literal"` (also `name: str = '...'`, `"name": "..."`, `name := "..."`, `name => "..."`).
_ASSIGNED_LITERAL = LazyRegex(
    r"""(?P<name>[A-Za-z_][\w.\-]*)["']?"""
    r"""(?P<op>\s*(?::\s*[A-Za-z_][\w\[\], |.]*\s*)?(?:=|:=|=>|:)\s*)"""
    r"""(?P<q>["'`])(?P<value>[^"'`\n]+)(?P=q)"""
)
#: Shell / .env / ini / YAML style: `export DB_PASSWORD=s3cr3t`, `password: hunter2` (unquoted).
_ENV_ASSIGNMENT = LazyRegex(
    r"^(?P<lead>[ \t]*(?:export[ \t]+)?(?P<name>[A-Za-z_][\w.\-]*)[ \t]*[=:][ \t]*)"
    r"(?P<value>[A-Za-z0-9+/=_\-.~:@!%^&*]+)(?=[ \t]*(?:#.*)?$)",
    re.MULTILINE,
)
#: Unquoted values that are code, not secrets: numbers, booleans, identifiers, dotted names.
_PLAIN_VALUE = LazyRegex(r"[+\-]?[\d.]+|[A-Za-z_][A-Za-z_.]*")
_SECRET_WORDS = {"password", "passwd", "pwd", "passphrase", "secret", "token", "credentials"}
_SECRET_PAIRS = {("api", "key"), ("access", "key"), ("private", "key"), ("auth", "key")}
_NAME_PARTS = LazyRegex(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def _is_secret_name(name: str) -> bool:
    """Whether an identifier names a secret: its words (snake, kebab, camel) hold a secret word."""
    words = [w.lower() for w in _NAME_PARTS.findall(name.split(".")[-1])]
    if any(w in _SECRET_WORDS or w == "apikey" for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in itertools.pairwise(words))


def redact_secrets(text: str) -> tuple[str, int]:
    """`secrets.redact` (known formats, key blocks, high-entropy assignments: always applied),
    then every literal assigned to a secret-looking name by [REDACTED].

    The second pass is for a non-loopback endpoint. Returns the text and the count. Secret-looking
    assignments are only redacted when the value is a literal, so `token = get()` stays readable.
    """
    text, count = secrets.redact(text)

    def sub(pattern: LazyRegex, repl: Callable[[re.Match[str]], str], s: str) -> str:
        def counted(m: re.Match[str]) -> str:
            nonlocal count
            out = repl(m)
            count += int(out != m.group(0))
            return out

        return pattern.sub(counted, s)

    text = sub(_ASSIGNED_LITERAL, _redact_literal, text)
    text = sub(_ENV_ASSIGNMENT, _redact_env, text)
    return text, count


def _redact_literal(m: re.Match[str]) -> str:
    """`password = "x"` → `password = "[REDACTED]"`; other assignments untouched."""
    value = m.group("value")
    if (
        not _is_secret_name(m.group("name"))
        or REDACTED in value
        or secrets.PLACEHOLDER_MARK in value
    ):
        return m.group(0)
    q = m.group("q")
    return m.group(0)[: m.start("q") - m.start(0)] + q + REDACTED + q


def _redact_env(m: re.Match[str]) -> str:
    """`DB_PASSWORD=hunter2` → `DB_PASSWORD=[REDACTED]`; `TOKEN_TTL=3600` or `token: Token` kept."""
    value = m.group("value")
    if (
        not _is_secret_name(m.group("name"))
        or _PLAIN_VALUE.fullmatch(value)
        or secrets.PLACEHOLDER_MARK in value
    ):
        return m.group(0)
    return m.group("lead") + REDACTED


# --------------------------------------------------------------------------- paths


def redact_path(path: str) -> str:
    """`path` with each secret in it (a token used as a file or folder name) replaced by its
    placeholder: `keys/ghp_….txt` → `keys/«redacted:github-pat».txt`. The rest is kept, so
    the file stays recognisable and `unredact_path` finds it again on disk."""
    spans = secrets.find_secrets(path)
    if not spans:
        return path
    parts, pos = [], 0
    for start, end, rule in spans:
        parts += [path[pos:start], secrets.PLACEHOLDER.format(rule)]
        pos = end
    return "".join(parts) + path[pos:]


def unredact_path(path: Path) -> Path | None:
    """The file on disk that `redact_path` showed as `path` (None when no file, or more than
    one, fits): each redacted component is the one entry of its folder that redacts to it.
    An agent can pass a path it was shown back to a tool."""
    if secrets.PLACEHOLDER_MARK not in str(path):
        return path
    found = Path(path.anchor)
    for part in path.parts[1:] if path.anchor else path.parts:
        if secrets.PLACEHOLDER_MARK in part:
            try:
                names = [n for n in os.listdir(found) if redact_path(n) == part]
            except OSError:
                return None
            if len(names) != 1:
                return None
            part = names[0]
        found = found / part
    return found
