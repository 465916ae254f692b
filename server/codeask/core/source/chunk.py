"""Files → chunks: tree-sitter definitions, module gaps, markdown/rst sections, line windows.

One generic algorithm reads the node-type table in `languages.py`; no language has its own
code path. A single compiled query per language finds every definition and every callee in
one pass (in C), and Python only walks the definitions, so a 100k-line repository chunks in
seconds. Lines are split once per file; all positions are 0-based rows until a `Chunk` is
built (1-based, inclusive). `chunk_file` never raises: anything unexpected degrades to line
windows with a reason the caller logs.
"""

from __future__ import annotations

import bisect
import inspect
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from tree_sitter import Language, Node, Parser, Query, QueryCursor, QueryError, Tree
from tree_sitter_language_pack import get_language

from codeask.config import ChunkSettings
from codeask.core.records import ELISION, Chunk
from codeask.core.source import parse_bound
from codeask.core.source.languages import (
    LanguageSpec,
    language_for_path,
    language_name,
    script_language,
)
from codeask.core.source.secrets import redact_text

MAX_CALLS = 50
"""Callee names kept per chunk."""
MAX_DOCSTRING_CHARS = 2000
"""Docstrings are for ranking and display; a license header is not a docstring."""
MAX_NAME_CHARS = 200

#: A run of rows, 0-based and inclusive; a chunk is one or more runs (a class minus its methods).
Run = tuple[int, int]

_NAME_FIELDS = ("name", "declarator", "field", "method", "type", "property")
_SCOPE_FIELDS = ("scope", "table")
_WHOLE_NAME_TYPES = frozenset({"destructor_name", "operator_name", "operator_cast"})
_NAME_LEAF_TYPES = frozenset({"name", "constant", "word"})
_CALLEE_FIELDS = (
    "name",
    "field",
    "property",
    "attribute",
    "method",
    "macro",
    "function",
    "suffix",
    "constructor",
    "type",
    "operand",
    "value",
)
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*[!?]?$")
_STRING_QUOTES = re.compile(r"^[rRbBuUfF]{0,2}(\"\"\"|'''|\"|')")
#: Haddock's `-- |` and `-- ^` mark a doc comment; the marker is not part of the text.
_COMMENT_LEAD = re.compile(r"^\s*(?:/\*[*!]?|//[/!]?|\*(?!/)|#+|--+(?:\[=*\[|\s*[|^])?)\s?")
_COMMENT_TAIL = re.compile(r"\s*(?:\*/|\]=*\])\s*$")


@dataclass
class ChunkResult:
    """The chunks of one file and, when the grammar was not used cleanly, why."""

    language: str
    chunks: list[Chunk]
    """Sorted by start_line; `id` left 0 for the store to assign."""
    fallback_reason: str = ""
    """'' for a clean parse; otherwise why windows were used or which errors were seen."""


@dataclass(frozen=True)
class _Sizes:
    """ChunkSettings made safe: a bad value must not loop forever or raise."""

    max_lines: int
    window: int
    overlap: int


@dataclass
class _Ctx:
    """Everything the emitters share for one file."""

    path: str
    language: str
    lines: list[str]
    sizes: _Sizes
    call_rows: list[int] = field(default_factory=list)
    call_names: list[str] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)


@dataclass
class _Def:
    """A definition found by the query; details are filled only for the ones that chunk."""

    node: Node
    is_class: bool
    hidden: bool = False
    start: int = 0
    end: int = 0
    name: str = ""
    scope: str = ""
    doc: str = ""
    children: list[_Def] = field(default_factory=list)


# --------------------------------------------------------------------------- public entry


def chunk_file(rel_path: str, text: str, settings: ChunkSettings) -> ChunkResult:
    """Cut one file into chunks; never raises (failures become line windows and a reason).

    Secret values are replaced by placeholders first, on the whole text (a private key split
    across chunks is still seen whole, line numbers do not move), so no chunk, symbol, docstring,
    embedding or log line built from the result can carry one.
    """
    spec = language_for_path(rel_path) or script_language(rel_path, text)
    language = spec.name if spec is not None else language_name(rel_path)
    text = redact_text(text)
    try:
        return _chunk(rel_path, language, spec, text, _sizes(settings))
    except Exception as exc:  # the indexer must survive any file
        reason = f"chunker failed ({type(exc).__name__}: {exc}); used line windows"
        try:
            ctx = _Ctx(rel_path, language, _split_lines(text), _sizes(settings))
            _emit_windows(ctx)
            return ChunkResult(language, ctx.chunks, reason)
        except Exception:
            return ChunkResult(language, [], reason)


