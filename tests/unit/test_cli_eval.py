"""`codeask eval` as a user runs it: a real subprocess on real git repositories (gitrepo.py),
its numbers from real searches, its JSON, its errors, and an index it only reads."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from codeask.core.storage.writer_lock import WriterLock
from support import codeask as run_codeask
from support.gitrepo import EPOCH, commit, make_repo

DAY = 86_400

#: Six modules, each about one thing in its own words; one commit per module asks about it.
MODULES = {
    "shipping/manifest.py": (
        "def parse_shipping_manifest(text):\n"
        '    """Split a shipping manifest into parcels with their weight."""\n'
        "    return [line.split(';') for line in text.splitlines()]\n",
        "Parse the shipping manifest into parcels with their weight",
    ),
    "billing/invoice.py": (
        "def render_invoice_total(lines, tax_rate):\n"
        '    """Sum the invoice lines and add the tax rate."""\n'
        "    return sum(lines) * (1 + tax_rate)\n",
        "Render the invoice total with the tax rate added",
    ),
    "auth/password.py": (
        "def hash_password_with_salt(password, salt):\n"
        '    """Derive a password hash from a random salt."""\n'
        "    return (salt + password)[::-1]\n",
        "Hash the password with a random salt before storing it",
    ),
    "search/tokenize.py": (
        "def split_camel_case_identifier(name):\n"
        '    """Split a camelCase identifier into lowercase words."""\n'
        "    return [name.lower()]\n",
        "Split camel case identifiers into lowercase words",
    ),
    "web/static/theme.ts": (
        "export function applyDarkTheme(root: HTMLElement): void {\n"
        "  // switch the page colours to the dark palette\n"
        "  root.classList.add('dark-palette');\n"
        "}\n",
        "Apply the dark theme palette to the page colours",
    ),
    "editor/keymap.lua": (
        "local M = {}\n"
        "-- bind the leader key to open the project finder\n"
        "function M.bind_leader_finder(opts)\n"
        "  return opts.leader .. 'finder'\n"
        "end\n"
        "return M\n",
        "Bind the leader key to open the project finder",
    ),
}


#: `codeask eval` indexes and searches every question: a longer limit than one command's.
codeask = partial(run_codeask, timeout=600)


def findable_repo(root: Path) -> Path:
    """A README commit, then one commit per module whose message describes it."""
    repo = make_repo(root)
    commit(repo, {"README.md": "# shop\n"}, "Start the shop project with a readme", when=EPOCH)
    for i, (path, (text, message)) in enumerate(MODULES.items(), 1):
        commit(repo, {path: text}, message, when=EPOCH + i * DAY)
    return root


def run_eval(root: Path, *extra: str) -> dict[str, Any]:
    result = codeask("eval", "--json", *extra, cwd=root)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_findable_answers_score_one_and_agree_with_codeask_search(tmp_path: Path) -> None:
    root = findable_repo(tmp_path / "shop")
    report = run_eval(root)
    assert report["index"]["built_now"] is True  # no index yet: the first pass was built
    assert (root / ".codeask" / "CURRENT").is_file()
    questions = report["questions"]
    assert {q["answers"][0] for q in questions} == set(MODULES)
    assert {q["question"] for q in questions} == {m for _, m in MODULES.values()}
    [first_pass] = report["tiers"]  # MiniLM not built: only the first pass is measured
    assert first_pass["name"] == "first_pass"
    assert first_pass["overall"] == {"n": 6, "R@1": 1.0, "R@5": 1.0, "MRR": 1.0}
    assert first_pass["no_file_named"] == first_pass["overall"]  # no message names its file
    assert set(first_pass["languages"]) == {"python", "typescript", "lua"}
    assert first_pass["languages"]["python"]["n"] == 4
    assert any("MiniLM tier 0/" in note for note in report["notes"])
    for question in questions:  # the same answer as `codeask search` gives the same question
        found = codeask("search", question["question"], "--json", "-k", "5", cwd=root)
        top = json.loads(found.stdout)["results"][0]["relative_path"]
        assert top == question["answers"][0] == question["tiers"]["first_pass"]["top"][0]
        assert question["tiers"]["first_pass"]["first_rank"] == 1
    again = run_eval(root)
    assert again["index"]["built_now"] is False  # the index is used, not rebuilt


@pytest.mark.slow
def test_unfindable_answers_score_zero(tmp_path: Path) -> None:
    """Ten files say what the question says; the file the commit changed says nothing of it."""
    root = tmp_path / "ledger"
    repo = make_repo(root)
    decoys = {
        f"decoy/ledger_{i}.py": (
            f"def convert_currency_ledger_rounding_{i}(refunds):\n"
            '    """Convert the currency ledger rounding for refunds."""\n'
            "    return round(refunds, 2)\n"
        )
        for i in range(10)
    }
    commit(
        repo,
        {**decoys, "core/blorp.py": "def blorp():\n    return 1\n"},
        "Start the ledger with its modules",
    )
    commit(
        repo,
        {"core/blorp.py": "def blorp():\n    return 2\n"},
        "Convert the currency ledger rounding for refunds",
        when=EPOCH + DAY,
    )
    report = run_eval(root)
    [question] = report["questions"]
    assert question["answers"] == ["core/blorp.py"]
    overall = report["tiers"][0]["overall"]
    assert (overall["n"], overall["R@1"], overall["R@5"]) == (1, 0.0, 0.0)
    rank = question["tiers"]["first_pass"]["first_rank"]
    assert rank is None or rank > 10  # behind every decoy, if ranked at all
    assert overall["MRR"] == pytest.approx(1 / rank if rank else 0.0, abs=1e-4)  # 4 places
    assert dict(report["selection"]["skipped"]) == {"more code files than --max-files": 1}


@pytest.mark.slow
def test_json_schema_and_human_report(tmp_path: Path) -> None:
    root = findable_repo(tmp_path / "shop")
    report = run_eval(root, "--commits", "4")
    assert set(report) == {
        "root",
        "head",
        "run_at",
        "index",
        "selection",
        "depth",
        "tiers",
        "notes",
        "limits",
        "questions",
    }
    assert report["head"] == str(make_repo(root).head.target)
    assert set(report["index"]) == {"folder", "built_now", "files", "chunks", "tiers", "saved_at"}
    selection = report["selection"]
    assert selection["questions"] == 4 and selection["commits"] == 4
    assert selection["commits_read"] == 4  # stops once it has its questions
    assert set(selection) >= {
        "since",
        "max_files",
        "skipped",
        "files_dropped",
        "verbatim_subjects",
        "naming_an_answer_file",
    }
    tier = report["tiers"][0]
    assert set(tier) == {"name", "label", "overall", "no_file_named", "languages", "query_ms_p50"}
    assert set(tier["overall"]) == {"n", "R@1", "R@5", "MRR"}
    question = report["questions"][0]
    assert set(question) == {
        "sha",
        "date",
        "question",
        "answers",
        "languages",
        "verbatim_subject",
        "names_an_answer_file",
        "tiers",
    }
    assert set(question["tiers"]["first_pass"]) == {"first_rank", "top"}
    assert report["limits"] and all(isinstance(line, str) for line in report["limits"])
    human = codeask("eval", "--questions", cwd=root)
    assert human.returncode == 0, human.stderr
    assert "first pass (lexical + static)" in human.stdout
    assert "Limits: Commit messages are not the questions people type" in human.stdout
    assert "Bind the leader key to open the project finder" in human.stdout  # --questions


@pytest.mark.slow
def test_an_index_another_process_writes_is_only_read(tmp_path: Path) -> None:
    """An editor's server holds the writer lock: eval reads the index, writes nothing."""
    root = findable_repo(tmp_path / "shop")
    indexed = codeask("index", str(root), cwd=root)
    assert indexed.returncode == 0, indexed.stderr
    folder = root / ".codeask"
    writer = WriterLock.try_acquire(folder, "serve")
    assert writer is not None
    try:
        before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
        report = run_eval(root)
        after = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    finally:
        writer.release()
    assert report["index"]["built_now"] is False
    assert report["tiers"][0]["overall"]["n"] == 6
    assert after == before


