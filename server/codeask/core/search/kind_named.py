"""A capitalised word a question calls a kind of definition names that definition.

"Job interface and coroutine lifecycle management", "Content protocol for encoding …", "how
Key type is used …": the word before `interface`, `protocol`, `class`, `type`, … is the name of
the thing asked about, though as one capitalised word in prose it is not read as a symbol
(`name_match.EMBEDDED_SYMBOL` takes camelCase only: a capitalised word may just open the
sentence). Said before a definition kind, and defined in the folder, it is one.
"""

from __future__ import annotations

import re

from codeask.core.storage.protocol import IndexReader

#: The kinds of definition a question names in English, after the name ("the Job interface").
KIND_NAMED = re.compile(
    r"\b([A-Z][A-Za-z0-9_]*) (?:interface|protocol|class|trait|struct|enum|module|type|"
    r"typeclass|object|behaviour|behavior|record)\b"
)


def kind_named_symbols(question: str, storage: IndexReader) -> set[str]:
    """**Kind-named symbols**: capitalised words said before a definition kind that the
    folder defines; their definitions are lifted as a prose question's camelCase names are.
    eval-search dev NDCG@10 +.0017 (3 questions up: aeson, vapor, kotlinx-coroutines; 1 down:
    http4s "Media type", scala −.003; every other language .000)."""
    return {name for name in KIND_NAMED.findall(question) if storage.symbol_ids(name)}
