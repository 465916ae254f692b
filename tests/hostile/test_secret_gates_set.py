"""The secrets scan's one-pass keyword gate (secret_gates.py, issue 42) answers what the split
into distinct words answered before it: which keywords occur and which token prefixes start a
long enough word. The reference is that code as it was (`_words_reference`), run on
the hostile suite's secrets and near-misses, this repository's own sources, and texts made to
sit on the gate's edges (word lengths around MIN_TOKEN, non-ASCII bytes, surrogates)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_secrets_gates import corpus

from codeask.core.source import secrets as S
from codeask.core.source.secret_gates import KeywordGate

Answer = tuple[frozenset[bytes], frozenset[bytes]]


def _kept_run(keyword: str) -> tuple[bytes, bool]:
    runs = keyword.encode().translate(S._WORD_BYTES).split()
    run = max(runs, key=len, default=b"")
    return run, run == keyword.encode()


def _words_reference(text: str) -> Answer:
    """The gates as `_Seen` computed them before the set: distinct words, a joined vocabulary
    searched with `in` for each keyword's word run (then the lowered text for keywords with
    symbols), prefixes tried on words whose first two bytes start one."""
    lower = text.lower()
    if len(lower) != len(text):
        lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    words = frozenset(lower.encode("utf-8", "replace").translate(S._WORD_BYTES).split())
    vocab = b" ".join(words)

    def has(keyword: str) -> bool:
        run, whole = _kept_run(keyword)
        if run and run not in vocab:
            return False
        return whole or keyword in lower

    found = frozenset(k.encode() for k in S._GATE_KEYWORDS if has(k))
    heads2 = frozenset(p[:2] for p in S._PREFIX_BYTES)
    hits = [
        w
        for w in words
        if len(w) >= S.MIN_TOKEN and w[:2] in heads2 and w.startswith(S._PREFIX_BYTES)
    ]
    heads = frozenset(b for w in hits for b in S._PREFIX_BYTES if w.startswith(b))
    return found, heads


def _edge_texts(seed: int) -> list[str]:
    """Every prefix and keyword at word lengths MIN_TOKEN - 1, MIN_TOKEN and longer, glued to
    separators, non-ASCII letters (some change length when lowered) and a lone surrogate."""
    rng = random.Random(seed)
    pieces = [*S._PREFIXES, *S._GATE_KEYWORDS]
    around = ("", " ", "\n", "-", ".", "_", "é", "İ", "ß", "\udc80", "$", "</", "\t", "€")
    texts = []
    for piece in pieces:
        for length in (S.MIN_TOKEN - 1, S.MIN_TOKEN, S.MIN_TOKEN + 5):
            tail = "".join(rng.choice("aZ9_.-é") for _ in range(max(0, length - len(piece))))
            word = piece + tail
            texts.append(rng.choice(around) + word + rng.choice(around))
            texts.append(word.upper() + " " + rng.choice(pieces))
    texts.append(" ".join(texts))
    texts += ["", " ", "é" * 40, "\udc80" * 20]
    return texts


def _own_sources() -> list[str]:
    root = Path(__file__).resolve().parents[2]
    files = sorted((root / "server" / "codeask").rglob("*.py"))
    return [p.read_text("utf-8") for p in files]


def _gate_answer(text: str) -> Answer:
    seen = S._Seen.of(text)
    assert all(seen.has(k) == (k.encode() in seen.found) for k in S._GATE_KEYWORDS)
    return seen.found, seen.heads


@pytest.mark.parametrize("seed", [1, 2])
def test_gate_set_answers_like_distinct_words(seed: int) -> None:
    texts = corpus(seed) + _edge_texts(seed)
    answers = [_gate_answer(t) for t in texts]
    assert answers == [_words_reference(t) for t in texts]
    assert any(heads for _, heads in answers) and any(runs for runs, _ in answers)


def test_gate_set_on_the_engines_own_source() -> None:
    texts = _own_sources()
    assert len(texts) > 100
    assert [_gate_answer(t) for t in texts] == [_words_reference(t) for t in texts]


class _OutOfMemory:
    """An RE2 set whose automaton ran out of memory: it reports no match, not even the empty
    pattern's (RE2 clears its matches and returns false)."""

    def Match(self, text: bytes) -> None:
        return None


def test_gate_falls_back_to_words_when_re2_reports_nothing_mock() -> None:
    """No answer from RE2 (cannot be made to happen with the gate's small automaton here) is
    never read as `no keyword`: the words answer, exactly as before."""
    keywords = [k.encode() for k in S._GATE_KEYWORDS]
    gate = KeywordGate(keywords, S._PREFIX_BYTES, S.MIN_TOKEN, S._WORD_BYTES)
    gate._set = _OutOfMemory()
    for text in corpus(3) + _edge_texts(3):
        lower = S._Seen.of(text).lower.encode("utf-8", "replace")
        assert gate.scan(lower) == _words_reference(text), text[:80]


def test_gate_keywords_are_ascii_without_a_replacement_mark() -> None:
    """The gate reads the text's UTF-8 bytes (a lone surrogate becomes `?`): the same answers
    as `in` on the text holds only for ASCII keywords without `?`."""
    assert all(k.isascii() and "?" not in k and k == k.lower() for k in S._GATE_KEYWORDS)
    assert all(p.isascii() for p in S._PREFIXES)


def test_secrets_still_found_in_a_file_past_the_gate() -> None:
    """End to end: a token past many kernel-like words is found and redacted."""
    token = "ghp_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6"
    text = "static int skb_frag_size(void);\n" * 2000 + f'gh = "{token}"\n'
    assert [rule for _, _, rule in S.find_secrets(text)] == ["github-pat"]
    assert token not in S.redact_text(text)
