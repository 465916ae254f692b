"""Names in a typed question: the files whose names say its words, the symbols it names.

A short question often names the file that answers it in other words ("URL path mapping" →
`urlmap.rb`, "deferred body proxy" → `body_proxy.rb`, "path management" → `paths.rb`) or is a
symbol itself (`Rack::Response`, `Request`). Chunk text rarely repeats a file's own name, so
BM25 and the vectors miss what a reader sees at once in the tree. These signals are read from
the question alone (no index), in every language: the matching is on words, not on grammar.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from codeask.core.storage.lexical.index import STOPWORDS, identifier_parts

#: Words of a question (letters, digits, underscores; a word shorter than 3 says too little).
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MIN_WORD = 3
#: A shared prefix this long matches morphological variants: `dependency` ~ `dependencies`,
#: `url` ~ `urlmap`, `init` ~ `initializable`.
MIN_PREFIX = 3
#: Two words sharing this many first letters, three quarters of the shorter, share a stem.
SHARED_STEM = 5
#: A word that is a file's whole name (`generators.rb`) counts this much; one that names its
#: folder or a part of its name (every file in `generators/`, `request_id.go`) counts 1.
WHOLE_STEM = 1.5
#: A question that is one symbol: `Foo::Bar`, `pkg.Name`, `a->b`, `_private`, `snake_case`,
#: `camelCase`, `Capitalized`. Plain lower-case words ("session") are prose.
SYMBOL_QUERY = re.compile(
    r"^(?:[A-Za-z_][A-Za-z0-9_]*(?:(?:::|\\|->|\.|#)[A-Za-z_][A-Za-z0-9_]*)+"
    r"|_[A-Za-z0-9_]*"
    r"|[A-Za-z][A-Za-z0-9]*[A-Z_][A-Za-z0-9_]*"
    r"|[A-Z][A-Za-z0-9]*)$"
)
#: camelCase / PascalCase identifiers inside prose (not plain words, not acronyms).
EMBEDDED_SYMBOL = re.compile(
    r"\b(?:[A-Z][a-z][a-zA-Z0-9]*[A-Z][a-zA-Z0-9]*|[a-z][a-zA-Z0-9]*[A-Z][a-zA-Z0-9]+)\b"
)
SEPARATORS = ("::", "\\", "->", ".", "#")
#: Words that open a definition in the languages codeask chunks (case-sensitive: `Class` or
#: `Module` in prose or calls are not definitions).
DEFINITION_WORDS = (
    "abstract class|data class|sealed class|case class|class|module|defmodule|def|defp|"
    "interface|struct|enum|trait|type|typealias|func|function|object|fn|fun|package|"
    "namespace|protocol|record|typedef|union|newtype|extension|actor|const|let|var|val"
)
SQL_DEFINITION = r"create\s+(?:or\s+replace\s+)?(?:table|view|procedure|function)"
#: A qualified prefix before the name: `Rails::`, `pkg.`, `Foo\\`.
QUALIFIER = r"(?:[A-Za-z_][A-Za-z0-9_]*(?:\.|::|\\))*"
CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def question_words(question: str) -> frozenset[str]:
    """The question's words worth comparing with file names (lower-cased, no stop words)."""
    return frozenset(
        word
        for word in (w.lower() for w in WORD.findall(question))
        if len(word) >= MIN_WORD and word not in STOPWORDS
    )


@functools.lru_cache(maxsize=65536)
def path_words(path: str) -> frozenset[str]:
    """A file's name words: its stem whole and split, and its folder's name, split."""
    pure = PurePosixPath(path)
    stem = pure.stem
    words = {stem.lower(), *identifier_parts(stem)}
    folder = pure.parent.name
    if folder:
        words.update(identifier_parts(folder))
    return frozenset(w for w in words if w)


def name_match_share(words: frozenset[str], path: str) -> float:
    """The share of the question's words that a file's name words match (exactly or by a
    common prefix of MIN_PREFIX letters or more), a whole-name match counting WHOLE_STEM."""
    if not words:
        return 0.0
    names = path_words(path)
    if not name_heads(names) & word_heads(words):
        return 0.0  # no name starts like any word: most files, rejected in one set operation
    whole_name = whole_file_name(path)
    matched = sum(
        WHOLE_STEM if _names_whole(word, whole_name) else 1.0
        for word in words
        if _matches_any(word, names)
    )
    return matched / len(words)


def names_a_file(words: frozenset[str], paths: Iterable[str]) -> bool:
    """Some word of the question is one of `paths`' whole names (`Flow` → `Flow.kt`,
    "lockfile" → `lockfile.lua`): the question says which file it is about."""
    return any(
        _names_whole(word, name)
        for name in {whole_file_name(p) for p in paths}
        for word in words
        if word[:MIN_PREFIX] == name[:MIN_PREFIX]
    )


@functools.lru_cache(maxsize=65536)
def whole_file_name(path: str) -> str:
    """A file's name before its first dot, lower-cased (`Builders.common.kt` → builders);
    cached: it is asked for every candidate file of every question."""
    return PurePosixPath(path).name.split(".")[0].lower()


