"""Language-server latency while a full index runs: hover p95, search p95, didSave → searchable.

Starts the real server (`python -m codeask serve`, stdio) on a copy of a folder (default: the
sphinx-5.1.1 sdist fetched by shared/eval/fetch_corpus.py) with an empty embedding cache, so
the whole folder is really being embedded while requests are measured. The copy is needed
because the index lives in `<folder>/.codeask` and the didSave probe edits files.

    .venv/bin/python -m benchmarks.lsp_bench [FOLDER] [--hovers 100] [--searches 50]
        [--saves 5] [--wait-ready] [--embed-threads N] [--keep]

Prints a table (and a one-line summary for benchmarks/README.md). Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tests.support.env import in_process_env
from tests.support.lsp_harness import plain  # the tests' pygls helper, reused

DEFAULT_FOLDER = Path.home() / ".cache/codeask-eval/src/sphinx-5.1.1"
QUERIES = [
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
    "napoleon google style docstring sections",
    "collect toctree entries for the sidebar",
    "emit an event to connected listeners",
    "warn about a duplicate object description",
    "copy static files into the output directory",
    "parse the command line arguments of sphinx-build",
    "incremental build: which documents are outdated",
    "math rendering with mathjax",
    "intersphinx inventory download and cache",
    "format a function signature with type hints",
]


def pct(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank) of `values`."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def hover_positions(root: Path, count: int, seed: int = 7) -> list[tuple[Path, int]]:
    """Lines just inside Python functions (where a user would hover)."""
    spots: list[tuple[Path, int]] = []
    for path in sorted(root.rglob("*.py")):
        if ".codeask" in path.parts:
            continue
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        spots += [(path, i + 1) for i, line in enumerate(lines) if line.lstrip().startswith("def ")]
    random.Random(seed).shuffle(spots)
    return spots[:count]


class Bench:
    """One server session and the measurements taken through it."""

    def __init__(self, client: LanguageClient, root: Path) -> None:
        self.client = client
        self.root = root

    async def request(self, method: str, params: Any) -> Any:
        return plain(await self.client.protocol.send_request_async(method, params))

    async def status(self) -> dict[str, Any]:
        return await self.request("codeask/indexStatus", {})

    async def search(self, query: str, k: int = 10) -> tuple[float, list[dict[str, Any]]]:
        started = time.perf_counter()
        result = await self.request("workspace/semanticSearch", {"query": query, "k": k})
        return time.perf_counter() - started, result["results"]

    async def hover(self, path: Path, line: int) -> tuple[float, bool]:
        params = types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=8),
        )
        started = time.perf_counter()
        result = await self.client.text_document_hover_async(params)
        return time.perf_counter() - started, result is not None

    async def save_to_searchable(self, path: Path, n: int, timeout: float = 60.0) -> float:
        """Append a uniquely named function, didSave, poll search until it is found."""
        name = f"codeask_bench_probe_{n}_{os.getpid()}"
        with path.open("a", encoding="utf-8") as handle:
            handle.write(f'\n\ndef {name}():\n    """Probe {n} of the save benchmark."""\n')
        return await self.save_until_found(
            path.as_uri(), name, lambda hits: any(h["symbol"] == name for h in hits), timeout
        )

    async def save_until_found(
        self, uri: str, query: str, found: Callable[[list[dict[str, Any]]], bool], timeout: float
    ) -> float:
        """didSave `uri`, then search `query` until `found` says so: seconds, inf if never."""
        saved = time.perf_counter()
        self.client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        while time.perf_counter() - saved < timeout:
            _, hits = await self.search(query, k=10)
            if found(hits):
                return time.perf_counter() - saved
            await asyncio.sleep(0.05)
        return float("inf")


async def run(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="codeask-lsp-bench-"))
    root = work / args.folder.name
    print(f"copying {args.folder} → {root}", file=sys.stderr)
    shutil.copytree(args.folder, root, ignore=shutil.ignore_patterns(".codeask"))
    env = in_process_env()
    env.update(XDG_CACHE_HOME=str(work / "xdg"), HF_HUB_OFFLINE="1")
    if args.embed_threads is not None:
        env["CODEASK_EMBED__THREADS"] = str(args.embed_threads)
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "codeask", "serve"], server_env=env
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)
    bench = Bench(client, root)
    rows: list[tuple[str, list[float], str]] = []
    try:
        started = time.perf_counter()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            )
        )
        # lexical phase done, embedding under way: that is "while a full index is running"
        while True:
            status = await bench.status()
            if status["chunks"] and status["percent"] >= 30:
                break
            await asyncio.sleep(0.5)
        searchable = time.perf_counter() - started
        at_start = status
        print(
            f"searchable (lexical) after {searchable:.1f} s: {status['files']} files, "
            f"{status['chunks']} chunks; embedding is running",
            file=sys.stderr,
        )

        hover_times, hover_hits = [], 0
        for path, line in hover_positions(root, args.hovers):
            seconds, shown = await bench.hover(path, line)
            hover_times.append(seconds)
            hover_hits += shown
        rows.append(
            ("hover (indexing)", hover_times, f"{hover_hits}/{len(hover_times)} with links")
        )

        search_times = []
        for i in range(args.searches):
            seconds, _ = await bench.search(QUERIES[i % len(QUERIES)])
            search_times.append(seconds)
        rows.append(("semanticSearch (indexing)", search_times, ""))

        probes = [p for p, _ in hover_positions(root, 10_000) if p.stat().st_size > 2000]
        probes = sorted(set(probes))
        random.Random(3).shuffle(probes)
        save_times = [
            await bench.save_to_searchable(path, n) for n, path in enumerate(probes[: args.saves])
        ]
        rows.append(("didSave → searchable (indexing)", save_times, f"{len(save_times)} files"))
        at_end = await bench.status()

        if args.wait_ready:
            while (status := await bench.status())["state"] != "ready" or status["warming"]:
                await asyncio.sleep(2)
            print(f"index complete after {time.perf_counter() - started:.0f} s", file=sys.stderr)
            warm_hovers = [await bench.hover(p, ln) for p, ln in hover_positions(root, 100)]
            warm_shown = sum(ok for _, ok in warm_hovers)
            rows.append(
                (
                    "hover (warm)",
                    [t for t, _ in warm_hovers],
                    f"{warm_shown}/{len(warm_hovers)} with links",
                )
            )
            warm = [(await bench.search(q))[0] for q in QUERIES * 2]
            rows.append(("semanticSearch (warm)", warm, ""))

        print()
        print(f"folder: {args.folder.name}; {at_end['files']} files, {at_end['chunks']} chunks")
        print(
            f"embedded during the measurements: {at_start['embedded']} → {at_end['embedded']} "
            f"of {at_end['chunks']} chunks"
        )
        print()
        print("| measurement | n | p50 ms | p95 ms | max ms | note |")
        print("|---|---|---|---|---|---|")
        for name, values, note in rows:
            ms = [1000 * v for v in values]
            print(
                f"| {name} | {len(ms)} | {statistics.median(ms):.0f} | {pct(ms, 95):.0f} | "
                f"{max(ms):.0f} | {note} |"
            )
        hover, search, save = rows[0][1], rows[1][1], rows[2][1]
        print()
        print(
            f"README line: LSP on {args.folder.name} while a full index runs (2 cores): hover p95 "
            f"{1000 * pct(hover, 95):.0f} ms, search p95 {1000 * pct(search, 95):.0f} ms, "
            f"didSave→searchable p50 {statistics.median(save):.2f} s / max {max(save):.2f} s"
        )
        await asyncio.wait_for(client.shutdown_session(), 60)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def main() -> int:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("where", nargs="?", type=Path, help=f"folder (default {DEFAULT_FOLDER})")
    parser.add_argument("--folder", type=Path, help="same as the positional folder")
    parser.add_argument("--hovers", type=int, default=100)
    parser.add_argument("--searches", type=int, default=50)
    parser.add_argument("--saves", type=int, default=5)
    parser.add_argument("--wait-ready", action="store_true", help="also measure on a warm index")
    parser.add_argument("--keep", action="store_true", help="keep the copied folder and index")
    parser.add_argument(
        "--embed-threads", type=int, help="ONNX threads for indexing (embed.threads setting)"
    )
    args = parser.parse_args()
    args.folder = (args.where or args.folder or DEFAULT_FOLDER).expanduser().resolve()
    if not args.folder.is_dir():
        parser.error(f"no folder {args.folder} (run shared/eval/fetch_corpus.py)")
    return asyncio.run(run(args))


if __name__ == "__main__":
    raise SystemExit(main())
