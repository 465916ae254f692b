"""Where a language server's bytes go: RSS after each load step of one folder's index (issue 29).

Opens a folder's saved index the way the language server does (`FolderIndex.open`, then its
background warm-up: the in-memory BM25 copy and the symbol table, then the static tier, the
MiniLM model and its int8 query session), runs searches, and prints the resident set size after
each step and what the step added:

    .venv/bin/python -m benchmarks.memory_profile FOLDER [--typed 20] [--reports 5]
        [--tracemalloc] [--json OUT]

FOLDER must have an index (`codeask index --full FOLDER`; sphinx 5.1.1's sdist unpacked by
shared/eval/fetch_corpus.py is the issue's reference). The index is opened read-only, so a
running writer is not disturbed.

What the columns mean:
- `RSS`: VmRSS after the step (resident pages of this process: its heap, plus the shared
  libraries' and mapped files' pages it touched). `anon` is RssAnon: private memory (heap,
  numpy arrays, onnxruntime's arenas), the part a second process cannot share. `file` is
  RssFile: pages of mapped files (.so code, mmap'd data), shared with any other process that
  maps the same file.
- Every row is read after `gc.collect()` and glibc's `malloc_trim(0)`, so it shows what the
  step keeps, not heap it freed but glibc still holds; what a step needed while it ran shows
  in `peak`. A long-running server without the trim holds more (freed arenas are reused, not
  returned).
- `+RSS`: what the step added to VmRSS. Imports are measured one after another, so each row is
  what that module adds beyond those above it (numpy is counted once, where it is first imported).
- `py MB`: with `--tracemalloc`, what the step's Python-level allocations added (numpy arrays
  included: numpy reports its buffers to tracemalloc; onnxruntime's and tokenizers' native
  memory is not seen). tracemalloc itself costs memory and time, so RSS in that run is
  inflated: take RSS from a run without it.
- `sqlite MB`: sqlite3_memory_used() of the process's SQLite library (page caches of every
  open connection: the lexical table and the two embedding caches).
- `peak`: VmHWM, the high-water mark so far.

After the steps come the sizes the objects themselves report (matrix bytes, dict sizes), and
with `--tracemalloc` the top allocation sites of the whole load. Not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import importlib
import json
import os
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

#: Imported one at a time, in this order, before any codeask module (each row: what it adds).
#: fastembed comes later, where the MiniLM model first needs it (as in the server).
IMPORTS = [
    "msgspec",
    "sqlite3",
    "numpy",
    "tokenizers",
    "onnxruntime",
    "tree_sitter_language_pack",
    "codeask.core.indexer",
    "codeask.core.search.retrieve",
    "lsprotocol.types",
    "pygls.lsp.server",
    "codeask.lsp.server",
]

#: Reported at the end when something imported them.
HEAVY = ["onnxruntime", "fastembed", "huggingface_hub", "httpx", "PIL", "pygls", "tokenizers"]

TYPED = [
    "resolve a cross reference to a python object",
    "read the conf.py configuration values",
    "write the html output pages",
    "parse a restructuredtext directive with options",
    "build the search index for html",
    "autodoc documenter for classes",
    "load an extension and call its setup function",
    "translate messages with gettext catalogs",
    "latex writer escapes special characters",
    "check external links for broken urls",
]

#: Pasted reports: the MiniLM tier answers these (typed questions are the static tier's).
REPORTS = [
    "autodoc fails on a class with a metaclass\n\nTraceback (most recent call last):\n"
    '  File "sphinx/ext/autodoc/__init__.py", line 1250, in format_args\n'
    "    sig = inspect.signature(self.object)\nTypeError: unhashable type",
    "linkcheck reports anchors not found for redirected pages\n\n"
    "Steps: run `make linkcheck` on a page that links to a redirect with an #anchor.\n"
    "Expected: the anchor is checked on the final page. Actual: 'Anchor not found'.",
    "napoleon: multiple parameters on one line are rendered wrong\n\n"
    "    x1, x2 : array_like, optional\n        Input arrays, description of x1, x2.\n"
    "renders as one parameter named 'x1, x2'.",
]


def _status() -> dict[str, float]:
    """VmRSS, RssAnon, RssFile and VmHWM of this process, in MB."""
    wanted = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "VmHWM": "peak"}
    out: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in wanted:
            out[wanted[key]] = int(value.split()[0]) / 1024
    return out


def _sqlite_mb() -> float:
    """sqlite3_memory_used() of the library Python's sqlite3 module links (page caches etc.)."""
    try:
        import _sqlite3

        used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
        used.restype = ctypes.c_int64
        return used() / 2**20
    except (ImportError, OSError, AttributeError):
        return float("nan")