@functools.lru_cache(maxsize=256)
def word_heads(words: frozenset[str]) -> frozenset[str]:
    """The question's words' first MIN_PREFIX letters (cached per question: a frozenset keeps
    its hash)."""
    return frozenset(word[:MIN_PREFIX] for word in words)


@functools.lru_cache(maxsize=65536)
def name_heads(names: frozenset[str]) -> frozenset[str]:
    """The names' first MIN_PREFIX letters: any match (exact or by prefix) shares them."""
    return frozenset(name[:MIN_PREFIX] for name in names)


def _names_whole(word: str, name: str) -> bool:
    """The word is the file's whole name (before its first dot), give or take an ending
    (`generators.rb`, `paths.rb` for "path", `pyenv.plugin.bash`, `Builders.common.kt`),
    not a part of it (`request_id.go` for "request")."""
    return abs(len(name) - len(word)) <= 2 and _matches_any(word, frozenset((name,)))


def _shared_letters(a: str, b: str) -> int:
    """How many first letters the two words share."""
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


def matches_any(word: str, names: frozenset[str]) -> bool:
    """The word matches one of `names` as a file-name word: exactly, by a common prefix of
    MIN_PREFIX letters or more, one last letter apart, or sharing a stem."""
    return _matches_any(word, names)


def _matches_any(word: str, names: frozenset[str]) -> bool:
    if word in names:
        return True
    head = word[:MIN_PREFIX]
    for name in names:
        if name[:MIN_PREFIX] != head:
            continue  # each way below shares the first MIN_PREFIX letters at least
        shorter, longer = (word, name) if len(word) <= len(name) else (name, word)
        if len(shorter) >= MIN_PREFIX and longer.startswith(shorter):
            return True
        if len(shorter) > MIN_PREFIX + 1 and longer.startswith(shorter[:-1]):
            return True  # one last letter apart: `utils` ~ `utility`, `dependency` ~ `dependencies`
        common = _shared_letters(word, name)
        if common >= SHARED_STEM and common * 4 >= len(shorter) * 3:
            return True  # one stem, two endings: `validation` ~ `validator`, `railties` ~ `railtie`
    return False


def is_symbol_query(question: str) -> bool:
    """The whole question is one (possibly qualified) symbol name."""
    return SYMBOL_QUERY.match(question.strip()) is not None


def queried_symbols(question: str) -> tuple[set[str], bool]:
    """(names, whole): the symbol a symbol-only question names (its last part, and the
    qualified form), or the camelCase names inside prose; `whole` says which."""
    text = question.strip()
    if is_symbol_query(text):
        last = text
        for separator in SEPARATORS:
            if separator in last:
                last = last.rsplit(separator, 1)[-1]
        return {last}, True
    return set(EMBEDDED_SYMBOL.findall(question)), False


#: What stands before a defined name on its line: a definition word, then qualifiers.
DEFINED_AFTER = re.compile(
    rf"(?:^|\s)(?:(?:{DEFINITION_WORDS})|(?i:{SQL_DEFINITION}))\s+{QUALIFIER}$", re.MULTILINE
)
NAME_CHAR = re.compile(r"[A-Za-z0-9_]")


def defines(text: str, name: str) -> bool:
    """`text` holds a definition of `name` (`class Application < Engine`, `pub struct Foo`,
    `defmodule Phoenix.Router`, `CREATE TABLE users`), in any language codeask reads:
    tree-sitter names a split class's header chunk nothing, so the text is read instead.
    Each occurrence's line start is checked (a scan of the whole text per candidate cost
    ~0.2 ms; most candidates never contain the name)."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        whole = not (
            (start and NAME_CHAR.match(text[start - 1]) and text[start - 1] not in ".:\\")
            or (end < len(text) and NAME_CHAR.match(text[end]))
        )
        if whole:
            line_start = text.rfind("\n", 0, start) + 1
            if DEFINED_AFTER.search(text, line_start, start):
                return True
        start = text.find(name, end)
    return False


#: A statement that exposes names of another module as this one's: Rust's `pub use a::{B, C};`,
#: JS/TS `export { B } from './b'`, `export type { B }` (Rust's attributes before it skipped).
REEXPORT = re.compile(
    r"\s*(?:#\[[^\n]*\]\s*)*(?:pub(?:\([^)\n]*\))?\s+use\s|export\s+(?:type\s*)?\{)"
)


def reexports(text: str, name: str) -> bool:
    """`text` makes `name` public without defining it (`pub use axum_core::extract::FromRequest`):
    where a tree exposes a symbol defined outside it (another crate, a package), the place a
    reader is sent to when nothing in the tree defines it."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        whole = not (
            (start and NAME_CHAR.match(text[start - 1]))
            or (end < len(text) and NAME_CHAR.match(text[end]))
        )
        if whole:
            statement = max(text.rfind(";", 0, start), text.rfind("\n\n", 0, start))
            if REEXPORT.match(text, statement + 1):
                return True
        start = text.find(name, end)
    return False


def file_stems_for(name: str) -> list[str]:
    """The stems a file named for `name` may have: `BodyProxy` → BodyProxy, bodyproxy,
    body_proxy, body-proxy (what `storage.paths_named` is asked)."""
    snake = CAMEL_BOUNDARY.sub("_", name).lower()
    return list(dict.fromkeys([name, name.lower(), snake, snake.replace("_", "-")]))
