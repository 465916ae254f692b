"""benchmarks.search_eval end to end on a four-question eval in the eval-search layout: real
indexing (first pass), real search, the eval's own scorer in a subprocess."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import pytest
from benchmarks import search_eval

MINI = Path(__file__).parent / "data" / "mini_search_eval"


def _run(eval_dir: Path, tmp_path: Path, *extra: str) -> tuple[list[dict], str]:
    out = tmp_path / "run.jsonl"
    code = search_eval.main(["--eval-dir", str(eval_dir), "--out", str(out), *extra])
    assert code == 0
    return [json.loads(line) for line in out.read_text().splitlines()], out.name


def test_run_is_in_the_scorers_format_and_the_table_has_languages_and_costs(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Every question answered; paths repo-root-relative (benchmark_root `src` prefixed, nothing
    outside it), deduplicated; the scorer finds each gold file, so the paths match its labels."""
    rows = tmp_path / "rows.jsonl"
    lines, _ = _run(MINI, tmp_path, "--per-query", str(rows))
    questions = [json.loads(q) for q in (MINI / "queries.jsonl").read_text().splitlines()]
    assert sorted(line["qid"] for line in lines) == sorted(q["qid"] for q in questions)
    for line in lines:
        assert len(line["results"]) == len(set(line["results"]))
        if line["qid"].startswith("tinyjs/"):
            assert line["results"] and all(p.startswith("src/") for p in line["results"])
    scored = [json.loads(r) for r in rows.read_text().splitlines()]
    assert len(scored) == len(questions)
    assert all(r["file_r10"] > 0 for r in scored), scored
    printed = capfd.readouterr().out
    for needed in ("-- by language", "  go ", "  javascript ", "index total", "p95", "VmHWM"):
        assert needed in printed


def test_sources_from_the_archive_are_unpacked_once_into_work(tmp_path: Path) -> None:
    """An eval folder with repos.tar.xz and no repos/: unpacked into --work, then reused."""
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    for name in ("queries.jsonl", "repos.tsv", "score.py"):
        shutil.copy(MINI / name, eval_dir / name)
    with tarfile.open(eval_dir / "repos.tar.xz", "w:xz") as tar:
        for repo in (MINI / "repos").iterdir():
            tar.add(repo, arcname=repo.name)
    work = tmp_path / "work"
    lines, _ = _run(eval_dir, tmp_path, "--work", str(work), "--repos", "tinyjs")
    assert (work / "tinyjs" / "src" / "lib" / "retry.js").is_file()
    assert {line["qid"] for line in lines} == {"tinyjs/0", "tinyjs/1"}
    (eval_dir / "repos.tar.xz").unlink()  # the second run must not need the archive
    again, _ = _run(eval_dir, tmp_path, "--work", str(work), "--repos", "tinyjs")
    assert again == lines


def test_settings_overrides_reach_the_index(tmp_path: Path) -> None:
    """`--set` is applied: an unknown setting is refused rather than silently ignored."""
    with pytest.raises(SystemExit):
        search_eval.main(
            ["--eval-dir", str(MINI), "--out", str(tmp_path / "r.jsonl"), "--set", "embed.nope=1"]
        )


def test_compare_sets_another_runs_rows_beside_this_one_per_language(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`--compare`: this run's per-question rows beside another's, per language. Against a run
    that scored every question 0, each language's difference is this run's own mean; against
    itself, every difference is 0. Without --per-query there are no rows of this run to compare."""
    rows = tmp_path / "rows.jsonl"
    _run(MINI, tmp_path, "--per-query", str(rows))
    scored = [json.loads(r) for r in rows.read_text().splitlines()]
    zero = tmp_path / "zero.jsonl"
    zero.write_text("".join(json.dumps({**r, "file_ndcg10": 0.0}) + "\n" for r in scored))
    capfd.readouterr()
    _run(MINI, tmp_path, "--per-query", str(rows), "--compare", str(zero))
    table = capfd.readouterr().out.split("this run − ")[1].splitlines()
    overall = next(line for line in table if line.startswith("all")).split()
    mean = sum(r["file_ndcg10"] for r in scored) / len(scored)
    assert mean > 0 and overall[1] == str(len(scored))
    assert float(overall[-1]) == pytest.approx(mean, abs=1e-4)
    assert {line.split()[0] for line in table[2:4]} == {"go", "javascript"}
    _run(MINI, tmp_path, "--per-query", str(rows), "--compare", str(rows))
    table = capfd.readouterr().out.split("this run − ")[1].splitlines()
    assert all(line.split()[4] in ("+0.000", "-0.000") for line in table[2:4])
    with pytest.raises(SystemExit):
        search_eval.main(
            ["--eval-dir", str(MINI), "--out", str(tmp_path / "r.jsonl"), "--compare", str(rows)]
        )
