"""One policy, one implementation (issue 43): checked on the source with `ast`, nothing imported.

- The request limits are one table (`core/source/limits.py`) for every face: no other module
  assigns a table of field limits, or a constant of that module under the same name.
- The path guard is one module (`core/operations/paths.py`) for every face: no other module
  calls itself a path guard, and no face reads a workspace file or asks discovery about one
  by itself (`check_file`, `safe_read`): each goes through the guard.
- A folder's MiniLM query path is loaded one way (`core/operations/query_model.py`): nothing
  else outside the embedding room calls `prepare_queries`.
- The long-running index loop is one driver per folder (`core/driver/`): nothing else calls what
  only such a loop needs (the embedding backlog, following or taking over the writer lock,
  another process's rebuild request, the team-base retry, a HEAD move's changed files).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "codeask"
LIMITS = PACKAGE / "core" / "source" / "limits.py"
GUARD = PACKAGE / "core" / "operations" / "paths.py"
FACES = ("lsp", "mcp", "cli", "daemon")
#: What only the guard may use for a request: discovery's verdict on one file, the bounded read.
GUARDED = ("codeask.core.source.discover.check_file", "codeask.core.source.safe_read")
#: Fields a request or a tool takes: a dict keyed by two of them is a limits table.
REQUEST_FIELDS = frozenset({"query", "question", "uri", "path", "pathGlob", "since", "author"})


def modules() -> Iterator[Path]:
    yield from sorted(PACKAGE.rglob("*.py"))


def module_constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level `NAME = value` and `NAME: type = value` assignments of upper-case names."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper():
                found[target.id] = value
    return found


def is_limits_table(value: ast.expr) -> bool:
    """A dict literal keyed by at least two request fields with numbers as values."""
    if not isinstance(value, ast.Dict):
        return False
    keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
    numbers = all(
        isinstance(v, ast.BinOp) or (isinstance(v, ast.Constant) and isinstance(v.value, int))
        for v in value.values
    )
    return numbers and len(keys & REQUEST_FIELDS) >= 2


def second_limits(source: str, table: dict[str, ast.expr]) -> list[str]:
    """The limits tables in `source`, and constants the one table's module already defines."""
    found = []
    for name, value in module_constants(ast.parse(source)).items():
        if is_limits_table(value):
            found.append(f"{name} is a table of request limits")
        elif name in table:
            found.append(f"{name} is already a limit in core/source/limits.py")
    return found


def test_one_limits_table_for_every_face() -> None:
    table = module_constants(ast.parse(LIMITS.read_text(encoding="utf-8")))
    assert is_limits_table(table["MAX_CHARS"])
    found = [
        f"{path.relative_to(PACKAGE)}: {problem}"
        for path in modules()
        if path != LIMITS
        for problem in second_limits(path.read_text(encoding="utf-8"), table)
    ]
    assert not found, "a second limits table (use core/source/limits.py):\n" + "\n".join(found)


def test_a_second_limits_table_is_caught() -> None:
    """The check on sources like the two tables that were (lsp/limits.py, mcp/limits.py)."""
    table = module_constants(ast.parse(LIMITS.read_text(encoding="utf-8")))
    mcp_like = 'MAX_CHARS: dict[str, int] = {"query": 20_000, "since": 10}\nMAX_K = 50\n'
    assert second_limits(mcp_like, table) == [
        "MAX_CHARS is a table of request limits",
        "MAX_K is already a limit in core/source/limits.py",
    ]
    assert second_limits('LIMITS = {"uri": 4 * 1024, "pathGlob": 1_000}\n', table)
    assert not second_limits('WORDS = {"query": "q", "since": "s"}\nOTHER = 3\n', table)


def test_the_faces_differ_only_where_the_table_says() -> None:
    """MCP takes a date only for `since`/`until` (10 characters), the language server git's
    date words (64): the difference is data with its reason, read through `max_chars`."""
    from codeask.core.source.limits import MAX_CHARS, NARROWER, max_chars

    assert max_chars("mcp", "since") == 10 and max_chars("lsp", "since") == 64
    for (face, field), (limit, reason) in NARROWER.items():
        assert limit < MAX_CHARS[field] and reason, (face, field)
        assert max_chars(face, field) == limit


