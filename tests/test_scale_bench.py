"""benchmarks/scale.py end to end on a tiny generated C tree: every step's row, with numbers.

Real processes throughout (`codeask index`, `search --no-daemon`, a daemon in the run's private
runtime dir, `codeask serve` driven over stdio); no kernel. The daemon the run starts must be
gone when it ends.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FILES = {
    "kernel/sched.c": (
        "/* pick the next runnable task from the fair run queue */\n"
        "struct task *pick_next_fair_task(struct runqueue *rq)\n{\n"
        "\tstruct task *best = rq->leftmost;\n"
        "\tif (!best)\n\t\treturn rq->idle;\n"
        "\treturn best;\n}\n"
    ),
    "mm/alloc.c": (
        "/* allocate contiguous physical pages from the buddy free lists */\n"
        "struct page *alloc_buddy_pages(struct zone *zone, unsigned int order)\n{\n"
        "\tstruct free_area *area = &zone->free_area[order];\n"
        "\treturn area->first;\n}\n"
    ),
    "lib/crc.c": (
        "/* compute a crc32 checksum over a byte buffer */\n"
        "unsigned int crc32_checksum(const unsigned char *buf, unsigned long len)\n{\n"
        "\tunsigned int crc = ~0u;\n"
        "\twhile (len--)\n\t\tcrc = (crc >> 8) ^ *buf++;\n"
        "\treturn ~crc;\n}\n"
    ),
}

QUESTIONS = [
    ("t/0", "where is the next task picked from the fair run queue", "kernel/sched.c"),
    ("t/1", "buddy allocator free lists allocating pages", "mm/alloc.c"),
    ("t/2", "crc32 checksum of a buffer", "lib/crc.c"),
]


def tiny_tree(root: Path) -> None:
    """A few hundred lines of C in three folders."""
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        filler = "".join(
            f"\nstatic int {path.stem}_helper_{n}(int value)\n{{\n\treturn value + {n};\n}}\n"
            for n in range(20)
        )
        path.write_text(text + filler)


def test_scale_prints_every_step_with_numbers(tmp_path: Path) -> None:
    tree = tmp_path / "tiny"
    tiny_tree(tree)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(
            json.dumps({"qid": qid, "query": query, "relevant": [{"path": path}]}) + "\n"
            for qid, query, path in QUESTIONS
        )
    )
    work = tmp_path / "work"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODEASK_")}
    command = [sys.executable, "-m", "benchmarks.scale", "--tree", str(tree)]
    command += ["--questions", str(questions), "--work", str(work)]
    run = subprocess.run(
        command,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    number = r"[0-9][0-9,]*(?:\.[0-9]+)?"
    cells = rf"\| {number} \| {number} \| {number} \| {number} \| {number}-{number} \|"
    for step in (
        "1 index cold",
        "2a open cold: search --no-daemon",
        "2b fresh daemon: first answer",
        "3 warm questions",
        "4 edit one file -> searchable",
        "4c edit one file -> searchable (index through the daemon)",
        "4b editor save -> searchable (language server)",
    ):
        rows = [line for line in run.stdout.splitlines() if line.startswith(f"| {step}")]
        assert len(rows) == 1, (step, run.stdout)
        assert re.search(cells, rows[0]), rows[0]
    assert re.search(r"\b3 files, [0-9]+ chunks; index", run.stdout), run.stdout
    assert re.search(rf"CPU-s: main process {number}, chunk workers -?{number}", run.stdout)
    partial = r"first answer [0-9.]+ s after the start \([0-9]+ hits\)|no partial answer before"
    assert re.search(partial, run.stdout), run.stdout
    assert re.search(r"R@5 [01]\.[0-9]{2}, MRR [01]\.[0-9]{2} \(3 q\)", run.stdout), run.stdout
    assert "searchable:" in run.stdout, run.stdout
    # step 4b: every save through the language server became searchable, with its memory
    saves = rf"5 saves of kernel/sched\.c: p50 {number} s / max {number} s; server \(writer"
    assert re.search(saves, run.stdout), run.stdout
    assert re.search(rf"resting {number} MB, peak \+-?{number} MB", run.stdout), run.stdout
    step = rf"[+-]{number}/[+-]{number}"
    split = rf"anon/file resting {number}/{number} MB, each save {step}(, {step}){{4}}\)"
    assert re.search(split, run.stdout), run.stdout  # heap vs mapped index pages, per save
    assert "NOT found" not in run.stdout, run.stdout
    # the work folder is removed, the source tree untouched, and no process of the run is left
    assert list(work.iterdir()) == []
    assert all((tree / rel).read_text().endswith("}\n") for rel in FILES)
    assert "codeask_scale_probe" not in "".join((tree / rel).read_text() for rel in FILES)
    left = [
        entry.name
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and _runs_in(entry, str(work))
    ]
    assert left == [], f"processes of the run outlived it: {left}"


def test_a_steps_cost_splits_its_own_cpu_from_its_childrens(tmp_path: Path) -> None:
    """The command's own CPU is sampled apart from what its children (chunk workers) spent."""
    from benchmarks.proc_tree import Tree

    child = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'sum(range(10**8))'])"
    cost = Tree("split-test").run([sys.executable, "-c", child], dict(os.environ), tmp_path)
    assert cost.returncode == 0
    assert 0 <= cost.main_cpu_s < cost.cpu_s


