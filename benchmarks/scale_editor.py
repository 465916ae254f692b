"""Step 4b of benchmarks/scale.py: an editor's save made searchable by the real language server.

The edit a user makes arrives through the editor: `codeask serve` (stdio, in-process, the daemon
off and stopped, so this server opens the already-indexed tree as the index's writer) gets
didOpen, then per save didChange + didSave of a C file with a new uniquely named function
appended (the file replaced, never written through a hard link to the source), and its index
driver reindexes that one file. Timed from didSave until `workspace/semanticSearch` for the new
name ranks the file. The server's process tree (benchmarks.proc_tree's marker) is sampled every
~100 ms: resting RSS once it is ready, the peak above it during the saves, CPU spent by them.
lsp_bench's client pieces are reused (its `Bench` requests).

The server runs with `embed.tiers = ["static"]`: with the model tier configured, the server
fills the MiniLM backlog on open (the first pass leaves it to the server) and reports `indexing`
until it is done, ~17 chunks/s on 2 shared cores (kernel/: 22,733 chunks, ~20 min; the whole
kernel's 1.28M chunks: about a day), so it would never be `ready` and the backlog's CPU and
memory would swamp a save's. The static tier is what the first pass built: nothing is rebuilt.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from benchmarks.lsp_bench import Bench
from benchmarks.proc_tree import MARKER, SAMPLE_S, Tree

#: The server's vector tiers (see above), as a `CODEASK_EMBED__TIERS` value.
TIERS = '["static"]'
#: Seconds the server may take to open the index and report `ready`.
READY_WAIT_S = 900.0
#: Seconds one saved function may take to become searchable before the save counts as lost.
SAVE_WAIT_S = 120.0


@dataclass
class Sampler:
    """The RSS of the server's process tree, sampled until stopped."""

    procs: Tree
    peak_mb: float = 0.0
    peak_single_mb: float = 0.0
    running: bool = True

    async def run(self) -> None:
        while self.running:
            sizes = self.procs.sizes_mb()
            self.peak_mb = max(self.peak_mb, sum(sizes))
            self.peak_single_mb = max([self.peak_single_mb, *sizes])
            await asyncio.sleep(SAMPLE_S)


@dataclass
class EditorSaves:
    """What step 4b measured."""

    relative: str
    ready_s: float
    seconds: list[float] = field(default_factory=list)
    resting_mb: float = 0.0
    peak_mb: float = 0.0
    peak_single_mb: float = 0.0
    after_mb: float = 0.0
    #: What the first search mapped and loaded (in the resting figure, as for step 4's daemon).
    first_search_mb: float = 0.0
    #: The tree's RSS above resting after each save (a first save's lasting cost shows here).
    steps_mb: list[float] = field(default_factory=list)
    #: (RssAnon, RssFile) of the tree at rest and after each save: heap vs mapped index pages.
    split_resting: tuple[float, float] = (0.0, 0.0)
    split_steps: list[tuple[float, float]] = field(default_factory=list)
    cpu_s: float = 0.0
    status_before: dict[str, Any] = field(default_factory=dict)
    status_after: dict[str, Any] = field(default_factory=dict)

    def figure(self) -> str:
        found = [s for s in self.seconds if s != float("inf")]
        lost = len(self.seconds) - len(found)
        times = (
            f"p50 {statistics.median(found):.2f} s / max {max(found):.2f} s" if found else "none"
        )
        before, after = self.status_before, self.status_after
        rest = self.resting_mb
        embedded = f"{before.get('embedded', 0):,} -> {after.get('embedded', 0):,} of "
        embedded += f"{after.get('chunks', 0):,} chunks, warming {after.get('warming')}"
        return (
            f"{len(self.seconds)} saves of {self.relative}: {times}"
            f"{f', {lost} NOT found' if lost else ''}; server (writer, daemon stopped, "
            f"embed.tiers {TIERS}) ready in "
            f"{self.ready_s:.1f} s; resting {rest:.0f} MB (after a first search: "
            f"{self.first_search_mb:+.0f} MB), peak "
            f"+{self.peak_mb - rest:.0f} MB, after +{self.after_mb - rest:.0f} MB (each save: "
            f"{', '.join(f'{m:+.0f}' for m in self.steps_mb)}; {self.split_text()}); "
            f"slowest tier {embedded}; server CPU {self.cpu_s:.2f} s"
        )

    def split_text(self) -> str:
        """Resting RssAnon/RssFile and each save's change of both: heap or mapped pages."""
        anon, mapped = self.split_resting
        steps = ", ".join(f"{a - anon:+.0f}/{f - mapped:+.0f}" for a, f in self.split_steps)
        return f"anon/file resting {anon:.0f}/{mapped:.0f} MB, each save {steps}"


