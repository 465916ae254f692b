"""benchmarks.search_compare: two runs' per-question rows set side by side, per language."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmarks import search_compare


def _rows(path: Path, scores: dict[str, tuple[float, float]]) -> Path:
    lines = [
        json.dumps({"qid": qid, "file_ndcg10": ndcg, "file_r5": r5})
        for qid, (ndcg, r5) in scores.items()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _queries(path: Path, languages: dict[str, str]) -> Path:
    lines = [json.dumps({"qid": qid, "language": lang}) for qid, lang in languages.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_each_language_is_the_mean_difference_worst_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ruby: (0.5 + 1.0) / 2 − (1.0 + 1.0) / 2 = −0.25; go: 1.0 − 0.5 = +0.5; a question only
    one run answered (go/9) is left out of both; the worse language is listed first."""
    queries = _queries(tmp_path / "q.jsonl", {"rb/0": "ruby", "rb/1": "ruby", "go/0": "go"})
    this = _rows(tmp_path / "a.jsonl", {"rb/0": (0.5, 1), "rb/1": (1.0, 1), "go/0": (1.0, 1)})
    that = _rows(
        tmp_path / "b.jsonl",
        {"rb/0": (1.0, 1), "rb/1": (1.0, 1), "go/0": (0.5, 0), "go/9": (1.0, 1)},
    )
    assert search_compare.main([str(this), str(that), "--queries", str(queries)]) == 0
    table = capsys.readouterr().out.splitlines()
    ruby = next(i for i, line in enumerate(table) if line.startswith("ruby"))
    go = next(i for i, line in enumerate(table) if line.startswith("go"))
    assert ruby < go
    assert table[ruby].split()[1:] == ["2", "0.750", "1.000", "-0.250"]
    assert table[go].split()[1:] == ["1", "1.000", "0.500", "+0.500"]
    overall = next(line for line in table if line.startswith("all")).split()
    assert overall[1] == "3" and overall[-1] == "+0.0000"  # (2.5 − 2.5) / 3
    assert "1.0000 vs 0.6667" in table[-1]
    assert "better on 1 questions, worse on 1" in table[-1]