def test_a_steps_peak_leaves_out_a_daemons_earlier_high_water(tmp_path: Path) -> None:
    """A run's process that lived before the step (the daemon) had its high-water mark set by
    an earlier step: the step's peak counts what happened during it, not that mark (4d read
    +151 MB above rest, all of it 4c's)."""
    from benchmarks.cold_peak import status_mb
    from benchmarks.proc_tree import MARKER, Tree

    spiked = (
        "b = b'x' * (300 << 20); del b; print('ready', flush=True); import time; time.sleep(60)"
    )
    env = dict(os.environ) | {MARKER: "hwm-test"}
    daemon = subprocess.Popen([sys.executable, "-c", spiked], env=env, stdout=subprocess.PIPE)
    try:
        assert daemon.stdout is not None and daemon.stdout.readline().strip() == b"ready"
        rss, high_water = status_mb(daemon.pid)
        assert high_water > 2 * rss + 100, (rss, high_water)
        cost = Tree("hwm-test").run([sys.executable, "-c", "pass"], dict(os.environ), tmp_path)
        assert cost.returncode == 0
        assert cost.peak_tree_mb < high_water / 2, (cost.peak_tree_mb, high_water)
    finally:
        daemon.kill()
        daemon.wait()


def _runs_in(entry: Path, folder: str) -> bool:
    try:
        variables = (entry / "environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(v.startswith(b"XDG_RUNTIME_DIR=" + folder.encode()) for v in variables)


def test_kernel_questions_are_well_formed() -> None:
    """The kernel set: >= 30 questions, unique qids, each with an answer file path in the tree's
    layout (relative, no leading slash); that the files exist in 6.1 was checked when writing."""
    lines = (REPO / "benchmarks" / "data" / "kernel_questions.jsonl").read_text().splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    assert len(questions) >= 30
    assert len({q["qid"] for q in questions}) == len(questions)
    for question in questions:
        assert question["query"].strip()
        paths = [r["path"] for r in question["relevant"]]
        assert paths and all(p and not p.startswith("/") and ".." not in p for p in paths)


def test_semble_gets_the_override_of_debians_top_ignore_only_for_its_run(tmp_path: Path) -> None:
    """Debian's kernel package ignores `/*` at the top; semble honours it and found no file.
    During semble's run the tree has a `.sembleignore` undoing it; afterwards the tree is as
    it was (codeask's next pass over a kept tree sees no new file). A tree without that rule,
    or one that already has the file, is left as it is."""
    from benchmarks.scale import debian_top_ignored, semble_unignored

    debian = tmp_path / "debian"
    debian.mkdir()
    (debian / ".gitignore").write_text("*.o\n/*\n!/debian/\n")
    assert debian_top_ignored(debian)
    with semble_unignored(debian):
        assert (debian / ".sembleignore").read_text() == "!/*\n"
    assert not (debian / ".sembleignore").exists()

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / ".gitignore").write_text("*.o\n")
    assert not debian_top_ignored(plain)
    with semble_unignored(plain):
        assert not (plain / ".sembleignore").exists()

    (debian / ".sembleignore").write_text("# the user's own\n")
    with semble_unignored(debian):
        pass
    assert (debian / ".sembleignore").read_text() == "# the user's own\n"


def test_the_ratio_row_divides_codeasks_first_pass_by_sembles_run() -> None:
    """Step 5r: codeask's first pass over semble's run in the same window, each figure."""
    from benchmarks.proc_tree import Cost
    from benchmarks.scale import ratios

    codeask = Cost(372.0, 688.0, 975.0, 960.0, 0.7, 2.3, 0, "", "")
    semble = Cost(1227.5, 1331.0, 16975.0, 16975.0, 0.1, 1.1, 0, "", "")
    text = ratios(codeask, semble)
    assert text.startswith("CPU 0.52x, wall 0.30x, peak tree 0.057x")
    assert "CPU 0.83x, wall 0.80x" in text
