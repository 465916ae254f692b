"""The secrets scan's cheap keyword gates find exactly what testing every keyword finds (issue 42).

`find_secrets` answers most keyword gates from the text's distinct words (`_Seen.vocab`), tests
token prefixes only on words whose first two bytes start one, and searches twilio's `SK` token
by its literal prefix. The reference here is the scan as it was: every keyword looked for with
`in` in the whole lowered text, every word tried against every prefix, twilio's `\\b` first.
Both must give the same spans (so the same redactions) on the hostile suite's own secrets and
look-alikes, on generated near-misses of each, and on real source files of this repository.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
from test_secrets import ORDINARY

from codeask.core.source import secrets as S
from codeask.core.source.lazy_regex import LazyRegex
from support.secret_formats import (
    Maker,
    key_blocks,
    long_function_with_keys,
    service_account_json,
    token_formats,
)

Span = tuple[int, int, str]
_OLD_RULES = {
    r.id: replace(r, regex=LazyRegex(r"\b(?P<v>SK[0-9a-fA-F]{32})\b"))
    for r in S.TOKEN_RULES
    if r.id == "twilio-api-key"
}


class _Whole(S._Seen):
    """Every keyword looked for in the whole lowered text."""

    def has(self, keyword: str) -> bool:
        return keyword in self.lower


def _old_candidates(seen: _Whole) -> list[S.Rule]:
    rules = [r for r in S._CONTEXT_TABLE if any(k in seen.lower for k in r.keywords)]
    words = seen.lower.encode("utf-8", "replace").translate(S._WORD_BYTES).split()
    hits = [w for w in words if len(w) >= S.MIN_TOKEN and w.startswith(S._PREFIX_BYTES)]
    prefixes = {p for w in hits for p in S._PREFIXES if w.startswith(p.encode())}
    found = {id(r): r for p in sorted(prefixes) for r in S._BY_PREFIX[p]}
    return [_OLD_RULES.get(r.id, r) for r in rules + list(found.values())]


def full_scan(text: str) -> list[Span]:
    """`find_secrets` without the cheap gates."""
    seen = _Whole.of(text)
    spans = S._key_spans(text) if "-----begin" in seen.lower else []
    for rule in _old_candidates(seen):
        spans += S._rule_spans(rule, text)
    spans += S._generic_spans(text, seen)
    if "://" in text:
        spans += S._url_spans(text)
    return S._disjoint(spans)


#: What goes around a value or a keyword in a near-miss: word characters the gates keep,
#: separators they drop, letters whose lowercase changes length, a lone surrogate.
_AROUND = ("A", "7", "x.", "-", "~", "_", "é", "İ", "\udc80", " ", "\n", "\\n", '"', "::")
#: Put before a value only: the short gates of htpasswd (`$`) and xml-password (`</`).
_AROUND_MORE = ("$", "</")


def _near_misses(line: str, value: str, rng: random.Random) -> list[str]:
    """The line with its value cut, lengthened, re-cased, glued to its neighbours (alone and
    after the line itself, whose value opens the gate); the line upper-cased, split, reversed."""
    cut, swapped = value[:-1], value.swapcase()
    variants = [line.replace(value, v) for v in (cut, value + "A", swapped, value[1:], "")]
    variants += [line.upper(), line.replace("_", "\n"), line.replace("=", " = "), line[::-1]]
    for before in rng.sample(_AROUND + _AROUND_MORE, 4):
        after = rng.choice(_AROUND)
        glued = line.replace(value, before + value + after)
        bare = before + value + after  # no name before it for the generic rule to see
        variants += [glued, before + line + after, line + "\n" + glued, line + "\n" + bare]
    return variants


def corpus(seed: int) -> list[str]:
    """Positive and negative texts: the hostile suite's fixtures and their near-misses."""
    m, rng = Maker(seed), random.Random(seed)
    formats = token_formats(m)
    texts = [s.line.format(v=s.value) for s in formats]
    texts.append("\n".join(texts))
    for s in formats:
        texts += _near_misses(s.line.format(v=s.value), s.value, rng)
    blocks = key_blocks(m)
    texts.append(long_function_with_keys(blocks))
    texts.append(long_function_with_keys(blocks).replace("-----END", "-----end"))
    texts.append(service_account_json(m)[0])
    ordinary = {"uuid": "5f0c3d4e-8a2b-4c1d-9e7f-0a1b2c3d4e5f", "sha": m.s("0123456789abcdef", 64)}
    texts += [t.format(**ordinary) for t in ORDINARY.values()]
    return texts


def _own_sources() -> list[str]:
    """Real code full of `key`, `token`, `secret`, `password`: this repository's own files."""
    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "server" / "codeask" / "core" / "source").glob("*.py"))
    files += sorted((root / "tests" / "hostile").glob("test_*.py"))
    return [p.read_text("utf-8") for p in files]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cheap_gates_find_what_every_keyword_finds(seed: int) -> None:
    texts = corpus(seed)
    found = [S.find_secrets(t) for t in texts]
    assert found == [full_scan(t) for t in texts]
    rules = {rule for spans in found for _, _, rule in spans}
    assert len(rules) >= 30  # the corpus exercises most rules, not only negatives
    assert any(not spans for spans in found)


def test_cheap_gates_on_real_source_files() -> None:
    texts = _own_sources()
    assert len(texts) > 20
    assert [S.find_secrets(t) for t in texts] == [full_scan(t) for t in texts]


def test_keyword_gate_answers_like_in() -> None:
    """Each gate keyword, present or absent, inside words, at their edges and across case."""
    keywords = sorted(S._GATE_KEYWORDS)
    rng = random.Random(7)
    for keyword in keywords:
        for text in (keyword, keyword.upper(), f"x{keyword}y", keyword[:-1], f"a {keyword}\n"):
            mixed = text + " " + rng.choice(keywords)[1:]
            for t in (text, mixed):
                seen = S._Seen.of(t)
                assert seen.has(keyword) == (keyword in seen.lower), (keyword, t)