def _chunk(
    rel_path: str, language: str, spec: LanguageSpec | None, text: str, sizes: _Sizes
) -> ChunkResult:
    """Dispatch on the kind of file: grammar, markdown, rst or plain text."""
    if not text or text.isspace():  # not `strip()`: that copies the whole file
        return ChunkResult(language, [])
    ctx = _Ctx(rel_path, language, _split_lines(text), sizes)
    reason = ""
    if spec is not None:
        reason = _chunk_code(ctx, spec, text)
    elif language == "markdown":
        _emit_sections(ctx, _markdown_headings(ctx.lines))
    elif language == "rst":
        _emit_sections(ctx, _rst_headings(ctx.lines))
    else:
        _emit_windows(ctx)
    ctx.chunks.sort(key=lambda c: (c.start_line, c.part, c.end_line))
    return ChunkResult(language, ctx.chunks, reason)


def _sizes(settings: ChunkSettings) -> _Sizes:
    """Clamp the settings into a usable range."""
    window = max(1, int(settings.window_lines))
    overlap = min(max(0, int(settings.window_overlap)), window - 1)
    return _Sizes(max(1, int(settings.max_lines)), window, overlap)


def _split_lines(text: str) -> list[str]:
    """Split once on '\\n' (as tree-sitter counts rows), dropping a CR of CRLF endings."""
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    return lines


# --------------------------------------------------------------------------- emitting chunks


def _trim(lines: list[str], run: Run) -> Run | None:
    """A run without its leading and trailing blank lines, None if nothing is left."""
    a, b = run
    while a <= b and (not lines[a] or lines[a].isspace()):  # `strip()` would copy each line
        a += 1
    while b >= a and (not lines[b] or lines[b].isspace()):
        b -= 1
    return (a, b) if a <= b else None


def _clean(lines: list[str], runs: Iterable[Run]) -> list[Run]:
    """Trim every run and drop the blank ones."""
    return [r for r in (_trim(lines, run) for run in runs) if r is not None]


def _runs_of(rows: list[int]) -> list[Run]:
    """Group sorted rows into runs of consecutive rows."""
    runs: list[Run] = []
    for row in rows:
        if runs and runs[-1][1] == row - 1:
            runs[-1] = (runs[-1][0], row)
        else:
            runs.append((row, row))
    return runs


def _windows(runs: list[Run], size: int, overlap: int) -> list[list[Run]]:
    """Overlapping windows of `size` rows over the rows of `runs`."""
    out: list[list[Run]] = []
    if len(runs) == 1:  # one run (a long function): its windows without a list of its rows
        a, last = runs[0]
        while True:
            out.append([(a, min(a + size - 1, last))])
            if a + size - 1 >= last:
                return out
            a += size - overlap
    rows = [row for a, b in runs for row in range(a, b + 1)]
    start, step = 0, size - overlap
    while True:
        out.append(_runs_of(rows[start : start + size]))
        if start + size >= len(rows):
            return out
        start += step


def _text(lines: list[str], runs: list[Run]) -> str:
    """Source lines of the runs; disjoint runs are joined by a '...' line."""
    if len(runs) == 1:
        a, b = runs[0]
        return "\n".join(lines[a : b + 1])
    return ELISION.join("\n".join(lines[a : b + 1]) for a, b in runs)


def _calls_in(ctx: _Ctx, runs: list[Run]) -> list[str]:
    """Callee names whose call starts inside the runs, first-call order, deduplicated (the
    first MAX_CALLS of them)."""
    rows, names = ctx.call_rows, ctx.call_names
    if not rows:
        return []
    seen: dict[str, None] = {}
    for a, b in runs:
        lo, hi = bisect.bisect_left(rows, a), bisect.bisect_right(rows, b)
        seen.update(dict.fromkeys(names[lo:hi]))
    return list(seen)[:MAX_CALLS]