def malloc_trim() -> None:
    """Give glibc's free heap pages back: RSS then shows what is live, not what was freed."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


@dataclass
class Row:
    step: str
    rss: float
    anon: float
    file: float
    peak: float
    added: float
    py_mb: float | None
    sqlite_mb: float
    seconds: float
    note: str = ""


@dataclass
class Profile:
    folder: str
    date: str
    load: str
    rows: list[Row] = field(default_factory=list)
    sizes: dict[str, float] = field(default_factory=dict)
    #: Heavy third-party modules loaded by the end (imported by something on the way).
    loaded: list[str] = field(default_factory=list)
    top_sites: list[tuple[str, float]] = field(default_factory=list)


class Meter:
    """Runs steps and records what each one added."""

    def __init__(self, profile: Profile, traced: bool) -> None:
        self.profile = profile
        self.traced = traced
        self._last = _status()["rss"]
        self._last_py = tracemalloc.get_traced_memory()[0] if traced else 0

    def step(self, name: str, run: Callable[[], Any], note: str = "") -> Any:
        started = time.perf_counter()
        result = run()
        seconds = time.perf_counter() - started
        gc.collect()
        malloc_trim()  # freed heap back to the system: the row shows what the step keeps
        status = _status()
        py_mb = None
        if self.traced:
            now = tracemalloc.get_traced_memory()[0]
            py_mb, self._last_py = (now - self._last_py) / 2**20, now
        self.profile.rows.append(
            Row(
                name,
                status["rss"],
                status["anon"],
                status["file"],
                status["peak"],
                status["rss"] - self._last,
                py_mb,
                _sqlite_mb(),
                seconds,
                note,
            )
        )
        self._last = status["rss"]
        return result


def _vector_sizes(store: Any) -> dict[str, float]:
    """Bytes the vector tiers hold (the in-memory matrix's capacity, the rows mapped from the
    snapshot file: the file's pages, resident only while queries scan them; live rows, ids)
    and their Python indexes."""
    sizes: dict[str, float] = {}
    for name in ("vectors", "static"):
        index = store.tiers.tier(name)
        tail = index._tail
        rows = tail._rows
        mapped = index._base.rows.nbytes if index._base is not None else 0
        sizes[f"{name} matrix in memory (capacity) MB"] = rows.nbytes / 2**20
        sizes[f"{name} rows mapped from the file MB"] = mapped / 2**20
        sizes[f"{name} live rows MB"] = len(index.live) * index.dim * rows.itemsize / 2**20
        base_ids = index._base_ids
        sizes[f"{name} ids+slot dict+base id arrays MB"] = (
            tail._ids.nbytes
            + sys.getsizeof(tail.slot)
            + (0 if base_ids is None else 3 * base_ids.ids.nbytes)
        ) / 2**20
    return sizes


def _catalog_sizes(store: Any) -> dict[str, float]:
    """Chunk texts and the structs around them (a lower bound: shared strings counted once)."""
    chunks = list(store.chunks.values())
    seen: set[int] = set()
    total = 0
    text = 0
    for chunk in chunks:
        total += sys.getsizeof(chunk)
        for value in (chunk.path, chunk.language, chunk.kind, chunk.symbol, chunk.parent):
            if id(value) not in seen:
                seen.add(id(value))
                total += sys.getsizeof(value)
        for value in (chunk.text, chunk.docstring):
            total += sys.getsizeof(value)
            text += len(value.encode("utf-8", "surrogatepass"))
        total += sys.getsizeof(chunk.calls) + sum(sys.getsizeof(c) for c in chunk.calls)
        total += sys.getsizeof(chunk.meta)
    total += sys.getsizeof(store.chunks)
    return {
        "chunks": len(chunks),
        "chunk objects (getsizeof) MB": total / 2**20,
        "chunk text+docstring UTF-8 MB": text / 2**20,
    }


def profile_folder(
    root: Path, typed: int, reports: int, traced: bool, query_only: bool = False
) -> Profile:
    """Load one folder's index step by step, as the language server does, and measure each."""
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    profile = Profile(str(root), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load)
    if traced:
        tracemalloc.start(1)
    meter = Meter(profile, traced)
    meter.step("interpreter (python -X ..., stdlib)", lambda: None)
    for module in IMPORTS:
        meter.step(f"import {module}", partial(importlib.import_module, module))

    from codeask.core.embedding.static import load_static_embedder
    from codeask.core.indexer import FolderIndex
    from codeask.core.search.retrieve import search
    from codeask.core.storage.local import LocalStorage

    folder: FolderIndex = meter.step(
        "open index (catalog + vector tiers + lexical segments)",
        lambda: FolderIndex.open(root, mode="read"),
    )
    storage = folder.storage
    local = folder.local  # always the LocalStorage (storage/factory.py), typed by its Protocol
    assert isinstance(local, LocalStorage)
    store, lexical = local.parts()  # measured themselves, not through the Protocol
    meter.step("lexical warm_up (pending rows indexed)", lexical.warm_up)
    meter.step("symbol table", lambda: storage.symbol_ids("__init__"))
    meter.step("static tier model (potion-base-8M)", lambda: load_static_embedder(folder.settings))
    for query in TYPED[:typed]:
        meter.step("typed search", partial(search, [folder], query))
    _merge_repeats(profile, "typed search", typed)
    if reports and query_only:
        meter.step("int8 query session alone (no fastembed)", lambda: _query_only(folder))
    elif reports:
        meter.step("import fastembed", lambda: importlib.import_module("fastembed"))
        meter.step("MiniLM model (fastembed session)", lambda: folder.embedder)
        meter.step("int8 query session (QueryEncoder)", folder.embedder.prepare_queries)
    if reports:
        for query in (REPORTS * reports)[:reports]:
            meter.step("report search (MiniLM + static)", partial(search, [folder], query))
        _merge_repeats(profile, "report search (MiniLM + static)", reports)
    meter.step("end (gc + malloc_trim)", lambda: None)
    profile.sizes.update(_vector_sizes(store))
    profile.sizes.update(_catalog_sizes(store))
    profile.loaded = [name for name in HEAVY if name in sys.modules]
    if traced:
        snapshot = tracemalloc.take_snapshot()
        stats = snapshot.statistics("lineno")[:15]
        profile.top_sites = [(str(s.traceback[0]), s.size / 2**20) for s in stats]
    return profile


def _query_only(folder: Any) -> None:
    """A proposal measured (embed.py is not changed here): MiniLM queries through the int8
    session alone, with fastembed's chunk model left unloaded until a chunk needs embedding.
    On an index whose MiniLM tier is complete (a server at rest, every CLI search) nothing else
    asks for it."""
    import numpy as np  # imported already (IMPORTS); named here for QueryOnly's types

    from codeask.config import cache_dir
    from codeask.core.embedding.embed import (
        PACKAGED_DIM,
        PACKAGED_ONNX_SHA256,
        CachedEmbedder,
        EmbeddingCache,
        model_slug,
        packaged_model_dir,
    )
    from codeask.core.embedding.query_encoder import QueryEncoder

    settings = folder.settings
    root = cache_dir(settings)
    model_dir = packaged_model_dir(root / "models")

    def unavailable(text: str) -> Any:
        raise RuntimeError("the chunk model is not loaded in --query-only")

    encoder = QueryEncoder(
        model_dir,
        PACKAGED_ONNX_SHA256,
        max_tokens=settings.embed.query_tokens,
        int8=True,
        threads=settings.embed.threads,
        fallback=unavailable,
    )

    class QueryOnly:
        name, dim = settings.embed.model, PACKAGED_DIM

        def embed(self, texts: Sequence[str], lanes: int = 1) -> np.ndarray:
            raise RuntimeError("the chunk model is not loaded in --query-only")

        def embed_query(self, text: str, lead: str = "", lead_weight: float = 0.0) -> Any:
            return encoder.encode(text, lead, lead_weight)

    path = root / "embeddings" / f"{model_slug(settings.embed.model)}.sqlite"
    embedder = CachedEmbedder(QueryOnly(), EmbeddingCache(path, PACKAGED_DIM))
    folder.embedding._embedder = embedder


def _merge_repeats(profile: Profile, name: str, count: int) -> None:
    """N rows of the same search → one row: RSS after the last, what all of them added."""
    rows = [r for r in profile.rows if r.step == name]
    if len(rows) < 2:
        return
    first = profile.rows.index(rows[0])
    merged = Row(
        f"{name} x{len(rows)}",
        rows[-1].rss,
        rows[-1].anon,
        rows[-1].file,
        rows[-1].peak,
        sum(r.added for r in rows),
        None if rows[0].py_mb is None else sum(r.py_mb or 0 for r in rows),
        rows[-1].sqlite_mb,
        sum(r.seconds for r in rows),
        f"first {rows[0].seconds * 1000:.0f} ms, +{rows[0].added:.1f} MB",
    )
    profile.rows = [r for r in profile.rows if r.step != name]
    profile.rows.insert(first, merged)


def print_table(profile: Profile) -> None:
    print(f"# {profile.folder}  ({profile.date}, load average {profile.load})")
    head = f"| {'step':52} | {'RSS':>6} | {'+RSS':>6} | {'anon':>6} | {'file':>5} | {'py MB':>6} "
    print(head + f"| {'sqlite':>6} | {'peak':>6} | {'s':>6} | note |")
    print("|" + "---|" * 10)
    for r in profile.rows:
        py = "" if r.py_mb is None else f"{r.py_mb:6.1f}"
        print(
            f"| {r.step:52} | {r.rss:6.1f} | {r.added:+6.1f} | {r.anon:6.1f} | {r.file:5.1f} "
            f"| {py:>6} | {r.sqlite_mb:6.1f} | {r.peak:6.1f} | {r.seconds:6.2f} | {r.note} |"
        )
    print(f"\nheavy modules loaded by the end: {', '.join(profile.loaded) or 'none'}")
    if profile.sizes:
        print("\nsizes the objects report:")
        for key, value in profile.sizes.items():
            print(f"  {key:40} {value:10.1f}")
    if profile.top_sites:
        print("\ntracemalloc top sites (live at the end, MB):")
        for site, mb in profile.top_sites:
            print(f"  {mb:7.1f}  {site}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--typed", type=int, default=10, help="typed questions to search")
    parser.add_argument("--reports", type=int, default=3, help="pasted reports (0: no MiniLM)")
    parser.add_argument("--tracemalloc", action="store_true", help="Python-level attribution")
    parser.add_argument(
        "--query-only",
        action="store_true",
        help="MiniLM queries through the int8 session alone, fastembed never loaded (a proposal)",
    )
    parser.add_argument("--json", type=Path, help="also write the profile as JSON here")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    profile = profile_folder(
        args.folder.resolve(), args.typed, args.reports, args.tracemalloc, args.query_only
    )
    print_table(profile)
    if args.json:
        args.json.write_text(json.dumps(asdict(profile), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