def guard_bypasses(source: str) -> list[str]:
    """Imports in `source` of what only the path guard may use (`from a import b` as `a.b`)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [n for n in names if any(n == g or n.startswith(g + ".") for g in GUARDED)]
    return found


def claims_path_guard(source: str) -> bool:
    """The module's docstring says it is a path guard (both old ones did: "the one path guard",
    "The MCP server's path guard")."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    return "path guard" in doc.split("\n\n")[0].lower()


def test_one_path_guard_for_every_face() -> None:
    sources = {path: path.read_text(encoding="utf-8") for path in modules()}
    guards = sorted(
        str(p.relative_to(PACKAGE)) for p, text in sources.items() if claims_path_guard(text)
    )
    assert guards == ["core/operations/paths.py"], f"path guards: {guards}"
    bypasses = [
        f"{path.relative_to(PACKAGE)} imports {name}"
        for path, text in sources.items()
        if path.relative_to(PACKAGE).parts[0] in FACES
        for name in guard_bypasses(text)
    ]
    assert not bypasses, "faces going round the path guard:\n" + "\n".join(bypasses)
    assert guard_bypasses(sources[GUARD])  # the rule sees the imports it looks for


def test_a_second_path_guard_is_caught() -> None:
    """The check on the two guards that were: lsp/paths.py and mcp/paths.py."""
    lsp_like = (
        '"""The one path guard: which files a request may read from disk."""\n'
        "from codeask.core.source.discover import SourceFile, check_file\n"
        "from codeask.core.source.safe_read import read_regular_text\n"
    )
    assert claims_path_guard(lsp_like)
    assert guard_bypasses(lsp_like) == [
        "codeask.core.source.discover.check_file",
        "codeask.core.source.safe_read.read_regular_text",
    ]
    assert claims_path_guard('"""The MCP server\'s path guard: which files a tool may read."""')
    assert not claims_path_guard('"""Paths of the daemon.\n\nNot a path guard."""')
    assert not guard_bypasses("from codeask.core.source.discover import discover\n")


QUERY_MODEL = PACKAGE / "core" / "operations" / "query_model.py"
EMBEDDING = PACKAGE / "core" / "embedding"


def query_path_loads(source: str) -> list[int]:
    """Lines of `source` that call or pass on `.prepare_queries`."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr == "prepare_queries"
    ]


def test_one_query_model_loading_for_every_face() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in modules()
        if path != QUERY_MODEL and EMBEDDING not in path.parents
        for line in query_path_loads(path.read_text(encoding="utf-8"))
    ]
    assert not found, "the query model loaded outside core/operations/query_model.py:\n" + (
        "\n".join(found)
    )
    assert query_path_loads(QUERY_MODEL.read_text(encoding="utf-8"))


def test_a_second_query_model_loading_is_caught() -> None:
    """The check on the three that were (operations/search, mcp/folders, lsp/folders/backlog)."""
    assert query_path_loads("def _load(folder):\n    folder.embedder.prepare_queries()\n") == [2]
    assert query_path_loads("self._guarded(folder.embedder.prepare_queries)\n") == [1]
    assert query_path_loads("def prepare_queries(self):\n    return None\n") == []


DRIVER = PACKAGE / "core" / "driver"
#: What only a long-running index loop calls, and the rooms that define them (they may call
#: their own): `embed_pending` (the backlog), `try_promote` / `reload_if_changed` (follow or
#: take over the writer lock), `take_request` (a rebuild another process asked for),
#: `retry_base` (the team database back), `changed_between` (a HEAD move's files).
LOOP_CALLS = frozenset(
    {"embed_pending", "try_promote", "reload_if_changed", "take_request", "retry_base",
     "changed_between"}
)  # fmt: skip
DEFINING_ROOMS = tuple(PACKAGE / "core" / room for room in ("indexer", "storage", "git"))


def loop_calls(source: str) -> list[str]:
    """`line: name` of each call in `source` to what only an index loop calls."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in LOOP_CALLS:
            found.append((node.lineno, name))
    return [f"{line}: {name}" for line, name in sorted(found)]