@pytest.mark.slow
def test_a_complete_minilm_tier_adds_the_default_tier(tmp_path: Path) -> None:
    root = findable_repo(tmp_path / "shop")
    indexed = codeask("index", "--full", str(root), cwd=root)
    assert indexed.returncode == 0, indexed.stderr
    report = run_eval(root)
    assert [t["name"] for t in report["tiers"]] == ["first_pass", "default", "minilm_all"]
    assert report["notes"] == []
    default = report["tiers"][1]
    assert default["overall"]["n"] == 6
    assert default["overall"]["R@5"] == 1.0  # six distinct files: every answer is in the top 5
    assert all({"default", "minilm_all"} <= set(q["tiers"]) for q in report["questions"])


def test_not_a_git_repository(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def main():\n    return 0\n")
    result = codeask("eval", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"codeask: {tmp_path} is not a git repository: no history to ask questions from"
    )
    assert not (tmp_path / ".codeask").exists()  # nothing built for nothing to ask


def test_no_commits_yet(tmp_path: Path) -> None:
    make_repo(tmp_path / "fresh")
    result = codeask("eval", cwd=tmp_path / "fresh")
    assert result.returncode == 1
    assert "has no commits yet" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_no_qualifying_commit_says_why(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    repo = make_repo(root)
    commit(repo, {"README.md": "# docs\n"}, "Write the readme for the documentation site")
    commit(repo, {"app.py": "def main():\n    return 0\n"}, "wip", when=EPOCH + DAY)
    result = codeask("eval", cwd=root)
    assert result.returncode == 1
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("codeask: no commit qualifies as a question (2 commits read")
    assert "message too short 1" in line and "no code file changed 1" in line


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--since", "last week"), "--since wants a date as YYYY-MM-DD"),
        (("--commits", "0"), "--commits must be 1 or more"),
        (("--max-files", "0"), "--max-files must be 1 or more"),
    ],
)
def test_bad_options_are_one_line(tmp_path: Path, flags: tuple[str, str], message: str) -> None:
    result = codeask("eval", *flags, cwd=tmp_path)
    assert result.returncode == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
