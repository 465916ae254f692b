"""Step 3r of benchmarks.scale: pasted bug reports about the kernel, and what the model tier does.

The issue's line "a pasted report on the kernel answers in <= 3 s with the model tier's help
where it helps; no setting needs a day-long pass" measured on the tree `benchmarks.scale` built.
`benchmarks/data/kernel_reports.jsonl` holds reports as users paste them (an oops or KASAN
trace, a syzbot report, a mailing-list description with a call trace), each with its answer
file(s). Each is asked

- `codeask search --no-daemon` with the default settings (the packaged MiniLM does not rank C
  reports on demand: `core/search/model_gate.py`),
- the same with the model tier forced on (`retrieve.model_tier_for = "reports"`), first with
  the on-demand and embedding caches emptied (cold), then again (warm),
- through the run's warm daemon, and through a daemon started with the model tier forced on
  (warmed by a report of its own), with the caches emptied, then again.

Each row: wall / CPU / peak RSS of the process tree (sums over the reports; peaks the largest),
the slowest report, R@5 / MRR, which tiers answered, and what the model tier covered: chunks
embedded on demand (rows the folder's on-demand cache gained) and candidates read from a cache.
The last row is `codeask status`'s account of the model tier: on a tree this size it is filled
on demand, never by a pass over every chunk.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks.proc_tree import Cost
from codeask.config import build_settings
from codeask.core.embedding.on_demand import ON_DEMAND_FILE
from codeask.core.indexer.location import index_dir_for

HERE = Path(__file__).resolve().parent
REPORTS = HERE / "data" / "kernel_reports.jsonl"
#: The model tier forced on for every pasted report, whatever the folder's language.
FORCED = {"CODEASK_RETRIEVE__MODEL_TIER_FOR": "reports"}
TARGET = "<= 3 s a report"
#: What a forced model tier embeds at most per report (`embed.model_candidates`' default).
CANDIDATES = build_settings()[0].embed.model_candidates


class Asked(Protocol):
    """A pasted report with its answer files (benchmarks.scale.Question)."""

    qid: str
    query: str
    relevant: list[str]


class Runner(Protocol):
    """What the step needs of benchmarks.scale.Run."""

    tree: Path
    index_root: Path
    env: dict[str, str]

    def search(
        self, query: str, *, daemon: bool, extra: dict[str, str] | None = None
    ) -> tuple[Cost, dict[str, Any]]: ...

    def stop_daemon(self) -> None: ...


@dataclass
class Tally:
    """One setting's reports: costs, ranks and what the model tier covered."""

    costs: list[Cost] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)  # 0: no answer file in the top 5
    tiers: Counter[str] = field(default_factory=Counter)
    model_ranked: int = 0
    embedded: int = 0

    def cost(self) -> Cost:
        """Wall and CPU summed over the reports, peaks the largest of any."""
        first, last = self.costs[0], self.costs[-1]
        return Cost(
            sum(c.wall_s for c in self.costs),
            sum(c.cpu_s for c in self.costs),
            max(c.peak_tree_mb for c in self.costs),
            max(c.peak_single_mb for c in self.costs),
            first.load_before,
            last.load_after,
            0,
            "",
            "",
        )

    def figure(self) -> str:
        n = len(self.ranks) or 1
        recall = sum(1 for r in self.ranks if r) / n
        mrr = sum(1 / r for r in self.ranks if r) / n
        walls = sorted(c.wall_s for c in self.costs)
        tiers = ", ".join(f"{name} {count}" for name, count in sorted(self.tiers.items()))
        text = (
            f"per report p50 {walls[len(walls) // 2]:.2f} / max {walls[-1]:.2f} s, CPU max "
            f"{max(c.cpu_s for c in self.costs):.1f} s; R@5 {recall:.2f}, MRR {mrr:.2f} "
            f"({len(self.ranks)} reports); tiers answered: {tiers}"
        )
        if self.model_ranked:
            cached = self.model_ranked * CANDIDATES - self.embedded
            text += (
                f"; model tier ranked {self.model_ranked}: {self.embedded} chunks embedded on "
                f"demand, {max(cached, 0)} cache hits (of {CANDIDATES} candidates a report)"
            )
        return text


def rank_of(ranked: list[str], relevant: list[str], top: int = 5) -> int:
    """Rank (1-based) of the first answer file among the first `top` distinct files; 0: none."""
    return next((i for i, path in enumerate(ranked[:top], 1) if path in relevant), 0)


def distinct_files(results: list[dict[str, Any]]) -> list[str]:
    """The distinct files of a search's chunk hits, best first."""
    return list(dict.fromkeys(hit["relative_path"] for hit in results))


def index_folder(run: Runner) -> Path:
    """The tree's index folder under the run's `index.location`."""
    settings, _ = build_settings({"index": {"location": str(run.index_root)}})
    return index_dir_for(run.tree.resolve(), settings)