def _emit(
    ctx: _Ctx,
    runs: list[Run],
    kind: str,
    symbol: str = "",
    parent: str = "",
    doc: str = "",
    limit: int | None = None,
) -> None:
    """Add the chunk of `runs`, split into numbered windows when longer than `limit`."""
    runs = _clean(ctx.lines, runs)
    if not runs:
        return
    limit = ctx.sizes.max_lines if limit is None else limit
    pieces = [runs]
    rows = runs[0][1] - runs[0][0] + 1 if len(runs) == 1 else sum(b - a + 1 for a, b in runs)
    if rows > limit:
        pieces = [_clean(ctx.lines, w) for w in _windows(runs, ctx.sizes.window, ctx.sizes.overlap)]
        pieces = [p for p in pieces if p]
    for i, piece in enumerate(pieces):
        ctx.chunks.append(
            Chunk(
                path=ctx.path,
                language=ctx.language,
                kind=kind,
                start_line=piece[0][0] + 1,
                end_line=piece[-1][1] + 1,
                text=_text(ctx.lines, piece),
                symbol=symbol,
                parent=parent,
                docstring=doc,
                calls=_calls_in(ctx, piece),
                part=i + 1 if len(pieces) > 1 else 0,
            )
        )


def _emit_windows(ctx: _Ctx, kind: str = "window") -> None:
    """The whole file as line windows (no grammar, or the grammar failed)."""
    _emit(ctx, [(0, len(ctx.lines) - 1)], kind, limit=ctx.sizes.window)


def _gaps(span: Run, taken: list[Run]) -> list[Run]:
    """The rows of `span` not inside any of the sorted `taken` runs."""
    out: list[Run] = []
    cursor = span[0]
    for a, b in taken:
        if a > cursor:
            out.append((cursor, min(a - 1, span[1])))
        cursor = max(cursor, b + 1)
    if cursor <= span[1]:
        out.append((cursor, span[1]))
    return out


# --------------------------------------------------------------------------- code files


@cache
def _language(grammar: str) -> Language:
    """Grammars are loaded once per process."""
    return get_language(grammar)  # type: ignore[arg-type]


_local = threading.local()


def _parser(spec: LanguageSpec) -> Parser:
    """One parser per language and thread (parsers are not thread-safe)."""
    cache: dict[str, Parser] = _local.__dict__.setdefault("parsers", {})
    parser = cache.get(spec.name)
    if parser is None:
        parser = cache[spec.name] = Parser(_language(spec.grammar))
    return parser


@cache
def _query(spec: LanguageSpec) -> Query | None:
    """The language's one query: @function, @class and @call captures."""
    lang = _language(spec.grammar)
    patterns = _patterns(spec, lang)
    try:
        return Query(lang, "\n".join(patterns))
    except QueryError:
        # A pattern naming a field or node this grammar version lacks: keep the rest.
        good = [p for p in patterns if _compiles(lang, p)]
        return Query(lang, "\n".join(good)) if good else None


def _compiles(lang: Language, pattern: str) -> bool:
    """Whether one query pattern is valid for this grammar."""
    try:
        Query(lang, pattern)
    except QueryError:
        return False
    return True


def _patterns(spec: LanguageSpec, lang: Language) -> list[str]:
    """Query patterns generated from the spec's node-type tables."""
    patterns: list[str] = []
    for capture, types, extra in (
        ("function", spec.function_types, spec.function_patterns),
        ("class", spec.class_types, spec.class_patterns),
    ):
        known = [t for t in types if lang.id_for_node_kind(t, True)]
        if known:
            patterns.append("[" + " ".join(f"({t})" for t in known) + f"] @{capture}")
        patterns.extend(f"{p} @{capture}" for p in extra)
    for node_type, fld in spec.call_types:
        patterns.append(f"({node_type} {fld}: (_) @call)" if fld else f"({node_type} . (_) @call)")
    patterns.extend(spec.doc_patterns)
    patterns.extend(spec.call_patterns)
    return patterns


