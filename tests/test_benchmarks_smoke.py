"""Tiny runs of both benchmarks, so they cannot rot (the real runs are in benchmarks/README.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT.parent / "shared" / "eval"

pytestmark = pytest.mark.skipif(not EVAL.is_dir(), reason="../shared/eval is not beside the repo")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=900
    )


def test_retrieval_benchmark_smoke(tmp_path: Path) -> None:
    out = tmp_path / "preds.jsonl"
    result = run(
        "benchmarks.retrieval",
        "--package",
        "flask",
        "--limit",
        "2",
        "--mode",
        "lexical",
        "--out",
        str(out),
        "--index-home",
        str(tmp_path / "indexes"),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    predictions = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(predictions) == 2
    assert all(p["ranked_files"] for p in predictions)
    assert "Recall@5" in result.stdout and "ALL" in result.stdout


def test_perf_benchmark_smoke(tmp_path: Path) -> None:
    result = run(
        "benchmarks.perf",
        "--corpus",
        "flask==2.0.0",
        "--sample-files",
        "6",
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
    assert numbers["chunks"] > 0 and numbers["computed"] == numbers["chunks"]
    for key in ("lexical_s", "nochange_s", "edit_total_s", "hybrid_p95_ms", "peak_rss_mb"):
        assert numbers[key] > 0, key
