"""`python -m benchmarks.reports_eval` measures a user-chosen embedding model in one command.

The runner as a process, on an eval folder the test writes (the Python set's layout: dev.jsonl,
corpora under --corpus-root as <package>-<version>), with `embed.provider = openai` pointed at
a real loopback /v1/embeddings (tests/support/embed_endpoint.py): the model tier is embedded by that
server and every language gets its first-pass, model and default rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import in_process_env
from support.embed_endpoint import Endpoint

REPO = Path(__file__).resolve().parents[2]
FILES = {
    "retry.go": "package net\n\n// Retry calls fn until it succeeds, doubling the delay.\n"
    "func Retry(fn func() error, attempts int) error {\n\treturn fn()\n}\n",
    "invoice.go": "package billing\n\n// Total sums the invoice lines with tax.\n"
    "func Total(lines []float64) float64 {\n\treturn 1.2\n}\n",
}
REPORT = (
    "Retry gives up after the first failure\n"
    "When the remote call fails once, the retry loop returns the error at once.\n"
    "Expected: it keeps trying until the attempts run out, doubling the wait.\n"
    "Seen on every request since the last upgrade.\n"
)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint().start()
    yield served
    served.close()


def test_one_command_scores_a_remote_model_per_language(tmp_path: Path, endpoint: Endpoint) -> None:
    corpus = tmp_path / "corpora" / "net-1"
    corpus.mkdir(parents=True)
    for name, text in FILES.items():
        (corpus / name).write_text(text, encoding="utf-8")
    question = {
        "id": "net-1",
        "package": "net",
        "version": "1",
        "language": "go",
        "question": REPORT,
        "gold_files": ["retry.go"],
    }
    evals = tmp_path / "eval"
    evals.mkdir()
    (evals / "dev.jsonl").write_text(json.dumps(question) + "\n", encoding="utf-8")
    settings = [
        "embed.provider=openai",
        f"embed.endpoint={endpoint.url}",
        "embed.model=code-model",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.reports_eval", "--eval-dir", str(evals)]
        + ["--corpus-root", str(tmp_path / "corpora"), "--index-home", str(tmp_path / "idx")]
        + [arg for pair in settings for arg in ("--set", pair)]
        + ["--out", str(tmp_path / "rows.jsonl")],
        env=in_process_env(
            XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_CACHE_HOME=str(tmp_path / "cache")
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert endpoint.requests > 0, "the model tier was embedded by the chosen server"
    assert "model tier for reports: all" in done.stderr
    for tier in ("first_pass", "model", "default"):
        assert f"| go | 1 | {tier} |" in done.stdout, done.stdout
    row = json.loads((tmp_path / "rows.jsonl").read_text(encoding="utf-8"))
    assert row["language"] == "go"
    assert row["first_pass"]["R@5"] == 1.0