def _chunk_code(ctx: _Ctx, spec: LanguageSpec, text: str) -> str:
    """Definitions as chunks, the rest as module chunks; returns the fallback reason.

    Bounded per file (parse_bound): a parse or definitions walk over its CPU budget, or a
    tree too deep to query, leaves the file as line windows with the reason."""
    budget = parse_bound.Budget()
    data = text.encode("utf-8", "replace")
    try:
        tree = parse_bound.parse(_parser(spec), data, budget)
        query = _query(spec)
    except parse_bound.OverBudget as exc:
        return _windows_because(ctx, str(exc))
    except Exception as exc:
        return _windows_because(ctx, f"parser failed ({type(exc).__name__}: {exc})")
    _local.source = data
    try:
        return _chunk_tree(ctx, spec, tree, query, budget)
    finally:
        _local.source = None


def _chunk_tree(
    ctx: _Ctx, spec: LanguageSpec, tree: Tree, query: Query | None, budget: parse_bound.Budget
) -> str:
    """`_chunk_code` once the file is parsed (its bytes in `_local.source`)."""
    root = tree.root_node
    deep_row = parse_bound.deeper_than(root)
    if deep_row is not None:
        where = f"nested more than {parse_bound.MAX_DEPTH} levels deep (at line {deep_row + 1})"
        return _windows_because(ctx, where)
    captures = QueryCursor(query).captures(root) if query is not None else {}
    marks = _Marks(captures.get("name", []), captures.get("doc", []), captures.get("head_doc", []))
    ctx.call_rows, ctx.call_names = _calls(captures.get("call", []), marks.names)
    try:
        defs = _definitions(
            spec, captures.get("function", []), captures.get("class", []), marks, budget
        )
    except parse_bound.OverBudget as exc:
        return _windows_because(ctx, str(exc))
    reason = ""
    if root.has_error:
        where = f"syntax errors (first at line {_first_error_row(root) + 1})"
        if not defs:
            return _windows_because(ctx, where)
        reason = f"{where}; kept the definitions that parsed, the rest as module chunks"
    spans = _emit_defs(ctx, defs, "")
    for gap in _gaps((0, len(ctx.lines) - 1), spans):
        _emit(ctx, [gap], "module")
    return reason


def _windows_because(ctx: _Ctx, why: str) -> str:
    """The whole file as line windows; returns the reason to log."""
    ctx.chunks.clear()
    _emit_windows(ctx)
    return f"{why}; used line windows"


def _first_error_row(root: Node) -> int:
    """Row of the first ERROR or MISSING node, following `has_error` down the tree."""
    node = root
    while True:
        for child in node.children:
            if child.is_error or child.is_missing:
                return child.start_point.row
            if child.has_error:
                node = child
                break
        else:
            return node.start_point.row


def _definitions(
    spec: LanguageSpec,
    functions: list[Node],
    classes: list[Node],
    marks: _Marks,
    budget: parse_bound.Budget,
) -> list[_Def]:
    """Nest the captured definitions; those inside a function stay in its chunk (hidden).
    OverBudget when the walk spends the file's budget (a node's parent costs its depth)."""
    # (start byte, end byte, node, is_class): a node's bytes are read once, not at every use
    found = [(n.start_byte, n.end_byte, n, False) for n in functions]
    found += [(n.start_byte, n.end_byte, n, True) for n in classes]
    found.sort(key=lambda item: (item[0], -item[1]))
    starts = [item[0] for item in found]
    roots: list[_Def] = []
    stack: list[tuple[int, _Def]] = []  # (end byte, definition)
    seen: set[tuple[int, int]] = set()
    for i, (start, end, node, is_class) in enumerate(found):
        if (start, end) in seen:
            continue
        seen.add((start, end))
        while stack and stack[-1][0] <= start:
            stack.pop()
        outer = stack[-1][1] if stack else None
        d = _Def(node, is_class, hidden=outer is not None and (outer.hidden or not outer.is_class))
        if not d.hidden:
            budget.check("finding definitions")
            _describe(spec, d, marks, _own_end(starts, i, end))
            (outer.children if outer is not None else roots).append(d)
        stack.append((end, d))
    return _merge_clauses(roots) if spec.merge_clauses else roots


def _own_end(starts: list[int], i: int, end: int) -> int:
    """End byte of definition `i`'s own head: where the next definition inside it starts (a
    nested definition's @name or @doc is not this one's), else its end (`end`). `starts`: the
    definitions' start bytes, sorted."""
    later = bisect.bisect_right(starts, starts[i], i + 1)
    return min(end, starts[later]) if later < len(starts) else end


