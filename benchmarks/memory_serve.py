"""The real language server's memory on an indexed folder (issue 29): RSS at rest and its peak.

Starts `python -m codeask serve` (stdio) on FOLDER as an editor would (its index already built,
e.g. by `codeask index --full FOLDER`), waits until the folder is ready and warm, asks typed
questions and pasted reports through `workspace/semanticSearch`, then samples the server's
VmRSS for a while:

    .venv/bin/python -m benchmarks.memory_serve FOLDER [--settle 20] [--cold] [--mmap-threshold N]

Prints RSS when ready, after the searches, at rest (the last sample), and VmHWM (the peak of
the whole session: the open, the BM25 copy's build, the models). `--cold` removes the folder's
index first, so the peak is a cold index's (slow: every chunk is embedded unless the embedding
cache knows it). The server's environment is this process's (set XDG_CACHE_HOME to use another
model and embedding cache; PYTHONPATH to run another checkout).

`--mmap-threshold N` starts the server through `mallopt(M_MMAP_THRESHOLD, N)` first (a
proposal: glibc then serves every block of N bytes or more from its own mapping, returned at
`free`, instead of raising the threshold after the first big free and keeping what the BM25
build and the model loads freed). `--modules` also prints which heavy modules (numpy,
onnxruntime, fastembed, httpx, pygit2, ...) the server has imported at rest (a SIGUSR1 handler
writes `sys.modules` to a file), and its RSS after glibc's `malloc_trim` (SIGUSR2): memory the
heap holds though it was freed. `--health` also asks `codeask/health` once the folder is ready,
as VS Code does at start (the probe imports the LLM client: httpx). Not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tests.support.env import in_process_env

from benchmarks.lsp_bench import Bench
from benchmarks.memory_profile import REPORTS, TYPED


def server_status(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon, RssFile and VmHWM of a process, in MB."""
    wanted = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file", "VmHWM": "peak"}
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in wanted:
            out[wanted[key]] = int(value.split()[0]) / 1024
    return out


def show(label: str, status: dict[str, float]) -> None:
    print(
        f"| {label:34} | {status['rss']:6.1f} | {status['anon']:6.1f} | {status['file']:5.1f} "
        f"| {status['peak']:6.1f} |"
    )


#: glibc's mallopt parameter number of M_MMAP_THRESHOLD (malloc.h).
M_MMAP_THRESHOLD = -3
WITH_MALLOPT = (
    "import ctypes, sys; ctypes.CDLL('libc.so.6').mallopt({param}, {size}); "
    "from codeask.cli import main; sys.exit(main(['serve']))"
)


#: Starts the server with a SIGUSR1 handler that writes the names of its imported modules.
WITH_MODULE_DUMP = (
    "import ctypes, signal, sys; signal.signal(signal.SIGUSR1, lambda *_: open({out!r}, 'w')"
    ".write('\\n'.join(sorted(sys.modules)))); "
    "import time; trim = ctypes.CDLL(None).malloc_trim; "
    "signal.signal(signal.SIGUSR2, lambda *_: (t := time.perf_counter(), trim(0), "
    "print(f'malloc_trim {{(time.perf_counter() - t) * 1000:.1f}} ms', file=sys.stderr))); "
    "from codeask.cli import main; sys.exit(main(['serve']))"
)
#: Third-party modules worth naming when the server holds them (each costs 2-36 MB of RSS).
HEAVY = [
    "numpy", "onnxruntime", "tokenizers", "fastembed", "huggingface_hub", "PIL", "httpx",
    "pygit2", "tree_sitter_language_pack", "lsprotocol", "pygls", "cattrs", "msgspec",
]  # fmt: skip


async def trim_probe(pid: int) -> None:
    """glibc's malloc_trim in the server (SIGUSR2): its RSS without what the heap freed."""
    os.kill(pid, signal.SIGUSR2)
    await asyncio.sleep(2)
    show("  after malloc_trim (probe)", server_status(pid))


async def loaded_modules(pid: int, out: Path) -> list[str]:
    """The heavy modules the server process has imported (asked by SIGUSR1)."""
    out.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    for _ in range(50):
        if out.exists() and out.stat().st_size:
            break
        await asyncio.sleep(0.1)
    names = set(out.read_text().split()) if out.exists() else set()
    return [name for name in HEAVY if name in names]


async def run(
    folder: Path,
    settle: float,
    cold: bool,
    mmap_threshold: int,
    modules: bool = False,
    health: bool = False,
) -> int:
    if cold:
        shutil.rmtree(folder / ".codeask", ignore_errors=True)
    env = in_process_env()
    env.setdefault("HF_HUB_OFFLINE", "1")
    command = [sys.executable, "-m", "codeask", "serve"]
    if mmap_threshold:
        code = WITH_MALLOPT.format(param=M_MMAP_THRESHOLD, size=mmap_threshold)
        command = [sys.executable, "-c", code]
    dump = Path(f"/tmp/codeask-memory-serve-{os.getpid()}.modules")
    if modules:
        command = [sys.executable, "-c", WITH_MODULE_DUMP.format(out=str(dump))]
    config = ClientServerConfig(server_command=command, server_env=env)
    client = await config.start()
    assert isinstance(client, LanguageClient)
    pid = client._server.pid if client._server is not None else 0
    bench = Bench(client, folder)
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(
        f"# codeask serve on {folder} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {load})"
    )
    print(f"| {'moment':34} | {'RSS':>6} | {'anon':>6} | {'file':>5} | {'peak':>6} |")
    print("|---|---|---|---|---|")
    try:
        started = time.perf_counter()
        await client.initialize_session(
            types.InitializeParams(
                capabilities=client_capabilities("visual-studio-code"),
                workspace_folders=[types.WorkspaceFolder(uri=folder.as_uri(), name=folder.name)],
            )
        )
        while (status := await bench.status())["state"] != "ready" or status["warming"]:
            await asyncio.sleep(1)
        ready = time.perf_counter() - started
        show(f"ready and warm ({ready:.0f} s)", server_status(pid))
        if health:
            await bench.request("codeask/health", {})
            show("after codeask/health", server_status(pid))
        if modules:
            await trim_probe(pid)
        for query in TYPED:
            await bench.search(query)
        show(f"after {len(TYPED)} typed searches", server_status(pid))
        for query in REPORTS:
            await bench.search(query)
        show(f"after {len(REPORTS)} report searches", server_status(pid))
        samples = []
        deadline = time.perf_counter() + settle
        while time.perf_counter() < deadline:
            samples.append(server_status(pid))
            await asyncio.sleep(0.5)
        show(f"at rest ({settle:.0f} s later)", samples[-1])
        if modules:
            await trim_probe(pid)
            print(f"\nheavy modules imported at rest: {', '.join(await loaded_modules(pid, dump))}")
        await asyncio.wait_for(client.shutdown_session(), 60)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        await client.stop()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds sampled at rest")
    parser.add_argument("--cold", action="store_true", help="remove the index first")
    parser.add_argument(
        "--mmap-threshold", type=int, default=0, help="mallopt(M_MMAP_THRESHOLD, N) first"
    )
    parser.add_argument(
        "--modules", action="store_true", help="print the heavy modules imported at rest"
    )
    parser.add_argument(
        "--health", action="store_true", help="ask codeask/health when ready (as VS Code does)"
    )
    args = parser.parse_args()
    folder = args.folder.resolve()
    return asyncio.run(
        run(folder, args.settle, args.cold, args.mmap_threshold, args.modules, args.health)
    )


if __name__ == "__main__":
    raise SystemExit(main())
