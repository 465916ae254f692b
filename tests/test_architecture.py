"""The import rules of docs/architecture.md, checked on the source (no import is executed).

The graph is built with `ast` over server/codeask/**.py and counts EVERY import statement:
top-level ones, those under `if TYPE_CHECKING:` (a type-only import still ties two modules
together: one cannot be read, moved or tested without the other) and function-local ones (a
lazy import postpones a circle, it does not remove it). An edge goes to what the statement
names: `from a.b import c` reaches the module `a.b.c` when it is one, else the package `a.b`
(its `__init__`); `import a.b.c` reaches `a.b.c`. That a package's `__init__` runs before its
submodules is not an edge (Python always initialises the parent first, so only a submodule that
imports names from its own package's `__init__` can close a circle through it, and that shows
as an explicit edge). `importlib.import_module` with a computed name (cli/__init__.py's command
table) is not seen.

What the tests prove:
- Inside the engine only the storage factory (`core/storage/factory.py`: the storage, the embedding
  cache, the team cache's state) and health (which probes the database) import
  `codeask.core.storage.postgres`; the team backend imports nothing of the indexer
  (`storage/postgres/publish` takes a reader).
- Only the storage factory constructs a storage (`LocalStorage`, `TeamStorage`), and
  `FolderIndex` shows no part of one (no `store`, no `lexical`: callers use the Storage methods).
- `codeask.core` and `codeask.config` reach neither the editor protocol (pygls, lsprotocol),
  nor the MCP SDK, nor the faces built on the engine (`codeask.lsp`, `codeask.mcp`,
  `codeask.cli`, `codeask.daemon`), directly or through any chain of our own modules.
- No module of codeask imports a test-only library: the MCP SDK (`mcp`, `mcp_types`) and
  pydantic are the MCP tests' client, not a dependency (`codeask mcp` speaks MCP through its
  own JSON-RPC layer, codeask/mcp/protocol.py: issue 29, ~44 MB per process that serves agents).
- No module imports another's private names (`from codeask.x import _y`), except a package's
  `__init__` from a module inside it.
- The faces (cli, lsp, mcp, daemon) reach retrieval, chunking, storage, embedding, prompt
  building and the indexer's modules only through `codeask.core.operations` (issue 30: one
  operations layer); the exceptions are `FACE_EXCEPTIONS`, each with its reason, and the list
  only shrinks. The faces' search, related, status and ask modules do import the operations.
- The import circles (strongly connected components of more than one module, and a module
  importing itself) are exactly `KNOWN_CIRCLES`: a new circle fails and is named; a known one
  that is gone fails too, so the list only shrinks (docs/architecture.md, "Circles left").
- Every engine module lives in a room (a package under `codeask.core` named for its stage:
  runtime, source, git, embedding, storage, indexer, search, ask, llm, checks, operations;
  `records` is the ground floor); the light rooms' `__init__` imports nothing.
- A module imports another room's module only when that room lists it in `__all__` (its
  public names), and a room imports only rooms drawn below it (ROOMS, top to bottom: no circle
  between rooms).
- The counts of docs/architecture.md's "What adding each kind of thing touches" hold: each
  row's count is the files it names (they exist), the walk-throughs agree, the operation on all
  faces is derived from the faces' rows, and every file that lists every existing tool,
  provider, custom LSP method, CLI command or backend is in its kind's row (these tests import
  the server's own lists: the MCP listing, `MESSAGES`, `PROVIDERS`, `COMMANDS`, `LANGUAGES`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

SERVER = Path(__file__).resolve().parent.parent / "server"
PACKAGE = SERVER / "codeask"

#: Faces built on the engine and the libraries only they may use.
FACES = ("codeask.lsp", "codeask.mcp", "codeask.cli", "codeask.daemon")
FACE_LIBRARIES = ("pygls", "lsprotocol", "mcp")
#: Installed for the tests only (pyproject's `dev` extra): nothing in codeask may import them.
TEST_ONLY_LIBRARIES = ("mcp", "mcp_types", "pydantic", "pydantic_core")
#: The engine and the ground floor below it.
ENGINE = ("codeask.core", "codeask.config")

#: The team backend and the only engine modules that may import it: the storage factory opens it
#: (core/storage/factory.py: storage, embedding cache, the cache's state); health probes the
#: database.
TEAM_BACKEND = "codeask.core.storage.postgres"
STORAGE_FACTORY = "codeask.core.storage.factory"
TEAM_BACKEND_USERS = (STORAGE_FACTORY, "codeask.core.checks.health")
#: The storages (class names) only the factory constructs.
STORAGE_CLASSES = ("LocalStorage", "TeamStorage")
#: Where FolderIndex lives, and the parts of a storage it must not show.
FOLDER_INDEX = ("codeask.core.indexer.folder", "FolderIndex")
STORAGE_PARTS = ("store", "lexical")

#: The operations layer every face calls (core/operations/: search, related, symbols, context,
#: ask, history, status, index).
OPERATIONS = "codeask.core.operations"
#: Engine modules a face must not import: retrieval and ranking, chunking, the stores and
#: lexical tables, the vector tiers and embedders, the ask orchestrator and prompt, git blame and
#: diffs. Faces may import the operations, `core.records`, `codeask.config`, `core.source.names`,
#: the `core.indexer` package's public names (FolderIndex, Workspace, ...: what a long-lived writer
#: drives), `core.checks.health`, `core.llm` (endpoint help), `core.source.languages`,
#: `core.source.discover` and `core.source.safe_read` (the path guards), `core.git.repo`/`commits`
#: (HEAD, BlameInfo), `core.storage.writer_lock`, `core.runtime.background`,
#: `core.checks.selfcheck*`, and `core.storage.postgres` in the team commands.
ENGINE_INTERNALS = tuple(
    f"codeask.core.{name}"
    for name in (
        "search.retrieve", "search.query", "search.rerank", "search.name_match",
        "search.pipeline", "search.steps",
        "storage.symbol_table", "storage.lexical.index", "storage.lexical.frozen",
        "storage.lexical.memory", "storage.lexical.bm25", "storage.lexical.fts", "source.chunk",
        "storage.store", "storage.catalog", "storage.snapshot", "storage.snapshot_load",
        "storage.protocol", "storage.local", "storage.vectors", "embedding.int8_quantize",
        "embedding.embed", "embedding.base", "embedding.remote", "embedding.static",
        "embedding.query_encoder", "storage.overlay", "storage.overlay_shadow", "storage.factory",
        "storage.team", "ask.answer", "ask.router", "ask.prompt", "git.blame", "git.diffs",
        "git.hunks",
    )
)  # fmt: skip
#: The indexer's job modules (`core.indexer.*`): faces use the package's public names.
INDEXER_PACKAGE = "codeask.core.indexer"
#: Face imports of engine internals still in the tree: (face module, engine module) → why.
#: Never add one; the test fails when one is gone, so the list only shrinks.
FACE_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("codeask.cli.common", "codeask.core.storage.store"): (
        "default_root reads which root an index records (read_manifest) before a command is "
        "forwarded to the daemon: importing the operations there would load the whole engine "
        "into every forwarded `codeask search`"
    ),
}
#: Face modules that must call the operations layer (the rule above would pass vacuously if
#: the faces stopped searching at all).
OPERATION_CALLERS = (
    "codeask.cli.search",
    "codeask.cli.status",
    "codeask.cli.ask",
    "codeask.cli.index",
    "codeask.lsp.features.search",
    "codeask.lsp.features.related",
    "codeask.lsp.features.lens",
    "codeask.lsp.features.symbols",
    "codeask.mcp.tools",
)

#: Circles still in the tree, each to be broken (never add one: the list only shrinks).
#: Listed in docs/architecture.md under "Circles left", with who owns the modules.
KNOWN_CIRCLES: frozenset[frozenset[str]] = frozenset()


def module_name(path: Path, server: Path) -> str:
    """`server/codeask/core/storage/postgres/__init__.py` → `codeask.core.storage.postgres`."""
    parts = list(path.relative_to(server).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def source_modules(server: Path = SERVER) -> dict[str, Path]:
    """Every module of the `codeask` package under `server`, by dotted name."""
    found = (p for p in (server / "codeask").rglob("*.py") if "__pycache__" not in p.parts)
    return {module_name(path, server): path for path in found}


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module a `from ... import` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def outside_packages(tree: ast.AST) -> set[str]:
    """Top-level packages not ours that a module imports, wherever the statement stands."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names - {"codeask"}