@dataclass
class _Marks:
    """What the query captured besides definitions, for grammars whose fields do not hold it
    (Elixir's `def` is a call, its doc an attribute): names (@name), the docstring of the
    definition below (@doc) and a definition's own docstring inside it (@head_doc)."""

    names: list[Node]
    docs: list[Node]
    head_docs: list[Node]

    def __post_init__(self) -> None:
        self.names, self._name_starts = _by_start(self.names)
        self.docs, self._doc_starts = _by_start(self.docs)
        self.head_docs, self._head_doc_starts = _by_start(self.head_docs)

    def name(self, start: int, end: int) -> Node | None:
        """The first @name starting in [start, end)."""
        return _first_in(self.names, self._name_starts, start, end)

    def doc(self, first_row: int, node: Node, end: int) -> Node | None:
        """The last @doc from `first_row` up to `node` (the attribute block joined to its
        chunk), else the first @head_doc from `node` to `end` (its head)."""
        k = bisect.bisect_left(self._doc_starts, node.start_byte) - 1
        if k >= 0 and self.docs[k].start_point.row >= first_row:
            return self.docs[k]
        return _first_in(self.head_docs, self._head_doc_starts, node.start_byte, end)


def _by_start(nodes: list[Node]) -> tuple[list[Node], list[int]]:
    """The nodes in source order, and their start bytes."""
    ordered = sorted(nodes, key=lambda n: n.start_byte)
    return ordered, [n.start_byte for n in ordered]


def _first_in(nodes: list[Node], starts: list[int], start: int, end: int) -> Node | None:
    """The first of the sorted nodes starting in [start, end)."""
    k = bisect.bisect_left(starts, start)
    return nodes[k] if k < len(nodes) and starts[k] < end else None


def _merge_clauses(defs: list[_Def]) -> list[_Def]:
    """Consecutive functions of one name are the clauses of one function (Haskell equations,
    Elixir `def` heads): one definition, so one chunk holds them all."""
    merged: list[_Def] = []
    for d in defs:
        last = merged[-1] if merged else None
        if (
            last is not None
            and not (d.is_class or last.is_class)
            and d.name
            and (d.name, d.scope) == (last.name, last.scope)
        ):
            last.end = max(last.end, d.end)
            last.doc = last.doc or d.doc
            continue
        d.children = _merge_clauses(d.children)
        merged.append(d)
    return merged


def _emit_defs(ctx: _Ctx, defs: list[_Def], parent: str) -> list[Run]:
    """Emit sibling definitions; returns the row spans they cover (overlaps go to the first)."""
    spans: list[Run] = []
    last = -1
    for d in sorted(defs, key=lambda d: (d.start, -d.end)):
        if d.end <= last:
            continue  # shares its only lines with the previous definition (minified code)
        d.start = max(d.start, last + 1)
        if d.is_class:
            _emit_class(ctx, d, parent)
        else:
            owner = parent or d.scope
            _emit(ctx, [(d.start, d.end)], "method" if owner else "function", d.name, owner, d.doc)
        spans.append((d.start, d.end))
        last = d.end
    return spans


def _emit_class(ctx: _Ctx, d: _Def, parent: str) -> None:
    """The class's own lines (header, fields, closing line) and, separately, its members."""
    member_spans = _emit_defs(ctx, d.children, d.name)
    own = _clean(ctx.lines, _gaps((d.start, d.end), member_spans)) or [(d.start, d.start)]
    _emit(ctx, own, "class", d.name, parent or d.scope, d.doc)


# --------------------------------------------------------------------------- one definition


