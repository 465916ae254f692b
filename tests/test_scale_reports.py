"""benchmarks/scale.py's pasted-report step (3r, benchmarks/scale_reports.py) and its reuse of a
kept tree + index: the kernel reports file parses and its answers exist, and the step runs end
to end on a tiny generated tree (real `codeask index`, `search --no-daemon`, daemons, the model
tier on demand with the packaged MiniLM), printing each setting's row with numbers and what the
model tier covered. Not timed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.scale import load_questions
from benchmarks.scale_reports import REPORTS
from tests.test_scale_bench import FILES, tiny_tree

REPO = Path(__file__).resolve().parents[1]
KERNEL = Path.home() / ".cache" / "codeask-eval" / "linux-source" / "linux-source-6.1"
#: A frame of a pasted trace: `name+0x1a/0x30`.
FRAME = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\+0x[0-9a-f]+/0x[0-9a-f]+")

TINY_REPORTS = [
    (
        "r/0",
        "BUG: KASAN: use-after-free in crc32_checksum+0x4e/0x90\n"
        "Read of size 1 at addr ffff888012345678 by task syz-executor/3645\n"
        "Call Trace:\n <TASK>\n crc32_checksum+0x4e/0x90\n lib_crc_helper_3+0x12/0x40\n"
        " </TASK>\n",
        "lib/crc.c",
    ),
    (
        "r/1",
        "WARNING: CPU: 1 PID: 12 at kernel/sched.c:5 pick_next_fair_task+0x20/0x80\n"
        "the fair run queue's leftmost task is gone when it is picked\n"
        "Call Trace:\n <TASK>\n pick_next_fair_task+0x20/0x80\n schedule+0x5a/0xd0\n </TASK>\n",
        "kernel/sched.c",
    ),
]


def reports() -> list[dict[str, object]]:
    return [json.loads(line) for line in REPORTS.read_text().splitlines() if line.strip()]


def test_the_kernel_reports_parse_and_their_answers_exist_on_a_generated_tree(
    tmp_path: Path,
) -> None:
    """>= 5 reports as users paste them (a call trace each), every answer file kept by
    `load_questions` on a tree holding them; a tree without one drops that report only."""
    raw = reports()
    assert len(raw) >= 5 and len({r["qid"] for r in raw}) == len(raw)
    paths = {r["path"] for report in raw for r in report["relevant"]}  # type: ignore[attr-defined]
    for relative in paths:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("int f(void) { return 0; }\n")
    kept, dropped = load_questions(REPORTS, tmp_path)
    assert (len(kept), dropped) == (len(raw), 0)
    for report in kept:
        assert "Call Trace" in report.query and len(report.query.splitlines()) >= 10
        assert len(FRAME.findall(report.query)) >= 3, report.qid
    (tmp_path / kept[0].relevant[0]).unlink()
    fewer, dropped = load_questions(REPORTS, tmp_path, required=False)
    assert dropped >= 1 and kept[0].qid not in {r.qid for r in fewer}


@pytest.mark.skipif(not KERNEL.is_dir(), reason="the Linux 6.1 source is not unpacked here")
def test_each_reports_answer_file_defines_a_function_of_its_trace_in_linux_6_1() -> None:
    """Grounded in the real tree: the answer file exists and defines a function the trace
    names (the bug's frame), so the set is not guessed paths."""
    for report in reports():
        frames = set(FRAME.findall(str(report["query"])))
        for relevant in report["relevant"]:  # type: ignore[attr-defined]
            text = (KERNEL / relevant["path"]).read_text(errors="replace")
            defined = [f for f in frames if re.search(rf"^\w[^;(]*\b{f}\(", text, re.M)]
            assert defined, (report["qid"], relevant["path"], sorted(frames))


def run_scale(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "benchmarks.scale", *args]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_report_step_runs_on_a_kept_tree_and_index_moved_elsewhere(tmp_path: Path) -> None:
    """`--keep` then `--reuse` of the moved work folder (its index folder renamed for the new
    path) with `--steps reports`: one row per setting with numbers, the forced model tier
    embedding on demand (the user's settings: every folder past its full-pass size), and
    `codeask status`'s account: on demand, no MiniLM vector written by a pass."""
    tree = tmp_path / "tiny"
    tiny_tree(tree)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        json.dumps({"qid": "q", "query": "crc32", "relevant": [{"path": "lib/crc.c"}]})
    )
    tiny_reports = tmp_path / "reports.jsonl"
    tiny_reports.write_text(
        "".join(
            json.dumps({"qid": q, "query": text, "relevant": [{"path": path}]}) + "\n"
            for q, text, path in TINY_REPORTS
        )
    )
    config = tmp_path / "config" / "codeask" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[embed]\nmodel_full_pass_chunks = 0\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEASK_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    kept = tmp_path / "kept"
    common = ["--questions", str(questions), "--reports", str(tiny_reports)]
    run_scale(env, "--tree", str(tree), "--work", str(kept), "--keep", "--steps", "index", *common)
    (work,) = kept.iterdir()
    moved = tmp_path / "moved"
    shutil.move(str(work), moved)
    done = run_scale(env, "--reuse", str(moved), "--steps", "reports", *common)
    out = done.stdout
    assert "renamed" in out and "| 1 index cold" not in out
    number = r"[0-9][0-9,]*(?:\.[0-9]+)?"
    cells = rf"\| {number} \| {number} \| {number} \| {number} \| {number}-{number} \|"
    rows = [line for line in out.splitlines() if line.startswith("| 3r reports")]
    assert len(rows) == 6 and all(re.search(cells, row) for row in rows), out
    assert all(re.search(r"R@5 [01]\.[0-9]{2}, MRR [01]\.[0-9]{2} \(2 reports\)", r) for r in rows)
    cold = next(row for row in rows if "forced, cold" in row)
    embedded = re.search(r"model tier ranked 2: ([0-9]+) chunks embedded on demand", cold)
    assert embedded and int(embedded.group(1)) > 0, cold
    for warm in (row for row in rows if "forced, warm" in row):
        assert re.search(r"model tier ranked 2: 0 chunks embedded on demand", warm), warm
    daemon_cold = next(row for row in rows if "daemon, model tier forced, cold" in row)
    assert re.search(r"model tier ranked 2: [1-9][0-9]* chunks embedded on demand", daemon_cold)
    default = next(row for row in rows if "--no-daemon, default" in row)
    assert "model tier ranked" not in default  # C reports: the first pass ranks them on demand
    status = next(line for line in out.splitlines() if line.startswith("| 3r model tier"))
    assert re.search(r"model tier: on demand: [1-9][0-9]* chunks cached", status), status
    assert re.search(r"MiniLM vectors in the index 0 of [1-9]", status), status
    assert all((tree / rel).read_text().endswith("}\n") for rel in FILES)
