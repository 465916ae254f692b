"""Code-aware tokens: the lexical columns' tokenizer (a chunk worker spends ~15 % of its CPU here).

`parseHttpRequest` and `parse_http_request` both give `parse`, `http`, `request` and the whole
identifier (`parsehttprequest`). The definition is `IDENTIFIER` (the words of a text) and
`CAMEL_PART` (the parts of a word); `token_text` gives the same tokens in the same order without
running `IDENTIFIER` over the text: the text as ASCII bytes, every byte outside `[A-Za-z0-9_]`
turned into a space by one `bytes.translate`, then `split` (both in C), and each distinct word's
tokens remembered as one joined string, so a chunk's column is one `join` of cached strings.
"""

from __future__ import annotations

import re

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: Distinct words remembered at once (a worker's whole-kernel vocabulary would not fit).
CACHE_WORDS = 1 << 16
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
#: byte → itself inside a word, else a space (non-ASCII characters arrive as b"?").
_SEPARATE = bytes(b if b in _WORD_BYTES else 0x20 for b in range(256))
_DIGITS = "0123456789"


def identifier_parts(identifier: str) -> list[str]:
    """`HTTPServer_config2` → ['http', 'server', 'config', '2'] (lower-cased)."""
    parts: list[str] = []
    for piece in identifier.split("_"):
        if _one_part(piece):
            parts.append(piece.lower())
        else:
            parts.extend(p.lower() for p in CAMEL_PART.findall(piece))
    return parts


def _one_part(piece: str) -> bool:
    """`CAMEL_PART` finds `piece` whole: ASCII letters all lower, all upper or Capitalized
    (most pieces of code's identifiers; the regex costs ~1 µs a piece)."""
    return (
        piece.isascii()
        and piece.isalpha()
        and (piece.islower() or piece.isupper() or piece[1:].islower())
    )


def _identifier_text(word: str) -> str:
    """One `IDENTIFIER` match's tokens joined: the whole word (no underscores) and, when it
    has more than one, its snake/Camel parts; '' for a run of underscores.

    `word` is ASCII `[A-Za-z0-9_]` (a run), so `identifier_parts` is one `CAMEL_PART` pass over
    the whole word (no part crosses an underscore, the lookahead never matches one), lowered
    once after the join: a chunk worker meets ~3 new words a chunk (kernel,mm,lib), and this
    is ~25 % cheaper than splitting and lowering piece by piece (amd's
    register names: 15 % of a worker's CPU on drivers/gpu, issue 42)."""
    whole = word.replace("_", "").lower()
    if not whole:
        return ""
    parts = CAMEL_PART.findall(word)
    return f"{whole} {' '.join(parts).lower()}" if len(parts) > 1 else whole


def _run_text(run: str) -> str:
    """A maximal run of `[A-Za-z0-9_]`: `IDENTIFIER` matches it whole, or, when it starts with
    a digit, as its leading digits and then the rest (`2to3_x` → `2`, `to3_x`)."""
    if run[0] not in _DIGITS:
        return _identifier_text(run)
    rest = run.lstrip(_DIGITS)
    digits = run[: len(run) - len(rest)]
    tail = _identifier_text(rest) if rest else ""
    return f"{digits} {tail}" if tail else digits


class _RunTokens(dict[bytes, str]):
    """run (ASCII bytes) → its tokens joined; a miss is split once (`__missing__`, called from
    C by `map`), and the whole cache dropped when full (cheaper than an LRU's bookkeeping)."""

    def __missing__(self, run: bytes) -> str:
        if len(self) >= CACHE_WORDS:
            self.clear()
        text = self[run] = _run_text(run.decode("ascii"))
        return text


_RUNS = _RunTokens()


def token_text(text: str) -> str:
    """`text`'s tokens joined by single spaces: `" ".join(code_tokens(text))`, cheaper."""
    runs = text.encode("ascii", "replace").translate(_SEPARATE).split()
    return " ".join(filter(None, map(_RUNS.__getitem__, runs)))


def code_tokens(text: str) -> list[str]:
    """Whole identifiers (underscores dropped) plus their snake/Camel parts, lower-cased."""
    return token_text(text).split()