def _describe(spec: LanguageSpec, d: _Def, marks: _Marks, own_end: int) -> None:
    """Fill span (with wrappers and the comment/attribute block above), name and docstring.

    A name the query captured (@name) in the definition's own head wins over the fields,
    which remain the fallback; a captured docstring (@doc, @head_doc) counts where no comment
    does."""
    outer = _climb_wrappers(spec, d.node)
    d.start, comments = _prefix(spec, outer)
    d.end = _last_row(outer)
    name = marks.name(d.node.start_byte, own_end)
    if name is not None:
        d.name, d.scope = _captured_name(name)
    else:
        d.name, d.scope = _def_name(spec, d.node, outer)
    if spec.receiver_field:
        receiver = d.node.child_by_field_name(spec.receiver_field)
        if receiver is not None:
            d.scope = _first_type_name(receiver)
    if spec.docstring == "body_string":
        d.doc = _body_docstring(spec, d.node)
    else:
        d.doc = _comment_docstring(comments)
    if not d.doc and (marks.docs or marks.head_docs):
        doc = marks.doc(d.start, outer, own_end)
        if doc is not None:
            d.doc = inspect.cleandoc(_node_text(doc))[:MAX_DOCSTRING_CHARS]


def _last_row(node: Node) -> int:
    """Last row holding text of the node (a node ending at column 0 ends on the row above)."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return int(end.row) - 1
    return int(end.row)


def _node_text(node: Node) -> str:
    """Source text of a node: a slice of the parsed file's bytes (`node.text` of a tree parsed
    through a read callable calls it again, a Python call per 256 bytes, and py-tree-sitter
    keeps what it returned), or `node.text` outside `_chunk_tree`."""
    source = getattr(_local, "source", None)
    if source is not None:
        return source[node.start_byte : node.end_byte].decode("utf-8", "replace")
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _climb_wrappers(spec: LanguageSpec, node: Node) -> Node:
    """Decorators, `export`, `template<>`, `const x =` around a definition belong to it."""
    while True:
        parent = node.parent
        if parent is None or parent.type not in spec.wrapper_types:
            return node
        same = sum(1 for c in parent.named_children if c.type == node.type)
        if same != 1:  # `type (A struct{}; B struct{})`: the group is not one definition
            return node
        node = parent


def _prefix(spec: LanguageSpec, node: Node) -> tuple[int, list[Node]]:
    """First row including comments/attributes directly above, and those comments in order."""
    start = int(node.start_point.row)
    comments: list[Node] = []
    prev = _node_before(node)
    while prev is not None and prev.type in spec.prefix_types and _last_row(prev) >= start - 1:
        before = prev.prev_named_sibling
        if before is not None and _last_row(before) >= prev.start_point.row:
            break  # a trailing comment of the code above, not a header of this definition
        if prev.type in spec.comment_types:
            if _node_text(prev).startswith("#!"):
                break
            comments.append(prev)
        start = int(prev.start_point.row)
        prev = before
    comments.reverse()
    return start, comments


def _node_before(node: Node) -> Node | None:
    """The named node just before `node`: its previous sibling or, for the first node of a
    group, the last child of the node before the group (Haskell keeps the comment above the
    first declaration at the end of the imports)."""
    first = node
    while first.prev_named_sibling is None:
        parent = first.parent
        if parent is None or parent.start_byte != first.start_byte:
            return None
        first = parent
    prev = first.prev_named_sibling
    if first is not node and prev is not None and prev.named_child_count:
        return prev.named_children[-1]
    return prev


def _def_name(spec: LanguageSpec, node: Node, outer: Node) -> tuple[str, str]:
    """(name, qualifier) of a definition; anonymous ones borrow the wrapper's declarator."""
    target = _field(node, spec.name_fields)
    if target is None and spec.name_types:
        target = next((c for c in node.named_children if c.type in spec.name_types), None)
    if target is None and outer is not node:
        target = _field(outer, spec.name_fields)
    if target is None:
        return dict(spec.default_names).get(node.type, ""), ""
    return _resolve_name(target)


def _captured_name(node: Node) -> tuple[str, str]:
    """(name, qualifier) of a @name capture: resolved like a field's name, else its text (a
    Haskell list type `[a]`); a string literal (Zig's `test "adds"`) loses its quotes."""
    name, scope = _resolve_name(node)
    if not name:
        name = " ".join(_node_text(node).split())[:MAX_NAME_CHARS]
    if len(name) >= 2 and name[0] == name[-1] and name[0] in "\"'":
        name = name[1:-1]
    return name, scope


def _field(node: Node, names: Iterable[str]) -> Node | None:
    """The first of the named fields the node has."""
    for name in names:
        child = node.child_by_field_name(name)
        if child is not None:
            return child
    return None


