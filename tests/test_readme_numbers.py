"""README numbers go stale (issue 26, item 10): every measured number in README.md must sit in
a section that says when it was measured (a date), or come from a generator a test checks (the
settings table: tests/hostile/test_config_trust.py). A bound the code sets ("within 2 s",
"every 5 s") is behaviour, not a measurement."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codeask.config import settings_markdown
from support import codeask, in_process_env

README = Path(__file__).resolve().parent.parent / "README.md"
#: A measurement: a number with a unit of time, size, rate or a test count.
MEASURED = re.compile(
    r"(?<!within )(?<!every )\b\d[\d,.]*\s?"
    r"(?:ms|s|min|minutes|MB|GB|KB|chunks/s|texts/s|passed|tests)\b(?!-)"
)
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) per `##`/`###` section, without code blocks and the generated table."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = text.replace(settings_markdown(), "")
    parts = re.split(r"^(#{2,3} .*)$", text, flags=re.M)
    return [(parts[i].strip(), parts[i + 1]) for i in range(1, len(parts) - 1, 2)]


def test_every_measured_number_is_dated() -> None:
    undated = [
        (heading, MEASURED.search(body).group(0))  # type: ignore[union-attr]
        for heading, body in sections(README.read_text(encoding="utf-8"))
        if MEASURED.search(body) and not DATE.search(body)
    ]
    assert undated == [], "sections with measured numbers but no date (measured when?)"


def test_the_check_sees_numbers() -> None:
    body = "## A\n\nit took 12 s and 300 MB\n"
    assert sections(body) == [("## A", "\n\nit took 12 s and 300 MB\n")]
    assert MEASURED.search(body) and not DATE.search(body)


# ---- round 3 item 22: the numbers that went stale are checked against reality -----------------
REPO = README.parent
SCRIPTS = [REPO / "scripts" / "test", REPO / "scripts" / "test-vscode"]
#: How far a checked number may drift (other commits add files and tests) before it is stale.
TOLERANCE = 0.15


def marked(name: str) -> str:
    """The README text between `<!-- name -->` and `<!-- /name -->`."""
    match = re.search(rf"<!-- {name} -->(.*?)<!-- /{name} -->", README.read_text(), flags=re.S)
    assert match, f"README.md lost its <!-- {name} --> marker"
    return match.group(1)


def number(text: str) -> int:
    return int(text.replace(",", ""))


def near(stated: int, real: int) -> bool:
    return abs(stated - real) <= TOLERANCE * real


@pytest.mark.slow
def test_repo_size_in_the_quick_start_is_an_index_of_this_repo(tmp_path: Path) -> None:
    """The quick start's "N files, M chunks": `codeask index` of a clone of HEAD (lexical first
    pass: the same files and chunks as the quick start's, without waiting for MiniLM)."""
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    clone = tmp_path / "codeask"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True)
    env = {**in_process_env(), "XDG_CACHE_HOME": str(tmp_path / "xdg"), "HF_HUB_OFFLINE": "1"}
    run = codeask("index", "--lexical-only", "--json", ".", cwd=clone, env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    (report,) = json.loads(run.stdout)
    stated = re.fullmatch(r"([\d,]+) files, ([\d,]+) chunks", marked("repo-size").strip())
    assert stated, marked("repo-size")
    files, chunks = number(stated[1]), number(stated[2])
    real = (report["files_indexed"], report["chunks"])
    assert near(files, real[0]) and near(chunks, real[1]), (
        f"README says {files} files, {chunks} chunks; an index of HEAD has {real[0]} files, "
        f"{real[1]} chunks: update <!-- repo-size --> in README.md"
    )


@pytest.mark.slow
def test_fast_test_counts_match_collection() -> None:
    """The "N of the M tests" that `-m "not slow"` leaves: pytest's own collection of this suite."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-qm", "not slow", "-pno:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    collected = re.search(r"^(\d+)/(\d+) tests collected", run.stdout, flags=re.M)
    assert collected, run.stdout[-2000:] + run.stderr[-2000:]
    fast, total = int(collected[1]), int(collected[2])
    stated = re.fullmatch(r"([\d,]+) of the ([\d,]+)\s+tests", marked("fast-tests").strip())
    assert stated, marked("fast-tests")
    assert near(number(stated[1]), fast) and near(number(stated[2]), total), (
        f"README says {stated[1]} of {stated[2]}; collected {fast} of {total}: update "
        "<!-- fast-tests --> in README.md"
    )


def test_pytest_duration_announced_covers_the_last_measured_run() -> None:
    """scripts/test announces pytest's usual duration: the README's latest whole-suite run (the
    first "pytest N passed in M min" after "The whole test command") lies in its range."""
    text = README.read_text()
    measured = re.search(r"The whole test command.*?pytest [\d,]+ passed in (\d+) min", text, re.S)
    assert measured, "README lost its latest measured whole-suite run"
    script = (REPO / "scripts" / "test").read_text()
    announced = re.search(r'announce "pytest \$\*" \\\n.*\n\s*"(\d+)-(\d+) min', script)
    assert announced, "scripts/test announces pytest without an 'A-B min' duration"
    low, high = int(announced[1]), int(announced[2])
    assert low <= int(measured[1]) <= high, (announced.group(0), measured.group(0))


def test_nothing_says_hnswlib_compiles() -> None:
    """hnswlib was replaced by numpy (2026-11-25): no install step waits for it any more."""
    for script in SCRIPTS:
        assert "hnswlib" not in script.read_text(), script
    # "compiled" (past) is history; "compiles" / "compiling" says an install still waits for it
    present = re.search(r"hnswlib (still )?compil(es|ing)", README.read_text())
    assert not present, f"README says {present.group(0)!r}"
