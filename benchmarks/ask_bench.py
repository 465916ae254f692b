"""Ask latency on this repository: prompt assembly, and first streamed token from llama.cpp.

    python -m benchmarks.ask_bench [--root .] [--runs 10] [--no-llm]

1. Indexes the repository (same code path as `codeask index`) into its own index folder
   (default: under /tmp, so the project's `.codeask` is not touched; vectors come from the
   shared embedding cache when this machine has seen the code before).
2. Prompt assembly: `codeask.core.ask.answer.prepare()` (retrieve + editor + git routing +
build_prompt,
   no model call), median and p90 of `--runs` runs per question after one warm-up run, with
   retrieval alone (`search()`) timed the same way. Default settings (an 8k-token budget).
3. First streamed token: starts llama.cpp's server (the prebuilt xllamacpp wheel) with
   SmolLM2-135M on 127.0.0.1 with the tests' launcher, tests/llama_server.py (1 thread,
   n_ctx 2048), and runs `ask()`
   once per question (distinct prompts: only the system prompt prefix can come from
   llama.cpp's cache), the last one again (whole prompt cached), and smaller prompts (k=3,
   k=1). Time to first delta is measured from the call to `ask()`, so it includes prompt
   assembly; the prompt tokens llama.cpp evaluated and its rate come from its log.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import msgspec
from tests.llama_server import LlamaServer, ServerError, llama_server

from codeask.config import load_settings
from codeask.core.ask.answer import AskRequest, ask, prepare
from codeask.core.indexer import FolderIndex
from codeask.core.search.retrieve import search
from codeask.core.storage.lexical.index import expand_query as retrieval_query

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = (
    "how are chunks embedded?",
    "where is the token budget of the prompt computed?",
    "how does the LLM client report a refused connection?",
    "who changed the prompt module recently?",
)


@dataclass
class Timing:
    """Milliseconds of repeated runs."""

    samples: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p90(self) -> float:
        ordered = sorted(self.samples)
        return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def timed(fn: Callable[[], object], runs: int) -> Timing:
    """One warm-up call, then `runs` timed calls."""
    fn()
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - began) * 1000)
    return Timing(samples)


def open_index(root: Path, location: Path) -> FolderIndex:
    """The repository indexed into `location` (incremental: a rerun only updates)."""
    settings, _ = load_settings(root)
    index = msgspec.structs.replace(settings.index, location=str(location))
    folder = FolderIndex(root, msgspec.structs.replace(settings, index=index))
    began = time.perf_counter()
    report = folder.refresh()
    embedded, chunks = folder.embedded_counts()
    print(
        f"index: {chunks} chunks ({embedded} embedded, {report.vectors_computed} computed now), "
        f"{len(folder.storage.history_commits())} commits, {time.perf_counter() - began:.1f} s",
        file=sys.stderr,
    )
    return folder


def assembly_table(folder: FolderIndex, runs: int) -> None:
    """Retrieval and full prompt assembly per question."""
    print(f"\nPrompt assembly (median / p90 of {runs} runs, default 8k-token budget)\n")
    print("| question | retrieve ms | prepare ms | prompt tokens | sources | git |")
    print("|---|---:|---:|---:|---:|---|")
    for question in QUESTIONS:
        request = AskRequest(question, [folder])
        query = retrieval_query(question)
        retrieve = timed(partial(search, [folder], query), runs)
        assembled = timed(partial(prepare, request), runs)
        prepared = prepare(request)
        print(
            f"| {question} | {retrieve.median:.0f} / {retrieve.p90:.0f} "
            f"| {assembled.median:.0f} / {assembled.p90:.0f} | {prepared.prompt.prompt_tokens} "
            f"| {len(prepared.sources)} | {'yes' if prepared.history else 'no'} |"
        )


@dataclass
class Answer:
    """One timed answer."""

    first_ms: float
    total_ms: float
    deltas: int
    prompt_tokens: int
    error: str | None


async def timed_answer(folder: FolderIndex, question: str, k: int | None) -> Answer:
    """ask() with the time of the first delta (from the call, so assembly is included)."""
    first: list[float] = []
    began = time.perf_counter()

    def on_delta(_: str) -> None:
        first.append(time.perf_counter())

    result = await ask(AskRequest(question, [folder], k=k), on_delta)
    end = time.perf_counter()
    return Answer(
        first_ms=((first[0] if first else end) - began) * 1000,
        total_ms=(end - began) * 1000,
        deltas=len(first),
        prompt_tokens=result.prompt_tokens,
        error=result.error,
    )


def latency_table(folder: FolderIndex, server: LlamaServer, max_tokens: int) -> None:
    """First-token latency per question against the real server."""
    llm = server.llm_settings(folder.settings.llm, max_tokens, read_timeout=300.0)
    folder.settings = msgspec.structs.replace(folder.settings, llm=llm)
    print(f"\nFirst streamed token, SmolLM2-135M on llama.cpp (1 thread, n_ctx {server.n_ctx})\n")
    print(
        "| question | k | prompt tokens (our estimate) | cached + evaluated by llama.cpp "
        "(tok/s) | first token ms | done ms |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    runs: list[tuple[str, int | None, str]] = [(q, None, "") for q in QUESTIONS]
    runs.append((QUESTIONS[-1], None, " (same prompt again)"))
    runs += [(QUESTIONS[1], 3, ""), (QUESTIONS[2], 1, "")]
    for question, k, note in runs:
        offset = server.log_size()
        answer = asyncio.run(timed_answer(folder, question, k))
        if answer.error:
            print(f"| {question} | error: {answer.error} |")
            continue
        cached, tokens, rate = server.cached_and_evaluated_since(offset)
        print(
            f"| {question}{note} | {k or folder.settings.retrieve.k} | {answer.prompt_tokens} "
            f"| {cached} + {tokens} ({rate}) | {answer.first_ms:.0f} | {answer.total_ms:.0f} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=REPO)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--index-location", type=Path, default=Path("/tmp/codeask-ask-bench"))
    parser.add_argument("--no-llm", action="store_true", help="prompt assembly only")
    parser.add_argument("--max-tokens", type=int, default=32)
    args = parser.parse_args()
    folder = open_index(args.root.resolve(), args.index_location)
    try:
        assembly_table(folder, args.runs)
        if not args.no_llm:
            try:
                with llama_server(args.index_location) as server:
                    latency_table(folder, server, args.max_tokens)
            except ServerError as exc:  # not installed, or it did not start
                raise SystemExit(str(exc)) from None
    finally:
        folder.close()


if __name__ == "__main__":
    main()