def _resolve_name(node: Node) -> tuple[str, str]:
    """Follow declarators and qualified names down to the identifier; keep the last scope."""
    scope = ""
    for _ in range(12):
        if node.named_child_count == 0 or node.type in _WHOLE_NAME_TYPES:
            return _node_text(node)[:MAX_NAME_CHARS], scope
        qualifier = _field(node, _SCOPE_FIELDS)
        if qualifier is not None:
            scope = _resolve_name(qualifier)[0]
        nxt = _field(node, _NAME_FIELDS)
        if nxt is None:
            nxt = next((c for c in node.named_children if _is_name_type(c.type)), None)
        if nxt is None:
            break
        node = nxt
    return "", scope


def _is_name_type(node_type: str) -> bool:
    """Node types that hold a plain name in some grammar."""
    return node_type.endswith("identifier") or node_type in _NAME_LEAF_TYPES


def _first_type_name(node: Node) -> str:
    """The first type identifier under a node (Go receiver `(s *Stack[T])` → Stack)."""
    todo = [node]
    while todo:
        current = todo.pop()
        if current.type.endswith("type_identifier"):
            return _node_text(current)
        todo.extend(reversed(current.named_children))
    return ""


def _body_docstring(spec: LanguageSpec, node: Node) -> str:
    """Python convention: a string literal as the first statement of the body."""
    body = node.child_by_field_name(spec.body_field)
    if body is None:
        return ""
    first = None
    for i in range(body.named_child_count):
        first = body.named_child(i)
        if first is not None and first.type not in spec.comment_types:
            break
    if first is not None and first.type == "expression_statement":
        first = first.named_child(0)
    if first is None or first.type != "string":
        return ""
    return _clean_string(_node_text(first))


def _clean_string(literal: str) -> str:
    """A string literal's value, dedented like `inspect.cleandoc`."""
    match = _STRING_QUOTES.match(literal)
    if match is None:
        return ""
    quote = match.group(1)
    inner = literal[match.end() :]
    if inner.endswith(quote):
        inner = inner[: -len(quote)]
    return inspect.cleandoc(inner)[:MAX_DOCSTRING_CHARS]


def _comment_docstring(comments: list[Node]) -> str:
    """A comment block with its markers (`//`, `///`, `#`, `/** */`, ` * `) removed."""
    if not comments:
        return ""
    lines: list[str] = []
    for comment in comments:
        for line in _node_text(comment).split("\n"):
            line = _COMMENT_LEAD.sub("", line, count=1)
            if "*/" in line or "]" in line:  # the tail's markers; most lines end in neither
                line = _COMMENT_TAIL.sub("", line)
            lines.append(line.rstrip())
    text = "\n".join(lines).strip("\n")
    return inspect.cleandoc(text)[:MAX_DOCSTRING_CHARS] if text.strip() else ""


# --------------------------------------------------------------------------- calls


def _calls(callees: list[Node], names: Iterable[Node] = ()) -> tuple[list[int], list[str]]:
    """(rows, names) of every call in the file, ordered by where the called name stands.

    A definition's own name (a @name capture) is not a call, though its grammar may make it
    one: Elixir's `def get(id)` holds the call `get(id)`."""
    own = {n.start_byte for n in names}
    found: list[tuple[int, int, str]] = []
    source: bytes | None = getattr(_local, "source", None)
    is_name = _IDENT.match
    for node in callees:  # a loop run for every call of the file: kept lean
        leaf = node if node.named_child_count == 0 else _callee_leaf(node)
        if leaf is None:
            continue
        start = leaf.start_byte
        if start in own:
            continue
        if source is None:
            name = _node_text(leaf)
        else:
            name = source[start : leaf.end_byte].decode("utf-8", "replace")
        if len(name) <= MAX_NAME_CHARS and is_name(name):
            found.append((start, leaf.start_point.row, name))
    found.sort()
    return [row for _, row, _ in found], [name for _, _, name in found]


def _callee_leaf(node: Node) -> Node | None:
    """The last identifier of a callee: `a.b.c` → c, `ns::f<T>` → f, `obj->m` → m."""
    for _ in range(8):
        if node.named_child_count == 0:
            return node
        nxt = _field(node, _CALLEE_FIELDS)
        if nxt is None:
            kids = [
                c
                for c in node.named_children
                if "argument" not in c.type and "parameter" not in c.type
            ]
            if not kids:
                return None
            nxt = kids[-1]
        node = nxt
    return None