def test_one_index_loop_for_every_face() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{call}"
        for path in modules()
        if DRIVER not in path.parents and not any(room in path.parents for room in DEFINING_ROOMS)
        for call in loop_calls(path.read_text(encoding="utf-8"))
    ]
    assert not found, "a second index loop (use core/driver's FolderWorker):\n" + "\n".join(found)
    in_driver = {
        call.split(": ")[1]
        for path in DRIVER.glob("*.py")
        for call in loop_calls(path.read_text(encoding="utf-8"))
    }
    assert in_driver == LOOP_CALLS  # the rule sees the calls it looks for


def test_a_second_index_loop_is_caught() -> None:
    """The check on the loop that was (mcp/folders.py's FolderDriver: its poll and backlog)."""
    mcp_like = (
        "def _poll(self):\n"
        "    if not folder.try_promote():\n"
        "        folder.reload_if_changed()\n"
        "    rebuild = take_request(folder.folder, 'rebuild')\n"
        "def _embed(self, folder):\n"
        "    report = folder.embed_pending(progress=self._progress, cancel=self._token)\n"
    )
    assert loop_calls(mcp_like) == [
        "2: try_promote",
        "3: reload_if_changed",
        "4: take_request",
        "6: embed_pending",
    ]
    assert not loop_calls("folder.refresh(embed=False)\nembed_pending = 1\n")


REGISTRY = DRIVER / "shared.py"
#: What a session holds of a folder's driver: a registry keeps these for every session.
DRIVER_TYPES = frozenset({"FolderWorker", "FolderDriver", "Subscription"})


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def registries(source: str) -> list[str]:
    """`line: what` for each place in `source` that builds a folder's worker itself or keeps
    drivers counted by their users (a `dict[..., tuple[<driver>, int]]`): both are a
    registry of drivers of its own, beside core/driver/shared.py's."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and "FolderWorker" in _names(node.func):
            found.append((node.lineno, "builds a FolderWorker"))
        elif isinstance(node, ast.Subscript) and _names(node.value) == {"dict"}:
            counted = [
                t
                for t in ast.walk(node.slice)
                if isinstance(t, ast.Subscript)
                and _names(t.value) == {"tuple"}
                and _names(t.slice) & DRIVER_TYPES
                and "int" in _names(t.slice)
            ]
            if counted:
                found.append((node.lineno, "counts the users of drivers"))
    return [f"{line}: {what}" for line, what in sorted(set(found))]


def test_one_driver_registry_for_every_session() -> None:
    """Every session holding a folder (editor, agent, in the daemon or alone) subscribes
    through core/driver/shared.py's `SharedDrivers`; nothing else builds a worker."""
    found = [
        f"{path.relative_to(PACKAGE)}:{what}"
        for path in modules()
        if path != REGISTRY
        for what in registries(path.read_text(encoding="utf-8"))
    ]
    assert not found, "a second driver registry (use core/driver/shared.py):\n" + "\n".join(found)
    assert registries(REGISTRY.read_text(encoding="utf-8"))  # the rule sees the one


def test_a_second_driver_registry_is_caught() -> None:
    """The check on the registries that were: mcp/remote.py's `SharedFolders` (root → the
    driver and its users) and lsp/folders' `Folders` (a worker per editor session)."""
    mcp_like = (
        "class SharedFolders:\n"
        "    def __init__(self):\n"
        "        self._held: dict[Path, tuple[FolderDriver, int]] = {}\n"
    )
    assert registries(mcp_like) == ["3: counts the users of drivers"]
    lsp_like = "worker = FolderWorker(root, editor, self.workspace, self._host)\n"
    assert registries(lsp_like) == ["1: builds a FolderWorker"]
    assert not registries("self._subs: dict[Path, Subscription] = {}\nsub.worker.schedule(r, 0)\n")
