"""benchmarks/side_by_side.py: the one command behind the README's first-pass ratio to semble."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from benchmarks.side_by_side import parse_index_lines, ratio_range

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "tests" / "data" / "mini_search_eval"


def test_index_lines_of_both_runners_are_summed() -> None:
    # search_eval.py pads its numbers; run_semble.py prints `chunks=` with a width of 6 too.
    stderr = (
        "chi                  go          chunks=   120 index=  0.50s p50=1.2ms\n"
        "unpacking something\n"
        "flask                chunks=  3000 index= 12.25s p50=3.0ms\n"
    )
    assert parse_index_lines(stderr) == (12.75, 3120)


def test_ratio_range_names_the_spread_over_rounds() -> None:
    assert ratio_range([9.0, 12.0], [10.0, 10.0]) == "0.90-1.20x"
    assert ratio_range([5.0], [5.0]) == "1.00x"


@pytest.mark.slow
def test_a_run_against_itself_reports_every_round_and_the_same_chunks() -> None:
    """Both sides are codeask's own runner here (semble is not installed in the test venv): the
    plumbing (alternating rounds, the tree's CPU, the load, the ranges) is what is checked."""
    peer = f"{sys.executable} -m benchmarks.search_eval --eval-dir {MINI} --out {{out}}"
    result = subprocess.run(
        [
            *[sys.executable, "-m", "benchmarks.side_by_side", "--eval-dir", str(MINI)],
            *["--rounds", "2", "--peer-name", "self", "--peer-cmd", peer],
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines() if re.match(r"\s+[12] ", line)]
    assert [(row[0], row[1]) for row in rows] == [
        ("1", "codeask"),
        ("1", "self"),
        ("2", "codeask"),
        ("2", "self"),
    ]
    assert len({row[3] for row in rows}) == 1  # the same chunks on both sides, every round
    assert "1-min load" in result.stdout
    for label in ("index time, total:", "index time, per chunk:", "CPU of the whole run:"):
        assert re.search(re.escape(label) + r"\s+[0-9.]+(-[0-9.]+)?x", result.stdout), label