def rss_split(procs: Tree) -> tuple[float, float]:
    """(RssAnon, RssFile) summed over the run's processes, MB (/proc/PID/status)."""
    anon = mapped = 0.0
    for pid in procs.members():
        try:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            key, _, value = line.partition(":")
            if key == "RssAnon":
                anon += int(value.split()[0]) / 1024
            elif key == "RssFile":
                mapped += int(value.split()[0]) / 1024
    return anon, mapped


def accept_registrations(client: LanguageClient) -> None:
    """Answer `client/registerCapability` as an editor does: the server then relies on the
    client's file watcher instead of rescanning the tree periodically (which a save would race)."""

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        return None


def open_params(path: Path, text: str) -> types.DidOpenTextDocumentParams:
    item = types.TextDocumentItem(uri=path.as_uri(), language_id="c", version=1, text=text)
    return types.DidOpenTextDocumentParams(text_document=item)


async def save_once(bench: Bench, path: Path, version: int) -> float:
    """Append a new function (file replaced), didChange + didSave, poll search until the file
    ranks for its name: seconds from didSave, inf when it never does."""
    from benchmarks.scale import replace_with_appended  # scale imports this module

    name = f"codeask_editor_probe_{version}_{secrets.token_hex(3)}"
    replace_with_appended(path, f"\nint {name}(int budget)\n{{\n\treturn budget * 3;\n}}\n")
    text = path.read_text(encoding="utf-8", errors="replace")
    uri = path.as_uri()
    bench.client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    return await bench.save_until_found(
        uri, name, lambda hits: any(hit["uri"] == uri for hit in hits), SAVE_WAIT_S
    )


async def wait_ready(bench: Bench) -> dict[str, Any]:
    """The server's status once its folder is loaded (`ready`; the model tier may be warming)."""
    deadline = time.perf_counter() + READY_WAIT_S
    said = 0.0
    while time.perf_counter() < deadline:
        status = await bench.status()
        if status["state"] == "ready" and status["files"]:
            return status
        if time.perf_counter() - said > 10:
            said = time.perf_counter()
            folders = [(f["state"], f["message"]) for f in status["folders"]]
            print(f"# 4b: server {status['state']} {status['percent']}% {folders}", file=sys.stderr)
        await asyncio.sleep(0.25)
    raise SystemExit(f"error: the language server was not ready within {READY_WAIT_S:.0f} s")


async def measure(tree: Path, target: Path, env: dict[str, str], saves: int) -> EditorSaves:
    """Start `codeask serve` on `tree`, `saves` saves of `target`, the server stopped after."""
    procs = Tree(secrets.token_hex(6))
    marker = procs.marker.decode().split("=", 1)[1]
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "codeask", "serve"], server_env=env | {MARKER: marker}
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)
    accept_registrations(client)
    bench = Bench(client, tree)
    try:
        started = time.perf_counter()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                workspace_folders=[types.WorkspaceFolder(uri=tree.as_uri(), name=tree.name)],
            )
        )
        result = EditorSaves(target.relative_to(tree).as_posix(), 0.0)
        result.status_before = await wait_ready(bench)
        result.ready_s = time.perf_counter() - started
        client.text_document_did_open(open_params(target, target.read_text(errors="replace")))
        await asyncio.sleep(1.0)  # settle: what didOpen starts is not a save's cost
        opened_mb = procs.rss_mb()
        await bench.search(target.stem)  # an editor's server has answered a search before
        result.resting_mb = procs.rss_mb()
        result.split_resting = rss_split(procs)
        result.first_search_mb = result.resting_mb - opened_mb
        cpu_before = sum(procs.members().values())
        sampler = Sampler(procs, result.resting_mb, max(procs.sizes_mb(), default=0.0))
        sampling = asyncio.create_task(sampler.run())
        for version in range(2, saves + 2):
            result.seconds.append(await save_once(bench, target, version))
            result.steps_mb.append(procs.rss_mb() - result.resting_mb)
            result.split_steps.append(rss_split(procs))
        sampler.running = False
        await sampling
        result.cpu_s = sum(procs.members().values()) - cpu_before
        result.peak_mb, result.peak_single_mb = sampler.peak_mb, sampler.peak_single_mb
        result.after_mb = procs.rss_mb()
        result.status_after = await bench.status()
        await asyncio.wait_for(client.shutdown_session(), 60)
        return result
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()


def editor_saves(tree: Path, target: Path, env: dict[str, str], saves: int) -> EditorSaves:
    """`measure` from synchronous code (scale.py's steps)."""
    server_env = env | {"PYTHONUNBUFFERED": "1", "CODEASK_EMBED__TIERS": TIERS}
    return asyncio.run(measure(tree, target, server_env, saves))