def _owner(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest module of ours that `name` is or lies in (None: not ours)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(
    modules: Mapping[str, Path],
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(our module → our modules it imports, our module → outside top-level packages)."""
    ours: dict[str, set[str]] = {}
    outside: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        ours[module] = our_imports(tree, module, path.name == "__init__.py", modules)
        outside[module] = outside_packages(tree)
    return ours, outside


def our_imports(
    tree: ast.AST, module: str, is_package: bool, modules: Mapping[str, Path]
) -> set[str]:
    """Our modules a module's import statements reach, wherever they stand (module level,
    under `if TYPE_CHECKING:`, inside functions): `from a import b` → `a.b` if it is a module,
    else `a`; `import a.b` → `a.b` (or the longest module it lies in)."""
    targets: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                owner = _owner(alias.name, modules) if alias.name.startswith("codeask") else None
                if owner:
                    targets.add(owner)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, is_package)
            if base.split(".")[0] != "codeask":
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                owner = full if full in modules else _owner(base, modules)
                if owner:
                    targets.add(owner)
    return targets | _packages_entered(targets, module, is_package, modules)


def _packages_entered(
    targets: Iterable[str], module: str, is_package: bool, modules: Mapping[str, Path]
) -> set[str]:
    """The packages whose `__init__` an import from outside them runs first: importing
    `a.b.c` from outside `a.b` runs `a.b/__init__.py` (and `a/__init__.py`) before `c`, so a
    package `__init__` importing back the module that entered it is a circle at runtime (it was:
    `storage.factory` → `indexer.team` ran `indexer/__init__` → `folder` → `storage.factory`; the
    team storage is `core/storage/team.py` since)."""
    home = module if is_package else module.rpartition(".")[0]
    entered: set[str] = set()
    for target in targets:
        package = target.rpartition(".")[0]
        while package and package in modules and not _in(home, (package,)):
            entered.add(package)
            package = package.rpartition(".")[0]
    return entered


def reachable(start: str, graph: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """Modules reachable from `start`, each with the module it was reached from."""
    seen: dict[str, str] = {}
    todo = [start]
    while todo:
        current = todo.pop()
        for target in graph.get(current, ()):
            if target not in seen and target != start:
                seen[target] = current
                todo.append(target)
    return seen


def chain(start: str, end: str, parents: Mapping[str, str]) -> list[str]:
    """The import chain start → ... → end found by `reachable`."""
    path = [end]
    while path[-1] != start:
        path.append(parents[path[-1]])
    return path[::-1]


def circles(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """Strongly connected components of more than one module, and modules importing
    themselves (Tarjan's algorithm, iterative: the graph has ~300 modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                target = pending.pop()
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, sorted(graph.get(target, ()))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.add(frozenset(component))
    return found


def describe(found: Iterable[frozenset[str]]) -> str:
    """Circles as sorted lines, for failure messages and notes."""
    return "\n".join(
        f"  {len(c)} modules: {', '.join(sorted(c))}" for c in sorted(found, key=sorted)
    )


def _in(module: str, roots: Iterable[str]) -> bool:
    return any(module == root or module.startswith(root + ".") for root in roots)


# ---- the tests ------------------------------------------------------------------------------
MODULES = source_modules()
GRAPH, OUTSIDE = import_graph(MODULES)


def test_the_graph_sees_every_kind_of_import() -> None:
    """The edges the rules rely on are there: a TYPE_CHECKING-only import, a function-local
    import and a package `__init__` re-export (if one of these were missed, every other test
    here would pass vacuously)."""
    assert len(MODULES) > 100
    assert (
        "codeask.core.storage.protocol" in GRAPH["codeask.core.storage.postgres.publish"]
    )  # under TYPE_CHECKING
    assert (
        "codeask.core.storage.postgres.publish" in GRAPH["codeask.cli.index"]
    )  # inside a function
    assert "codeask.core.indexer.folder" in GRAPH["codeask.core.indexer"]  # the __init__
    assert (
        "codeask.core.storage.postgres" in GRAPH["codeask.core.storage.factory"]
    )  # entering storage/postgres/__init__
    assert "pygls" in OUTSIDE["codeask.lsp.server"] or any(
        "pygls" in OUTSIDE[m] for m in MODULES if m.startswith("codeask.lsp")
    )


def test_engine_never_reaches_a_face_or_its_libraries() -> None:
    """core and config import no face (lsp, mcp, cli, daemon) and no face's library (pygls,
    lsprotocol, the MCP SDK), directly or through a chain of our modules. Each offending
    import is named once, with the chain that reaches it from the engine."""
    offending: dict[str, str] = {}
    for module in sorted(m for m in GRAPH if _in(m, ENGINE)):
        parents = reachable(module, GRAPH)
        for source in [module, *sorted(t for t in parents if not _in(t, FACES))]:
            via = [module] if source == module else chain(module, source, parents)
            faces = sorted(t for t in GRAPH[source] if _in(t, FACES))
            libraries = sorted(OUTSIDE[source] & set(FACE_LIBRARIES))
            for target in [*faces, *libraries]:
                offending.setdefault(f"{source} imports {target}", " → ".join([*via, target]))
    lines = [f"{edge}  (reached: {path})" for edge, path in sorted(offending.items())]
    assert not lines, "the engine reaches a face:\n" + "\n".join(lines)


def test_no_module_imports_a_test_only_library() -> None:
    """The MCP SDK and pydantic are the tests' client only: every import of them (top-level,
    type-only or function-local) anywhere in codeask is named."""
    found = sorted(
        f"{module} imports {library}"
        for module in MODULES
        for library in sorted(OUTSIDE[module] & set(TEST_ONLY_LIBRARIES))
    )
    assert not found, "\n".join(found)


def team_backend_importers(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Engine modules other than the factory and health that import `core.storage.postgres`, and
    `core.storage.postgres` modules that import the indexer."""
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _in(module, ENGINE) and not _in(module, (TEAM_BACKEND, *TEAM_BACKEND_USERS))
        for target in targets
        if _in(target, (TEAM_BACKEND,))
    ) + sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        if _in(module, (TEAM_BACKEND,))
        for target in targets
        if _in(target, (INDEXER_PACKAGE,))
    )


def test_only_the_storage_factory_and_health_import_the_team_backend() -> None:
    """Inside the engine, `core.storage.postgres` is chosen where `index.backend` is turned into a
    storage and an embedding cache (the storage factory) and probed by health; no other module (the
    indexer, embed, retrieve, storage, ...) imports it, so the engine works, and can be read,
    without it. The team backend in turn never imports the indexer (publishing takes a reader)."""
    offending = team_backend_importers(GRAPH)
    assert not offending, "the team backend crosses the factory:\n" + "\n".join(offending)


def test_embed_reaches_no_team_backend() -> None:
    """The embedder is told which cache sits behind its own (`load_embedder(settings, layer)`)
    and reaches `core.storage.postgres` by no chain of imports (it did, for the team cache)."""
    parents = reachable("codeask.core.embedding.embed", GRAPH)
    team = sorted(t for t in parents if _in(t, (TEAM_BACKEND,)))
    found = [" → ".join(chain("codeask.core.embedding.embed", t, parents)) for t in team]
    assert not found, "embed reaches the team backend:\n" + "\n".join(found)


def storage_constructions(modules: Mapping[str, Path]) -> list[str]:
    """Calls `LocalStorage(...)` / `TeamStorage(...)` outside the storage factory (a class's own
    `cls(...)` in its classmethods is not one of these)."""
    found: list[str] = []
    for module, path in sorted(modules.items()):
        if module == STORAGE_FACTORY:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in STORAGE_CLASSES:
                    found.append(f"{module}:{node.lineno} constructs {name}")
    return found


def test_only_the_storage_factory_constructs_a_storage() -> None:
    """`core/storage/factory.py` is the one place that turns `index.backend` into a storage: the
    indexer receives it (and its embedding cache) and builds no part itself."""
    found = storage_constructions(MODULES)
    assert not found, "a storage built outside the factory:\n" + "\n".join(found)


def shown_parts(path: Path, class_name: str, parts: Iterable[str]) -> list[str]:
    """Attributes, properties or methods named `parts` that a class defines: `self.x = ...`
    anywhere in its body, a method or property `x`, a class-level `x` or `x: T`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    wanted = set(parts)
    found: list[str] = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        if cls.name != class_name:
            continue
        for node in ast.walk(cls):
            names: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [node.name] if node in cls.body else []
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                base = node.value
                names = [node.attr] if isinstance(base, ast.Name) and base.id == "self" else []
            elif isinstance(node, ast.AnnAssign | ast.Assign) and node in cls.body:
                targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            found.extend(f"{class_name}.{n} (line {node.lineno})" for n in names if n in wanted)
    return found


def test_folder_index_shows_no_part_of_its_storage() -> None:
    """FolderIndex holds a storage (`storage`, what readers read; `local`, what the indexer
    writes) and no part of one: no `store`, no `lexical` (tests, benchmarks and the daemon use
    the Storage methods, or LocalStorage's documented ones)."""
    module, name = FOLDER_INDEX
    found = shown_parts(MODULES[module], name, STORAGE_PARTS)
    assert not found, "FolderIndex shows a part of its storage:\n" + "\n".join(found)
    assert shown_parts(MODULES[module], name, ("storage", "local")), "the rule would pass vacuously"


def private_imports(modules: Mapping[str, Path]) -> list[str]:
    """`from codeask.x import _name`: a module reaching into another's private names (a
    leading underscore, not a dunder). Only a package's `__init__` may take one from a module
    inside it (`core/llm/__init__.py` names `bounded._Inflater`): the package's own business."""
    found: list[str] = []
    for module, path in sorted(modules.items()):
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _absolute(node, module, is_package)
            owner = _owner(base, modules) if base.split(".")[0] == "codeask" else None
            if owner is None or (is_package and owner.startswith(module + ".")):
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.endswith("__")
                if private:
                    found.append(f"{module} imports {base}.{alias.name}")
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    """What a module keeps private (`_name`) stays inside it (and its package's `__init__`)."""
    found = private_imports(MODULES)
    assert not found, "private names imported:\n" + "\n".join(found)


def face_internal_imports(graph: Mapping[str, Iterable[str]]) -> set[tuple[str, str]]:
    """(face module, engine internal) for every face import of an engine internal."""
    return {
        (module, target)
        for module, targets in graph.items()
        if _in(module, FACES)
        for target in targets
        if _in(target, ENGINE_INTERNALS) or target.startswith(INDEXER_PACKAGE + ".")
    }


def test_faces_reach_the_engine_through_the_operations() -> None:
    """The CLI, the language server, the MCP server and the daemon import no retrieval,
    chunking, storage, embedding, prompt or indexer-job module of their own: the engine's
    decisions are made once, in `core.operations`. The exceptions are FACE_EXCEPTIONS, which
    may only shrink."""
    found = face_internal_imports(GRAPH)
    new = sorted(found - FACE_EXCEPTIONS.keys())
    gone = sorted(FACE_EXCEPTIONS.keys() - found)
    assert not new, "a face imports engine internals (call core.operations):\n" + "\n".join(
        f"  {module} imports {target}" for module, target in new
    )
    assert not gone, "exception(s) gone: remove them from FACE_EXCEPTIONS\n" + "\n".join(
        f"  {module} → {target}" for module, target in gone
    )
    callers = [m for m in OPERATION_CALLERS if not any(_in(t, (OPERATIONS,)) for t in GRAPH[m])]
    assert not callers, f"these faces no longer call {OPERATIONS}: {callers}"


def test_the_face_rule_catches_an_internal_import() -> None:
    """The rule on a small graph: a face importing retrieve or an indexer job is caught; the
    operations, records and the indexer package are not."""
    graph = {
        "codeask.lsp.features.x": {
            "codeask.core.search.retrieve",
            "codeask.core.indexer.files",
            "codeask.core.operations",
            "codeask.core.records",
            "codeask.core.indexer",
        },
        "codeask.core.operations": {"codeask.core.search.retrieve"},
    }
    assert face_internal_imports(graph) == {
        ("codeask.lsp.features.x", "codeask.core.search.retrieve"),
        ("codeask.lsp.features.x", "codeask.core.indexer.files"),
    }


def test_import_circles_are_only_the_known_ones() -> None:
    """No new circle; and a circle that was broken leaves KNOWN_CIRCLES (the list shrinks)."""
    found = circles(GRAPH)
    new = found - KNOWN_CIRCLES
    gone = KNOWN_CIRCLES - found
    assert not new, "new import circle(s):\n" + describe(new)
    assert not gone, "circle(s) broken: remove them from KNOWN_CIRCLES\n" + describe(gone)


def test_circle_finder_finds_a_circle_and_a_self_import() -> None:
    """The finder on a small graph: a 3-module circle, a self-import, and acyclic rest."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert circles(graph) == {frozenset({"a", "b", "c"}), frozenset({"e"})}


# ---- the rooms (issue 30) -------------------------------------------------------------------
#: The engine's rooms: each a package right under `codeask.core`, named for its stage of the
#: pipeline, top to bottom as docs/architecture.md draws them: a room imports only rooms below
#: it. `records` is the ground floor beside `config`.
ROOMS = (
    "operations", "checks", "ask", "search", "indexer", "storage", "embedding", "git", "llm",
    "source", "runtime",
)  # fmt: skip
GROUND_FLOOR = ("codeask.core.records",)
#: Rooms whose `__init__` only says what the room is for and lists `__all__`: importing one of
#: their modules costs nothing more (the engine loads models and grammars lazily on purpose). The
#: others re-export their API from their `__init__` (the indexer, the LLM client, the operations).
LIGHT_ROOMS = ("runtime", "source", "git", "embedding", "storage", "search", "ask", "checks")


def room_of(module: str) -> str | None:
    """`codeask.core.storage.postgres.publish` → `storage`; None outside the engine's rooms."""
    parts = module.split(".")
    if parts[:2] != ["codeask", "core"] or len(parts) < 3 or module in GROUND_FLOOR:
        return None
    return parts[2]


def declared_all(path: Path) -> list[str] | None:
    """The strings of a module's `__all__ = [...]`, None when it has none."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return [ast.literal_eval(e) for e in node.value.elts]  # type: ignore[attr-defined]
    return None


def public_names(modules: Mapping[str, Path]) -> dict[str, set[str]]:
    """Every package of the engine → the names its `__all__` makes public."""
    return {
        module: set(declared_all(path) or ())
        for module, path in modules.items()
        if path.name == "__init__.py" and module.startswith("codeask.core.")
    }


def not_public(target: str, public: Mapping[str, set[str]]) -> str | None:
    """Why `target` (a module of a room) is not public, None when it is: every step below the
    room (`storage` → `postgres` → `publish`) is in the `__all__` of the package above it, and none
    is private (`_name`)."""
    parts = target.split(".")
    for depth in range(3, len(parts)):
        package, name = ".".join(parts[:depth]), parts[depth]
        if name.startswith("_"):
            return f"{name} is private"
        if name not in public.get(package, set()):
            return f"{name} is not in {package}'s __all__"
    return None


def cross_room_imports(
    graph: Mapping[str, Iterable[str]], public: Mapping[str, set[str]]
) -> list[str]:
    """Imports of another room's module that its room does not make public (engine modules and
    faces alike)."""
    found = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            room = room_of(target)
            if room is None or room == room_of(module):
                continue
            reason = not_public(target, public)
            if reason:
                found.append(f"{module} imports {target} ({reason})")
    return found


def test_every_engine_module_is_in_a_room() -> None:
    """The tree shows the picture: no module lies flat in `codeask.core` (only the ground
    floor, `records`), and each room is one of ROOMS with a docstring and an `__all__`."""
    flat = sorted(
        m
        for m, path in MODULES.items()
        if m.count(".") == 2
        and m.startswith("codeask.core.")
        and m not in GROUND_FLOOR
        and path.name != "__init__.py"
    )
    assert not flat, f"modules outside the rooms: {flat}"
    rooms = sorted(m.split(".")[2] for m in MODULES if m.count(".") == 2 and room_of(m))
    assert rooms == sorted(ROOMS), f"rooms on disk {rooms} != ROOMS {sorted(ROOMS)}"
    for room in ROOMS:
        path = MODULES[f"codeask.core.{room}"]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ast.get_docstring(tree), f"{path}: say what the room is for"
        assert declared_all(path), f"{path}: list the room's public names in __all__"


def test_light_rooms_import_nothing() -> None:
    """A light room's `__init__` (and each package's inside it) imports nothing: importing
    `codeask.core.source.names` loads that module, not the room."""
    heavy = sorted(
        module
        for module, path in MODULES.items()
        if path.name == "__init__.py"
        and room_of(module) in LIGHT_ROOMS
        and (GRAPH[module] or OUTSIDE[module])
    )
    assert not heavy, f"these rooms' __init__ import something: {heavy}"


def test_rooms_import_each_other_only_through_public_names() -> None:
    """A module (of the engine or a face) imports another room's module only when the room
    lists it in `__all__` (and each package between: `storage` → `postgres` → `publish`); private
    names never cross (rule 4 above checks `from x import _y` everywhere)."""
    public = public_names(MODULES)
    private = sorted(
        f"{package}: {name}" for package, names in public.items() for name in names
        if name.startswith("_")
    )  # fmt: skip
    assert not private, f"private names made public: {private}"
    found = cross_room_imports(GRAPH, public)
    assert not found, "imports of another room's non-public modules:\n" + "\n".join(found)


def test_the_room_rule_catches_a_non_public_import() -> None:
    """The rule on a small graph: a module another room does not list (and a private one) is
    caught; a listed module, the room's package, the own room and the ground floor are not."""
    public = {
        "codeask.core.storage": {"protocol", "postgres"},
        "codeask.core.storage.postgres": {"publish"},
    }
    graph = {
        "codeask.core.search.retrieve": {
            "codeask.core.storage.protocol",
            "codeask.core.storage.catalog",
            "codeask.core.storage.postgres.publish",
            "codeask.core.storage.postgres.schema",
            "codeask.core.storage",
            "codeask.core.search.query",
            "codeask.core.records",
        },
        "codeask.cli.x": {"codeask.core.storage._hidden"},
    }
    assert cross_room_imports(graph, public) == [
        "codeask.cli.x imports codeask.core.storage._hidden (_hidden is private)",
        "codeask.core.search.retrieve imports codeask.core.storage.catalog "
        "(catalog is not in codeask.core.storage's __all__)",
        "codeask.core.search.retrieve imports codeask.core.storage.postgres.schema "
        "(schema is not in codeask.core.storage.postgres's __all__)",
    ]


def upward_imports(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Imports of a room drawn above the importing one (ROOMS runs top to bottom)."""
    return [
        f"{module} ({room_of(module)}) imports {target} ({room_of(target)})"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if room_of(module) in ROOMS
        and room_of(target) in ROOMS
        and ROOMS.index(room_of(target)) < ROOMS.index(room_of(module))  # type: ignore[arg-type]
    ]


def test_rooms_import_only_rooms_below_them() -> None:
    """The picture is the truth: operations on top, then checks, ask, search, the indexer,
    storage, embedding, git, llm, source and runtime; no room imports one drawn above it (so
    there is no circle between rooms either)."""
    found = upward_imports(GRAPH)
    assert not found, "a room imports one drawn above it:\n" + "\n".join(found)


# ---- what adding each kind of thing touches (docs/architecture.md, issue 43) -----------------
ROOT = SERVER.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
RECIPES = "## What adding each kind of thing touches"
#: The table's rows, and the walk-throughs / lines elsewhere in the doc that state their counts.
RECIPE_ROWS = (
    "a language",
    "an LLM provider",
    "an LSP request",
    "an MCP tool",
    "a CLI command",
    "a storage backend",
    "a ranking step",
    "an operation on all three faces",
)
STATED_ELSEWHERE = {
    "a language": r"## Walk-through 1: [^\n]*\((\d+) files",
    "an LLM provider": r"## Walk-through 2: [^\n]*\((\d+) files",
    "an LSP request": r"## Walk-through 3: [^\n]*\((\d+) files",
    "an operation on all three faces": r"\*\*Adding an operation to all three faces: (\d+) files",
    "a ranking step": r"\*\*Adding a ranking step: (\d+) files",
}
#: Where a file that lists every thing of a kind may live: code, the editors' code and manifest,
#: and the two reference documents tests keep equal to the code (docs/mcp.md, docs/protocol.md).
#: Prose documents are not counted.
LISTING_PLACES = (
    "server/codeask/**/*.py",
    "tests/**/*.py",
    "benchmarks/*.py",
    "editor-clients/vscode/package.json",
    "editor-clients/vscode/src/**/*.ts",
    "editor-clients/neovim/lua/**/*.lua",
    "docs/mcp.md",
    "docs/protocol.md",
)


#: Files that list every one of a kind by coincidence, not as a list of that kind (the reason).
NOT_A_LIST_OF: dict[tuple[str, str], str] = {
    ("an LLM provider", "core/embedding/remote.py"): "the embedding endpoints' API shapes, "
    "also `ollama` and `openai` today; a new LLM provider needs no embedding endpoint",
    ("an LLM provider", "tests/hostile/test_llm_hostile.py"): "the providers these attacks "
    "speak the wire format of; a new provider passes without joining them",
}


def recipe_rows(text: str) -> dict[str, tuple[int, list[str]]]:
    """The recipes table: what is added → (the count it states in bold, the files it names)."""
    section = text.split(RECIPES, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        stated = re.match(r"\*\*(\d+)\*\*", cells[1]) if len(cells) > 2 else None
        if stated:
            files = re.findall(r"`([^` ]+\.(?:py|md|json|ts|lua))`", cells[1])
            rows[cells[0]] = (int(stated.group(1)), files)
    return rows


def repo_path(listed: str) -> Path:
    """A path as the doc writes it: from the repository root for docs, tests and the editors,
    else from server/codeask."""
    top = listed.split("/", 1)[0]
    outside = ("docs", "tests", "benchmarks", "editor-clients")
    return ROOT / listed if top in outside else PACKAGE / listed


def string_lists(tree: ast.AST) -> Iterator[set[str]]:
    """The strings of each tuple, list or set literal and each dict's keys (`Literal[...]`'s
    arguments are a tuple too)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items: list[ast.expr | None] = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        else:
            continue
        yield {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def lists_every(path: Path, wanted: set[str]) -> bool:
    """Whether `path` lists exactly `wanted` in one literal (server code), in a module-level
    constant (tests and benchmarks: a test's own parametrisation is not a list the next one
    must join), or names all of them in quotes or backticks (a manifest, generated code, a
    reference document)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".py":
        tree = ast.parse(text)
        if path.relative_to(ROOT).parts[0] in ("tests", "benchmarks"):
            constants = [n.value for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))]
            tree = ast.Module(
                body=[ast.Expr(c) for c in constants if c is not None], type_ignores=[]
            )
        return any(found == wanted for found in string_lists(tree))
    return wanted <= set(re.findall(r"[\"'`]([^\"'`\n]{1,80})[\"'`]", text))


def listing_files(names: Iterable[str]) -> set[str]:
    """Files (as the doc writes them) that list every one of `names`: adding one touches them."""
    wanted = set(names)
    found = set()
    for pattern in LISTING_PLACES:
        for path in ROOT.glob(pattern):
            if "tests/data" not in path.as_posix() and lists_every(path, wanted):
                found.add(path.relative_to(ROOT).as_posix().removeprefix("server/codeask/"))
    return found


def constructing(class_name: str) -> set[str]:
    """Modules of the package that call `class_name(...)`, as the doc writes them."""
    return {
        path.relative_to(PACKAGE).as_posix()
        for path in MODULES.values()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id == class_name
    }  # fmt: skip


def kinds_listed() -> dict[str, set[str]]:
    """Each recipe → the files that list every existing thing of its kind (from the code's own
    lists: the MCP server's listing, the LSP messages, the providers, the CLI's commands, the
    languages, the storage backends)."""
    from codeask.cli import COMMANDS
    from codeask.core.llm.registry import PROVIDERS
    from codeask.core.source.languages import LANGUAGES
    from codeask.lsp.messages import MESSAGES
    from codeask.mcp.server import build_server

    backends = ("local", "postgres")  # config.IndexSettings.backend's Literal
    return {
        "a language": listing_files(spec.name for spec in LANGUAGES) | constructing("LanguageSpec"),
        "an LLM provider": listing_files(PROVIDERS),
        "an LSP request": listing_files(m.method for m in MESSAGES if "/" in m.method),
        "an MCP tool": listing_files(tool["name"] for tool in build_server([]).listing()),
        "a CLI command": listing_files(COMMANDS),
        "a storage backend": listing_files(backends)
        | set().union(*(constructing(name) for name in STORAGE_CLASSES)),
    }


def test_each_recipe_lists_the_files_it_counts() -> None:
    """Every row of the recipes table states a count that is the number of files it names;
    every file named exists (a new one: its folder does); the walk-throughs say the same."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    rows = recipe_rows(text)
    assert tuple(rows) == RECIPE_ROWS, f"the recipes table's rows: {list(rows)}"
    for recipe, (count, files) in rows.items():
        assert len(set(files)) == len(files) == count, f"{recipe}: **{count}** but {files}"
        for listed in files:
            path = repo_path(listed)
            where = path.parent if "<name>" in listed else path
            assert where.exists(), f"{recipe}: {listed} does not exist ({where})"
    for recipe, pattern in STATED_ELSEWHERE.items():
        stated = re.search(pattern, text)
        assert stated, f"{recipe}: no count found by {pattern!r}"
        assert int(stated.group(1)) == rows[recipe][0], f"{recipe}: {stated.group(0)}"


def test_every_list_of_a_kind_is_in_its_recipe() -> None:
    """A file that lists every existing thing of a kind (every tool, every provider, every
    custom LSP method...) is a file the next one touches: it must be in that recipe. (Before
    issue 43: the MCP test harness's tool list and a count of five were not.)"""
    rows = recipe_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    for recipe, found in kinds_listed().items():
        missing = sorted(
            f for f in found - set(rows[recipe][1]) if (recipe, f) not in NOT_A_LIST_OF
        )
        assert not missing, (
            f"{recipe}: these files list every one, add them to the recipe: {missing}"
        )


def test_an_operation_on_all_faces_is_the_faces_recipes_together() -> None:
    """The count for an operation on all three faces is derived: the operation's two files, the
    CLI command's, the LSP request's and the MCP tool's files without their tests, and one test
    asking the three faces."""
    rows = recipe_rows(ARCHITECTURE.read_text(encoding="utf-8"))
    faces = ("a CLI command", "an LSP request", "an MCP tool")
    derived = {"core/operations/<name>.py", "core/operations/__init__.py"}
    for recipe in faces:
        derived |= {f for f in rows[recipe][1] if not f.startswith("tests/")}
    count, files = rows["an operation on all three faces"]
    tests = [f for f in files if f.startswith("tests/")]
    assert len(tests) == 1 and set(files) - set(tests) == derived, sorted(derived ^ set(files))
    assert count == len(derived) + 1


def test_the_doc_lists_the_ranking_pipeline_in_order() -> None:
    """docs/architecture.md's Pipeline line names every ranking step, in the order
    core/search/pipeline.py runs them: a step added or moved without the doc fails here."""
    from codeask.core.search.pipeline import step_names

    text = ARCHITECTURE.read_text(encoding="utf-8")
    line = re.search(r"\*\*Pipeline:\*\*(.*?)\n\n", text, re.S)
    assert line, "docs/architecture.md: no **Pipeline:** line"
    assert re.findall(r"`(\w+)`", line.group(1)) == step_names()


def test_every_ranking_step_is_a_module_that_cites_its_measurement() -> None:
    """Each collect and adjust step lives in its own module under core/search/steps/, whose
    docstring says what it was measured to do (a benchmarks/README.md round)."""
    import sys

    from codeask.core.search.pipeline import ADJUST, COLLECT

    for step in (*COLLECT, *ADJUST):
        assert step.__module__.startswith("codeask.core.search.steps."), step.__name__
        doc = sys.modules[step.__module__].__doc__ or ""
        assert "benchmarks/README.md" in doc, f"{step.__module__}: no measured effect cited"


if __name__ == "__main__":  # the circles of today's tree, for notes and reviews
    print(describe(circles(GRAPH)) or "no circles")
