"""How much of a file's name a typed question says: the file-name lift, scaled.

The file-name lift (`retrieve._name_boosts`) counts the question's words a file's name
matches; it does not see what the name says beyond them. Among files matching the same words,
the one whose whole name the question says is the subject ("Mutex and Semaphore …" →
`Mutex.kt`; "toString builder …" → `ToStringBuilder.java`, not
`ReflectionToStringBuilder.java`; "Application" → `Application.swift`, not
`Application+Responder.swift`): each name part the question leaves unsaid is a qualifier of
another file's subject.
"""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath

from codeask.core.search.name_match import MIN_PREFIX, MIN_WORD, WORD, matches_any, question_words
from codeask.core.storage.lexical.index import STOPWORDS, identifier_parts

#: The lift a file keeps when its name's parts are all unsaid: 1 − NAME_COVER_WEIGHT.
#: eval-search dev NDCG@10 .8918 → .8964 at 0.6 (csharp +.035, rust +.017, swift +.016, no
#: language below −.002); 0.8 .8967 (go −.004), 1.0 .8948 (typescript −.020).
NAME_COVER_WEIGHT = 0.6
#: Where a file's name breaks into words besides `_` and camelCase (`Application+Responder`,
#: `init-threads`).
NAME_SEPARATORS = re.compile(r"[-+ ]")


def question_parts(question: str) -> frozenset[str]:
    """The question's words and their identifier parts (`entry_manager` → entry, manager;
    `SchemaUtils` → schema, utils): a name part said inside an identifier is said."""
    parts = (p for word in WORD.findall(question) for p in identifier_parts(word))
    said = {p for p in parts if len(p) >= MIN_WORD and p not in STOPWORDS}
    return question_words(question) | said


@functools.lru_cache(maxsize=65536)
def name_parts(path: str) -> tuple[str, ...]:
    """A file's name (before its first dot) as words of three letters or more; the whole name
    lower-cased when it has none (`io.c`)."""
    stem = PurePosixPath(path).name.split(".")[0]
    parts = [p for piece in NAME_SEPARATORS.split(stem) for p in identifier_parts(piece)]
    return tuple(p for p in parts if len(p) >= MIN_WORD) or (stem.lower(),)


def name_cover(said: frozenset[str], path: str) -> float:
    """The share of the file's name parts that a word of the question matches (as the
    file-name lift matches: exactly, by a common prefix, one ending apart, one stem)."""
    parts = name_parts(path)
    heads = said_heads(said)
    return sum(1 for p in parts if p[:MIN_PREFIX] in heads and matches_any(p, said)) / len(parts)


@functools.lru_cache(maxsize=256)
def said_heads(said: frozenset[str]) -> frozenset[str]:
    """The said words' first MIN_PREFIX letters: every way a name part matches a word starts
    with them, so a part that starts otherwise is unsaid without comparing it to each word
    (cached per question: a frozenset keeps its hash)."""
    return frozenset(word[:MIN_PREFIX] for word in said)


def cover_factor(said: frozenset[str], path: str) -> float:
    """**Name cover**: the file-name lift × (1 − NAME_COVER_WEIGHT × the unsaid share of the
    file's name), `said` being `question_parts`."""
    return 1.0 - NAME_COVER_WEIGHT * (1.0 - name_cover(said, path))
