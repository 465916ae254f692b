"""Adjust step `lift_named`: a typed question's names (core/search/name_match.py).

Files named by its words, and the definitions of the symbol it is (or of camelCase names
inside it), are lifted by a share of the best candidate's score so that they win ties with
chunks that merely mention them (`retrieve.file_name_weight`, `retrieve.definition_weight`).
A pasted report is mostly context: its words name too much, so reports skip this step.

Measured (benchmarks/README.md): eval-search .791 → .838 (Round 9, df7e6bd); without the
file-name lift .8318 vs .8643 (Round 12 ablations); re-exports as definitions Rust .837 → .896
(Round 14).
"""

from __future__ import annotations

from codeask.core.records import HISTORY_KINDS, Chunk
from codeask.core.search.name_match import (
    defines,
    file_stems_for,
    name_match_share,
    queried_symbols,
    question_words,
    reexports,
)
from codeask.core.search.steps.state import Candidates, Ranking, Searchable

#: A file name matching fewer of a question's words than this share is a coincidence.
MIN_NAME_SHARE = 0.1
#: camelCase names inside prose may be incidental: half a symbol question's lift.
EMBEDDED_SYMBOL_SHARE = 0.5
#: A definition in a file named for its symbol (`response.rb` defines `Response`).
NAMED_FILE_LIFT = 1.5


def lift_named(ranking: Ranking) -> None:
    """A typed question's named files and defined symbols, lifted (not for reports)."""
    found, signals = ranking.found, ranking.signals
    if not ranking.lexical or signals.report or not found.fused:
        return
    settings = ranking.folder.settings.retrieve
    top = max(found.fused.values())
    names, whole = queried_symbols(signals.text)
    if settings.file_name_weight > 0 and not whole:
        words = question_words(signals.text)
        for path, chunks in found.by_path.items():
            share = name_match_share(words, path)
            if share >= MIN_NAME_SHARE:
                bonus = top * settings.file_name_weight * share
                for chunk in chunks:
                    if chunk.kind not in HISTORY_KINDS:
                        found.fused[chunk.id] += bonus
    if settings.definition_weight > 0 and names:
        unit = top * settings.definition_weight * (1.0 if whole else EMBEDDED_SYMBOL_SHARE)
        lift_definitions(ranking.folder, found, names, unit)


def lift_definitions(folder: Searchable, found: Candidates, names: set[str], unit: float) -> None:
    """Candidates defining one of `names` get `unit` (1.5× in a file named for the symbol);
    a file named for it (`response.rb` for `Response`) joins the candidates with the chunks
    that define it."""
    storage = folder.storage
    for name in names:
        named_files = _join_named_files(folder, found, name)
        lifted = False
        for path, chunks in found.by_path.items():
            lift = unit * (NAMED_FILE_LIFT if path in named_files else 1.0)
            for chunk in chunks:
                if chunk.kind not in HISTORY_KINDS and _defines(chunk, name):
                    lifted = True
                    found.fused[chunk.id] += lift
                    if "definition" not in found.found_by[chunk.id]:
                        found.found_by[chunk.id].append("definition")
        if not lifted and not storage.symbol_ids(name):
            _lift_reexports(found, name, unit)


def _join_named_files(folder: Searchable, found: Candidates, name: str) -> set[str]:
    """The files named for `name`; their chunks defining it join the candidates (score 0)."""
    storage = folder.storage
    joined: list[int] = []
    named_files = {p for stem in file_stems_for(name) for p in storage.paths_named(stem)}
    for path in named_files:
        record = storage.file(path)
        ids = [i for i in (record.chunk_ids if record else []) if i not in found.fused]
        read = found.chunks(storage, ids)
        for chunk_id in ids:
            chunk = read.get(chunk_id)
            if chunk is not None and _defines(chunk, name):
                found.fused[chunk_id] = 0.0
                joined.append(chunk_id)
    found.group(storage, joined)
    return named_files


def _lift_reexports(found: Candidates, name: str, unit: float) -> None:
    """A symbol nothing in the tree defines (another crate's, a package's): the candidates
    that make it public here (`pub use`, `export { }`) stand where its definition would."""
    for chunks in found.by_path.values():
        for chunk in chunks:
            if chunk.kind not in HISTORY_KINDS and reexports(chunk.text, name):
                found.fused[chunk.id] += unit
                if "definition" not in found.found_by[chunk.id]:
                    found.found_by[chunk.id].append("definition")


def _defines(chunk: Chunk, name: str) -> bool:
    return chunk.symbol == name or defines(chunk.text, name)
