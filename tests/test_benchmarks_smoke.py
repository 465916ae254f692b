"""Tiny runs of the benchmarks, so they cannot rot (the real runs are in benchmarks/README.md).

They run on the small sample vendored in tests/data/mini_eval (its own questions over a copy of
ten codeask modules, in the eval's format), so they need neither ../shared/eval nor a network.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Each test runs a benchmark as its own process.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "data" / "mini_eval"
CORPUS = SAMPLE / "corpus"
#: Lexical retrieval on the sample measured R@5 1.000 and MRR 1.000 (2026-11-22); the floors
#: leave room for ranking changes but not for a broken pipeline.
R5_FLOOR = 0.9
MRR_FLOOR = 0.75


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )


def on_sample(tmp_path: Path, out: Path) -> list[str]:
    """Arguments that point a benchmark at the vendored sample, lexical, indexes in tmp."""
    return [
        *("--eval-dir", str(SAMPLE), "--corpus-root", str(CORPUS), "--no-fetch"),
        *("--mode", "lexical", "--out", str(out), "--index-home", str(tmp_path / "indexes")),
    ]


def test_retrieval_benchmark_on_the_vendored_sample(tmp_path: Path) -> None:
    out = tmp_path / "preds.jsonl"
    metrics_json = tmp_path / "metrics.json"
    result = run(
        "benchmarks.retrieval",
        *on_sample(tmp_path, out),
        "--metrics-json",
        str(metrics_json),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    questions = (SAMPLE / "dev.jsonl").read_text().splitlines()
    predictions = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(predictions) == len(questions) == 12
    assert all(p["ranked_files"] for p in predictions)
    metrics = json.loads(metrics_json.read_text())
    assert metrics["n"] == 12
    assert metrics["R@5"] >= R5_FLOOR and metrics["MRR"] >= MRR_FLOOR, metrics
    assert metrics["R@1"] <= metrics["R@5"] <= metrics["R@10"] <= 1.0
    assert "R@5" in result.stdout


def test_miss_analysis_on_the_vendored_sample(tmp_path: Path) -> None:
    """benchmarks.analysis ranks every question through each retriever and writes the report."""
    out = tmp_path / "analysis.md"
    result = run("benchmarks.analysis", *on_sample(tmp_path, out))
    assert result.returncode == 0, result.stderr[-2000:]
    report = out.read_text()
    assert "12 questions" in report
    assert "| package | questions | R@5 |" in report
    assert "| codeask | 12 |" in report
    header = next(line for line in report.splitlines() if line.startswith("| question"))
    assert "| bm25 | lead | file | symbol | path |" in header


def test_perf_benchmark_on_the_vendored_sample() -> None:
    result = run(
        "benchmarks.perf",
        "--eval-dir",
        str(SAMPLE),
        "--corpus-root",
        str(CORPUS),
        "--corpus",
        "codeask==mini",
        "--sample-files",
        "3",
        "--repeat",
        "1",
        "--queries",
        "5",
        "--raw-sample",
        "16",
        "--json",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    numbers = json.loads(result.stdout)
    assert numbers["files"] == 3
    assert numbers["chunks"] > 0 and numbers["computed"] == numbers["chunks"]
    for key in ("lexical_s", "nochange_s", "edit_total_s", "hybrid_p95_ms", "peak_rss_mb"):
        assert numbers[key] > 0, key


def test_a_missing_eval_folder_is_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    missing = tmp_path / "no-eval-here"
    for module in ("benchmarks.retrieval", "benchmarks.perf", "benchmarks.history_bench"):
        env = {**os.environ, "CODEASK_EVAL_DIR": str(missing)}
        result = run(module, env=env)
        assert result.returncode == 2, (module, result.stderr[-2000:])
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in result.stderr, (module, result.stderr)
        assert str(missing) in lines[0] and "--eval-dir" in lines[0], lines[0]


def test_pass_parts_times_every_part_of_a_first_pass() -> None:
    """benchmarks.pass_parts on the vendored corpus: every part of a worker's work and the
    lexical tables get a row, and the parts that always run (parse, static vectors, lexical
    tables) took some CPU."""
    result = run("benchmarks.pass_parts", str(CORPUS), "--files", "20", "--repeat", "1")
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {
        line.split("|")[1].strip(): float(line.split("|")[2])
        for line in result.stdout.splitlines()
        if line.startswith("| ") and not line.startswith("| part")
    }
    assert set(rows) == {
        *("read", "redact", "parse", "query", "chunking walk", "lexical columns"),
        *("static vectors", "frame encode", "lexical tables (indexing process)", "all"),
    }
    assert rows["parse"] > 0 and rows["static vectors"] > 0
    assert rows["lexical tables (indexing process)"] > 0
    assert abs(sum(v for k, v in rows.items() if k != "all") - rows["all"]) < 0.01
