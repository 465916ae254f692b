"""codeask's first pass and a peer's (semble) on one eval, alternating, in one command.

    python -m benchmarks.side_by_side --eval-dir ../shared/eval-search [--rounds 3] [--repos a,b]

Each round runs both runners as child processes, one after the other, the order swapped every
round so that a machine getting busier or quieter does not favour one side: codeask's
`benchmarks.search_eval` (fresh index and vector cache) and the peer's runner (by default
semble 0.7.0 from the eval's `semble/setup.sh` with `semble/run_semble.py`). Both print
`NAME ... chunks=N index=S.SSs` per repository on stderr; the sums are the index time and the
chunk count compared here. Also per run: the child's wall time, its CPU seconds (user + system of
the whole process tree the child waited for: codeask's chunk workers included), its peak RSS, and
the 1-minute load average before and after. The last lines are the ranges over the rounds of
codeask / peer for index time in total, per chunk and CPU: the figure to quote, with its load.

Why: a single ratio measured once on a shared machine did not reproduce in another window; a range
over alternating rounds with the load beside it is what a reader can check by running this again.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.search_eval import DEFAULT_WORK, load_repos, sources_dir

#: A runner's per-repository line on stderr (search_eval.py and run_semble.py print the same).
INDEX_LINE = re.compile(r"chunks=\s*(\d+)\s+index=\s*([0-9.]+)s")


@dataclass(frozen=True)
class RunCost:
    """One runner's run: what it reported and what the process tree cost."""

    side: str
    index_s: float
    chunks: int
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    load_before: float
    load_after: float

    @property
    def per_1k_chunks(self) -> float:
        return self.index_s / self.chunks * 1000 if self.chunks else 0.0


def parse_index_lines(stderr: str) -> tuple[float, int]:
    """Total index seconds and chunks from a runner's per-repository stderr lines."""
    seconds, chunks = 0.0, 0
    for match in INDEX_LINE.finditer(stderr):
        chunks += int(match.group(1))
        seconds += float(match.group(2))
    return seconds, chunks


def load_average() -> float:
    return os.getloadavg()[0]


def run_side(side: str, command: list[str], env: dict[str, str]) -> RunCost:
    """Run one runner to its end; its stderr is kept for the index lines, stdout discarded."""
    load_before = load_average()
    started = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - started
        err.seek(0)
        text = err.read().decode("utf-8", "replace")
    if child.returncode != 0:
        tail = "\n".join(text.splitlines()[-15:])
        raise SystemExit(f"error: {side} exited {child.returncode}: {shlex.join(command)}\n{tail}")
    index_s, chunks = parse_index_lines(text)
    if chunks == 0:
        raise SystemExit(
            f"error: {side} printed no `chunks=N index=Ss` line: {shlex.join(command)}"
        )
    return RunCost(
        side=side,
        index_s=index_s,
        chunks=chunks,
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
        load_before=load_before,
        load_after=load_average(),
    )


def semble_command(eval_dir: Path, sources: Path, out: Path, names: list[str]) -> list[str]:
    """The eval's own semble runner in the venv its setup.sh makes (installed once)."""
    setup = eval_dir / "semble" / "setup.sh"
    if not setup.is_file():
        raise SystemExit(f"error: {setup} not found: name the peer with --peer-cmd")
    venv = subprocess.run(
        ["bash", str(setup)], check=True, capture_output=True, text=True
    ).stdout.strip()
    runner = eval_dir / "semble" / "run_semble.py"
    command = [str(Path(venv) / "bin" / "python"), str(runner), str(sources), str(out)]
    command += [
        "--queries",
        str(eval_dir / "queries.jsonl"),
        "--repos",
        str(eval_dir / "repos.tsv"),
    ]
    return command + names


def codeask_command(eval_dir: Path, work: Path, out: Path, names: list[str]) -> list[str]:
    command = [sys.executable, "-m", "benchmarks.search_eval", "--eval-dir", str(eval_dir)]
    command += ["--work", str(work), "--out", str(out)]
    return command + (["--repos", ",".join(names)] if names else [])


def ratio_range(mine: list[float], theirs: list[float]) -> str:
    ratios = sorted(a / b for a, b in zip(mine, theirs, strict=True) if b)
    if not ratios:
        return "n/a"
    low, high = ratios[0], ratios[-1]
    return f"{low:.2f}x" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}x"


def report(rounds: list[tuple[RunCost, RunCost]]) -> str:
    lines = [
        f"{'round':>5} {'side':8} {'index s':>8} {'chunks':>8} {'s/1k':>6} {'wall s':>7} "
        f"{'cpu s':>7} {'peak MB':>8} {'load':>11}"
    ]
    for number, pair in enumerate(rounds, 1):
        for cost in pair:
            lines.append(
                f"{number:5} {cost.side:8} {cost.index_s:8.1f} {cost.chunks:8} "
                f"{cost.per_1k_chunks:6.3f} {cost.wall_s:7.1f} {cost.cpu_s:7.1f} "
                f"{cost.peak_rss_mb:8.0f} {cost.load_before:5.2f}-{cost.load_after:<5.2f}"
            )
    mine = [pair[0] for pair in rounds]
    theirs = [pair[1] for pair in rounds]
    loads = [c.load_before for pair in rounds for c in pair] + [
        c.load_after for pair in rounds for c in pair
    ]

    def spread(measure: str) -> str:
        return ratio_range(
            [getattr(c, measure) for c in mine], [getattr(c, measure) for c in theirs]
        )

    lines += [
        "",
        f"codeask / {theirs[0].side} over {len(rounds)} round(s), 1-min load "
        f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} cores:",
        f"  index time, total:     {spread('index_s')}",
        f"  index time, per chunk: {spread('per_1k_chunks')}",
        f"  CPU of the whole run:  {spread('cpu_s')}",
        f"  peak RSS (largest process): {spread('peak_rss_mb')}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--eval-dir", type=Path, required=True, help="the eval folder")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both runners (3)")
    parser.add_argument("--repos", default="", help="only these repositories (a,b)")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK, help="unpacked sources")
    parser.add_argument(
        "--peer-cmd",
        help="the peer's runner instead of semble's, with {sources} and {out} in it; it must "
        "print `chunks=N index=S.SSs` per repository on stderr",
    )
    parser.add_argument("--peer-name", default="semble", help="the peer's name in the table")
    args = parser.parse_args(argv)
    eval_dir: Path = args.eval_dir.resolve()
    repos = load_repos(eval_dir / "repos.tsv")
    names = [n for n in args.repos.split(",") if n]
    sources = sources_dir(eval_dir, args.work, [repos[n] for n in names] or list(repos.values()))
    env = dict(os.environ)
    rounds: list[tuple[RunCost, RunCost]] = []
    with tempfile.TemporaryDirectory(prefix="codeask-side-by-side-") as scratch:
        out = Path(scratch)
        if args.peer_cmd:
            peer = [
                part.format(sources=sources, out=out / "peer.jsonl")
                for part in shlex.split(args.peer_cmd)
            ]
        else:
            peer = semble_command(eval_dir, sources, out / "peer.jsonl", names)
        ours = codeask_command(eval_dir, args.work, out / "codeask.jsonl", names)
        for number in range(args.rounds):
            order = [("codeask", ours), (args.peer_name, peer)]
            if number % 2:
                order.reverse()
            costs = {side: run_side(side, command, env) for side, command in order}
            rounds.append((costs["codeask"], costs[args.peer_name]))
            print(f"round {number + 1} of {args.rounds} done", file=sys.stderr, flush=True)
    print(report(rounds), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
