"""Where the packaged model tier ranks a pasted report: only where measurement says it helps.

The packaged MiniLM is an English sentence model. Added to the first pass (lexical + static)
on pasted reports, it helped in some languages and hurt in others (`python -m
benchmarks.reports_eval`, per language, on the multi-language bug-fix reports and the Python
issues; benchmarks/README.md): a language is in MODEL_LANGUAGES only when the model tier's R@5
and MRR were both at or above the first pass's there. So with `retrieve.model_tier_for = auto`
and the packaged model, a report is ranked by it only when the folder's code is mostly in such
a language. The folder's language is what its indexed files say (the language holding the most
code files), never its name. A model the user chose answers wherever `model_tier_for` says;
`python -m benchmarks.reports_eval --set embed.model=...` (or `codeask eval` on their own
history) measures whether it helps on their code.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Iterable

from codeask.core.source.languages import language_for_path
from codeask.core.storage.protocol import IndexReader

#: Languages whose reports the packaged model ranked at least as well as the first pass, on R@5
#: and MRR (benchmarks/README.md; each measured, none assumed): cpp, go, typescript on the
#: bug-fix reports; python on the 74 pasted issues (R@5 .838 → .909, round 6; 13 of them
#: re-embedded on 2026-11-29: R@5 1.0 → .923, MRR .644 → .705, kept so that the Python set does
#: not lose). Measured and left out: c (R@5 up, MRR down), java and javascript (both down),
#: rust (R@5 down, MRR up). Never measured (ruby, php, tsx, ...): the first pass, the safe side.
MODEL_LANGUAGES = frozenset({"cpp", "go", "python", "typescript"})
#: The same rule for the model tier on demand (a folder past `embed.model_full_pass_chunks`:
#: only the first pass's best `embed.model_candidates` are ranked by it), measured on its own
#: (`benchmarks.reports_eval --on-demand-only`, tier `on_demand`, 25 candidates): cpp R@5 .800
#: = .800, MRR .686 → .712. Left out: go (R@5 .963 → 1.0, MRR .901 → .895), typescript (MRR
#: .756 → .722), python (R@5 .875 → .838; 50 candidates .868), rust (R@5 .925 → .900), c, java
#: and javascript (MRR down). A folder that large answers reports with its first pass there.
ON_DEMAND_LANGUAGES = frozenset({"cpp"})
#: Each storage's language at the generation it was read (gone with the storage).
_seen: weakref.WeakKeyDictionary[IndexReader, tuple[int, str]] = weakref.WeakKeyDictionary()


def main_language(paths: Iterable[str]) -> str:
    """The language most of the code files are in ('' when none is code); ties go to the
    name first in alphabetical order, so the answer never depends on the order of paths. A
    `.h` header is C++ in a folder with more C++ sources than C ones (fmt's and yaml-cpp's
    headers outnumber their `.cpp` files; hiredis' one Qt example is not a C++ project),
    else C. Paths are counted by suffix first (language_for_path once per suffix: 78k
    kernel paths took 398 ms one by one)."""
    kinds: Counter[str] = Counter()
    for path in paths:
        name = path.rpartition("/")[2].lower()
        dot = name.rfind(".")
        kinds[name[dot:] if dot > 0 else name] += 1
    counts: Counter[str] = Counter()
    for kind, count in kinds.items():
        spec = language_for_path("x" + kind if kind.startswith(".") else kind)
        if spec is not None:
            counts["header" if kind == ".h" else spec.name] += count
    headers = counts.pop("header", 0)
    if headers:
        counts["cpp" if counts["cpp"] > counts["c"] else "c"] += headers
    if not counts:
        return ""
    return min(counts.items(), key=lambda item: (-item[1], item[0]))[0]


def folder_language(storage: IndexReader) -> str:
    """`main_language` of a folder's index, computed once per generation of its storage (a
    search must not walk 100k paths for every query)."""
    generation = storage.generation
    known = _seen.get(storage)
    if known is not None and known[0] == generation:
        return known[1]
    language = main_language(storage.paths())
    _seen[storage] = (generation, language)
    return language


def model_helps(language: str, *, on_demand: bool = False) -> bool:
    """Whether the packaged model tier ranks a report on code mostly in `language` (`on_demand`:
    a folder whose model tier is filled on demand)."""
    return language in (ON_DEMAND_LANGUAGES if on_demand else MODEL_LANGUAGES)