# --------------------------------------------------------------------------- markdown and rst

_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_MD_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
#: Lines that cannot be the text of a setext heading: list items, quotes, table rows, code.
_MD_NOT_PARAGRAPH = re.compile(r"^(?: {4}|\t| {0,3}(?:[-*+>|]|\d+[.)])(?:\s|$))")
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")

#: A heading: (first row of the section, level, title). Lower level = outer.
Heading = tuple[int, int, str]


def _emit_sections(ctx: _Ctx, headings: list[Heading]) -> None:
    """One 'section' chunk per heading; parent = nearest enclosing heading; preamble ''."""
    last = len(ctx.lines) - 1
    if not headings or headings[0][0] > 0:
        _emit(ctx, [(0, headings[0][0] - 1 if headings else last)], "section")
    stack: list[tuple[int, str]] = []
    for i, (row, level, title) in enumerate(headings):
        end = headings[i + 1][0] - 1 if i + 1 < len(headings) else last
        while stack and stack[-1][0] >= level:
            stack.pop()
        _emit(ctx, [(row, end)], "section", title, stack[-1][1] if stack else "")
        stack.append((level, title))


def _fence_closes(line: str, fence: str) -> bool:
    """Whether a line closes a code fence opened with `fence`."""
    stripped = line.strip()
    indent = len(line) - len(line.lstrip(" "))
    return indent <= 3 and len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def _markdown_headings(lines: list[str]) -> list[Heading]:
    """ATX (`# x`) and setext (`x` over `===`) headings outside fenced code and front matter."""
    headings: list[Heading] = []
    fence = ""
    paragraph = False  # the previous line is plain paragraph text (a setext candidate)
    for row in range(_front_matter_end(lines), len(lines)):
        line = lines[row]
        if fence:
            fence = "" if _fence_closes(line, fence) else fence
            continue
        opening = _MD_FENCE.match(line)
        atx = _MD_ATX.match(line)
        setext = _MD_SETEXT.match(line) if paragraph else None
        if opening:
            fence = opening.group(1)
        elif atx:
            headings.append((row, len(atx.group(1)), (atx.group(2) or "").strip()))
        elif setext:
            level = 1 if setext.group(1)[0] == "=" else 2
            headings.append((row - 1, level, lines[row - 1].strip()))
        paragraph = not (opening or atx or setext or _MD_NOT_PARAGRAPH.match(line))
        paragraph = paragraph and bool(line.strip())
    return headings


def _front_matter_end(lines: list[str]) -> int:
    """First row after a leading `---` YAML front-matter block (0 if there is none)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for row in range(1, len(lines)):
        if lines[row].strip() in ("---", "..."):
            return row + 1
    return 0


def _rst_headings(lines: list[str]) -> list[Heading]:
    """Section titles: a text line underlined (optionally also overlined) by punctuation."""
    headings: list[Heading] = []
    styles: dict[tuple[str, bool], int] = {}
    for row in range(len(lines) - 1):
        found = _rst_title(lines, row)
        if found is None:
            continue
        start, style = found
        level = styles.setdefault(style, len(styles))
        headings.append((start, level, lines[row].strip()))
    return headings


def _rst_title(lines: list[str], row: int) -> tuple[int, tuple[str, bool]] | None:
    """If `row` is a title: (first row of its section, (adornment char, overlined))."""
    title = lines[row]
    under = _RST_ADORNMENT.match(lines[row + 1])
    if under is None or not title.strip() or _RST_ADORNMENT.match(title):
        return None
    char = under.group(1)
    over = (
        row > 0 and (m := _RST_ADORNMENT.match(lines[row - 1])) is not None and m.group(1) == char
    )
    if title[0].isspace() and not over:
        return None  # indented text is a block quote or literal block, not a title
    length = len(lines[row + 1].rstrip())
    if length < len(title.rstrip()) and length < 4 and not over:
        return None
    start = row - 1 if over else row
    if start > 0 and lines[start - 1].strip():
        return None  # a title follows a blank line; otherwise this is paragraph text
    return start, (char, over)