def on_demand_rows(run: Runner) -> int:
    """Vectors the folder's on-demand cache holds (0 when it has none yet)."""
    path = index_folder(run) / ON_DEMAND_FILE
    if not path.is_file():
        return 0
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return int(db.execute("SELECT COUNT(*) FROM vec").fetchone()[0])
    finally:
        db.close()


def empty_caches(run: Runner) -> None:
    """The run's own caches emptied (its copy's on-demand file, its XDG embedding cache), so
    that a cold report embeds its candidates: both are the benchmark's scratch, never the
    user's."""
    folder = index_folder(run)
    for suffix in ("", "-wal", "-shm"):
        (folder / (ON_DEMAND_FILE + suffix)).unlink(missing_ok=True)
    shutil.rmtree(Path(run.env["XDG_CACHE_HOME"]) / "codeask" / "embeddings", ignore_errors=True)


def ask_all(
    run: Runner, reports: Sequence[Asked], *, daemon: bool, extra: dict[str, str] | None = None
) -> Tally:
    """Every report asked once in this setting."""
    tally = Tally()
    for report in reports:
        before = on_demand_rows(run)
        cost, answer = run.search(report.query, daemon=daemon, extra=extra)
        tally.costs.append(cost)
        tally.ranks.append(rank_of(distinct_files(answer["results"]), report.relevant))
        answered = answer.get("tiers_answered") or []
        tally.tiers.update(answered)
        if "minilm" in answered:
            tally.model_ranked += 1
            tally.embedded += on_demand_rows(run) - before
        print(
            f"#   {report.qid} {'daemon' if daemon else 'no-daemon'}"
            f"{' forced' if extra else ''}: {cost.wall_s:.2f} s, {cost.cpu_s:.1f} CPU-s, "
            f"{cost.peak_tree_mb:,.0f} MB, rank {tally.ranks[-1]}, {'+'.join(answered)}",
            flush=True,
        )
    return tally


#: (row name, daemon, model forced, caches emptied first).
SETTINGS = [
    ("3r reports: search --no-daemon, default", False, False, False),
    ("3r reports: --no-daemon, model tier forced, cold caches", False, True, True),
    ("3r reports: --no-daemon, model tier forced, warm caches", False, True, False),
    ("3r reports: warm daemon, default", True, False, False),
    ("3r reports: warm daemon, model tier forced, cold caches", True, True, True),
    ("3r reports: warm daemon, model tier forced, warm caches", True, True, False),
]
#: What warms a daemon started with the model tier forced (both models loaded) before its
#: rows: a report of its own, so that the set's candidates stay cold.
WARM_UP = (
    "BUG: unable to handle page fault for address: ffffffffc0a1b2c3\n"
    "RIP: 0010:usb_submit_urb+0x2b/0x5a0\nCall Trace:\n <TASK>\n usb_submit_urb+0x2b/0x5a0\n"
    " usb_start_wait_urb+0x5e/0x160\n usb_control_msg+0xcc/0x140\n </TASK>\n"
)


def reports_step(
    run: Runner, reports: Sequence[Asked], add: Callable[[str, Cost | None, str, str], None]
) -> None:
    """Every setting in turn. Caches are emptied with no daemon running (one holds them
    open); a daemon is warmed by one untimed search before its row: the run's daemon by the
    first report, one started with the model tier forced (a daemon serves only clients of its
    own environment) by `WARM_UP`."""
    for name, daemon, forced, cold in SETTINGS:
        extra = FORCED if forced else None
        if cold:
            run.stop_daemon()
            empty_caches(run)
        if daemon:
            run.search(WARM_UP if forced else reports[0].query, daemon=True, extra=extra)
        tally = ask_all(run, reports, daemon=daemon, extra=extra)
        add(name, tally.cost(), tally.figure(), TARGET)
    run.stop_daemon()  # the forced one: later steps start the run's own again
    add("3r model tier (codeask status)", None, model_tier_status(run), "no full-corpus pass")


def model_tier_status(run: Runner) -> str:
    """What `codeask status --json` says the model tier covers, and the MiniLM vectors a pass
    has written (none on a folder filled on demand)."""
    shown = subprocess.run(
        [sys.executable, "-m", "codeask", "status", "--json", "--root", str(run.tree)],
        env=run.env | {"CODEASK_DAEMON__ENABLED": "false"},
        cwd=run.tree,
        capture_output=True,
        text=True,
        check=True,
    )
    status = json.loads(shown.stdout)[0]
    return (
        f"model tier: {status.get('model_tier') or 'none'}; MiniLM vectors in the index "
        f"{status['embedded']:,} of {status['chunks']:,} chunks (load {os.getloadavg()[0]:.2f})"
    )
