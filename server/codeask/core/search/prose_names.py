"""Capitalised words of a prose question that name a definition in the folder.

"Job interface and coroutine lifecycle management", "Content protocol for encoding …", "Mutex
and Semaphore for coroutine synchronization", "Transaction block and database session
management": the capitalised word is the name of the thing asked about, though as one
capitalised word in prose it is not read as a symbol (`name_match.EMBEDDED_SYMBOL` takes
camelCase only: a capitalised word may just be English, opening the sentence). Two places
make it a name, each checked against the folder's definitions.
"""

from __future__ import annotations

import re

from codeask.core.storage.protocol import IndexReader

#: The kinds of definition a question names in English, after the name ("the Job interface").
KIND_NAMED = re.compile(
    r"\b([A-Z][A-Za-z0-9_]*) (?:interface|protocol|class|trait|struct|enum|module|type|"
    r"typeclass|object|behaviour|behavior|record)\b"
)
#: A question's first word, capitalised and not an acronym (`Mutex`, not `HTTP` or `How`'s
#: kin: those are checked against the folder's definitions).
LEAD_NAME = re.compile(r"\s*([A-Z][a-z][A-Za-z0-9_]*)\b")
#: A lead word defined in more places than this is a common word there (`Rails`, `Base`).
MAX_LEAD_DEFINITIONS = 3


def named_definitions(question: str, storage: IndexReader) -> set[str]:
    """The capitalised words of `question` that `kind_named` or `lead_named` read as names:
    their definitions are lifted as a prose question's camelCase names are."""
    return kind_named(question, storage) | lead_named(question, storage)


def kind_named(question: str, storage: IndexReader) -> set[str]:
    """**Kind-named symbols**: capitalised words said before a definition kind that the folder
    defines. eval-search dev NDCG@10 .8964 → .8981 (3 questions up: aeson, vapor,
    kotlinx-coroutines; 1 down: http4s "Media type", scala −.003; every other language .000)."""
    return {name for name in KIND_NAMED.findall(question) if storage.symbol_ids(name)}


def lead_named(question: str, storage: IndexReader) -> set[str]:
    """**Lead name**: the question's first word when it is capitalised and the folder defines
    it in 1 to MAX_LEAD_DEFINITIONS places (a question is written subject first). eval-search
    dev .9005 → .9021 (5 questions up: kotlinx-coroutines, http4s, exposed ×2, vapor; 1 down:
    vapor "Sessions and session driver"; kotlin +.020, scala +.009, swift +.004, the rest
    .000); up to 5 places the same, up to 20 .9016 (rust −.009)."""
    match = LEAD_NAME.match(question)
    if match is None:
        return set()
    name = match.group(1)
    return {name} if 0 < len(storage.symbol_ids(name)) <= MAX_LEAD_DEFINITIONS else set()
