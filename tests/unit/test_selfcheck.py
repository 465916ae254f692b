"""`codeask eval`'s engine: which commits become questions, what their answers are, and how the
report's numbers come from real searches (repositories built with pygit2, gitrepo.py)."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from codeask.core.checks.selfcheck import names_an_answer, score
from codeask.core.checks.selfcheck_questions import (
    NoHistory,
    Question,
    SelectOptions,
    clean_message,
    select_questions,
)
from codeask.core.source.languages import language_for_path
from support.gitrepo import EPOCH, commit, make_repo, shallow_clone

DAY = 86_400


def on_disk(root: Path):
    """The language of a code file that exists in the working tree now (what an index of the
    working tree would know), else None."""

    def language_of(rel: str) -> str | None:
        spec = language_for_path(rel)
        return spec.name if spec is not None and (root / rel).is_file() else None

    return language_of


def py(name: str, body: str = "return 1") -> str:
    return f"def {name}():\n    {body}\n"


def build_history(root: Path) -> dict[str, str]:
    """A history with one commit of every kind the selection must keep or skip; returns the
    shas by what they are."""
    repo = make_repo(root)
    t = EPOCH
    shas: dict[str, str] = {}
    shas["initial"] = commit(
        repo,
        {f"pkg/m{i}.py": py(f"f{i}") for i in range(6)} | {"README.md": "# pkg\n"},
        "Initial import of the package with six modules",
        when=t,
    )
    shas["kept_invoice"] = commit(
        repo,
        {"billing/invoice.py": py("render_invoice_total", "return 42")},
        "Render invoice totals with tax included (#42)\n\n"
        "The total used the net price; it now adds the tax rate.\n\n"
        "Signed-off-by: Alice <alice@example.com>\n",
        when=t + DAY,
    )
    shas["docs_only"] = commit(
        repo,
        {"README.md": "# pkg\n\nHow refunds are computed.\n"},
        "Explain how refunds are computed in the readme",
        when=t + 2 * DAY,
    )
    shas["too_short"] = commit(
        repo, {"pkg/m0.py": py("f0", "return 2")}, "fix typo", when=t + 3 * DAY
    )
    shas["too_many"] = commit(
        repo,
        {f"pkg/m{i}.py": py(f"f{i}", "return 3") for i in range(1, 5)},
        "Return three from every module function at once",
        when=t + 4 * DAY,
    )
    shas["formatting"] = commit(
        repo,
        {"billing/invoice.py": py("render_invoice_total", "return 42").replace("    ", "        ")},
        "Reindent the invoice module with eight spaces",
        when=t + 5 * DAY,
    )
    shas["with_test"] = commit(
        repo,
        {
            "billing/refund.py": py("compute_refund_amount", "return 7"),
            "tests/test_refund.py": py("test_compute_refund_amount", "assert True"),
        },
        "Compute refund amounts per line item",
        when=t + 6 * DAY,
    )
    shas["gone_later"] = commit(
        repo,
        {"shipping/label.py": py("print_parcel_label")},
        "Add a parcel label printer for shipping",
        when=t + 7 * DAY,
    )
    shas["deletes_it"] = commit(
        repo,
        {"shipping/label.py": None, "pkg/m5.py": py("f5", "return 5")},
        "Remove the parcel label printer and return five",
        when=t + 8 * DAY,
    )
    base = repo.head.target
    shas["side"] = commit(
        repo,
        {"pkg/m1.py": py("f1", "return 9")},
        "Return nine from the first module",
        when=t + 9 * DAY,
    )
    side = repo.head.target
    repo.head.set_target(base)  # a merge of `side` into a branch that moved on meanwhile
    repo.checkout_head(strategy=pygit2.enums.CheckoutStrategy.FORCE)
    shas["main_after"] = commit(
        repo,
        {"pkg/m2.py": py("f2", "return 8")},
        "Return eight from the second module",
        when=t + 10 * DAY,
    )
    shas["merge"] = commit(
        repo,
        {"pkg/m1.py": py("f1", "return 9")},
        "Merge branch side into main with the nine",
        when=t + 11 * DAY,
        parents=[repo.head.target, side],
    )
    shas["revert"] = commit(
        repo,
        {"pkg/m2.py": py("f2", "return 1")},
        'Revert "Return eight from the second module"',
        when=t + 12 * DAY,
    )
    return shas


def test_questions_and_answers_follow_the_rules(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shas = build_history(root)
    found = select_questions(root, on_disk(root), SelectOptions())
    by_sha = {q.sha: q for q in found.questions}
    assert set(by_sha) == {
        shas["kept_invoice"],
        shas["with_test"],
        shas["deletes_it"],
        shas["side"],
        shas["main_after"],
    }
    invoice = by_sha[shas["kept_invoice"]]
    assert invoice.answers == ("billing/invoice.py",)
    assert invoice.languages == ("python",)
    assert invoice.question == (
        "Render invoice totals with tax included\n"
        "The total used the net price; it now adds the tax rate."
    )
    # the test file the commit also changed is not an answer: a question asks for the code
    assert by_sha[shas["with_test"]].answers == ("billing/refund.py",)
    # the deleted file is dropped, the file still there stays
    assert by_sha[shas["deletes_it"]].answers == ("pkg/m5.py",)
    assert found.questions[0].sha == shas["main_after"]  # newest first
    skipped = dict(found.skipped)
    assert skipped == {
        "merge": 1,
        "revert": 1,
        "no code file changed": 1,
        "message too short": 1,
        "more code files than --max-files": 2,  # the four-file commit and the initial import
        "formatting or renames only": 1,
        "its files are gone or not indexed": 1,  # the label printer, deleted since
    }
    assert found.files_dropped == 2  # label.py twice: its own commit and the one deleting it
    assert found.walked == len(shas)


def test_a_merge_is_told_by_its_parents_not_its_wording(tmp_path: Path) -> None:
    """GitHub squash merges and patch series rebuilt as commits have one parent and a
    `Merge ...` subject: their diff is one real change, so they are questions, asked with the
    body's first line in place of the subject (which names a branch or an advisory, not code)."""
    root = tmp_path / "repo"
    repo = make_repo(root)
    commit(repo, {"README.md": "# proxy\n"}, "Start the proxy project with a readme", when=EPOCH)
    strip = commit(
        repo,
        {"proxy/redirect.py": py("strip_proxy_authorization")},
        "Merge pull request from GHSA-34jh-p97f-mpxf\n\n"
        "Strip Proxy-Authorization header on redirects\n",
        when=EPOCH + DAY,
    )
    fork = commit(
        repo,
        {"proxy/decode.py": py("decode_body_once")},
        "Merge commit from fork\n\n* Stop decoding response content during redirects\n\n"
        "* Add a changelog entry\n",
        when=EPOCH + 2 * DAY,
    )
    commit(
        repo,
        {"proxy/retry.py": py("retry_after")},
        "Merge pull request from GHSA-g4mx-q9vg-27p4",
        when=EPOCH + 3 * DAY,
    )
    found = select_questions(root, on_disk(root), SelectOptions())
    asked = {q.sha: q.question for q in found.questions}
    assert asked == {
        strip: "Strip Proxy-Authorization header on redirects",
        fork: "* Stop decoding response content during redirects\n* Add a changelog entry",
    }
    subject_only = select_questions(root, on_disk(root), SelectOptions(subject_only=True))
    assert {q.sha: q.question for q in subject_only.questions}[fork] == (
        "* Stop decoding response content during redirects"
    )
    # a bare `Merge ...` subject says nothing once its boilerplate is gone: too short, not a merge
    assert dict(found.skipped) == {"message too short": 1, "no code file changed": 1}


def test_limits_since_and_max_files(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shas = build_history(root)
    two = select_questions(root, on_disk(root), SelectOptions(commits=2))
    assert [q.sha for q in two.questions] == [shas["main_after"], shas["side"]]
    since = select_questions(root, on_disk(root), SelectOptions(since=_date(EPOCH + 9 * DAY)))
    assert {q.sha for q in since.questions} == {shas["main_after"], shas["side"]}
    wide = select_questions(root, on_disk(root), SelectOptions(max_files=6))
    assert shas["too_many"] in {q.sha for q in wide.questions}
    assert shas["initial"] in {q.sha for q in wide.questions}


def test_subject_only_drops_the_body(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shas = build_history(root)
    found = select_questions(root, on_disk(root), SelectOptions(subject_only=True))
    invoice = next(q for q in found.questions if q.sha == shas["kept_invoice"])
    assert invoice.question == "Render invoice totals with tax included"


def test_clean_message_strips_trailers_refs_and_urls() -> None:
    text = (
        "fix(parser): keep comments in nested blocks [skip ci] (closes #12, GH-7)\n\n"
        "See https://example.com/issues/12 for the report.\n"
        "Co-authored-by: Bob <bob@example.com>\n\n"
        "A second paragraph that is not part of the question.\n"
    )
    assert clean_message(text) == (
        "fix(parser): keep comments in nested blocks\nSee for the report."
    )
    assert clean_message(text, subject_only=True) == "fix(parser): keep comments in nested blocks"


@pytest.mark.parametrize(
    ("subject", "question"),
    [
        # a backport bot's tags go whole: the PR number, the commit it picks, the branch
        (
            "[PR #8079/1c335944 backport][3.9] Validate static paths (#8080)",
            "Validate static paths",
        ),
        (
            "[PR #9851/541d86d backport][3.10] Fix incorrect parsing of chunk extensions",
            "Fix incorrect parsing of chunk extensions",
        ),
        (
            "[3.12] gh-108310: Fix a crash in the tokenizer (GH-108311)",
            "Fix a crash in the tokenizer",
        ),
        ("#123: keep the cookie jar sorted by domain", "keep the cookie jar sorted by domain"),
        ("Pick the fix from #8079/1c335944 for the parser", "Pick the fix from for the parser"),
        # a tag that is a word of the question stays
        ("[netrc] keep the default entry last", "[netrc] keep the default entry last"),
    ],
)
def test_clean_message_drops_backport_tags_whole(subject: str, question: str) -> None:
    assert clean_message(subject) == question


def test_not_a_repository_and_no_history(tmp_path: Path) -> None:
    with pytest.raises(NoHistory, match="not a git repository"):
        select_questions(tmp_path, on_disk(tmp_path), SelectOptions())
    make_repo(tmp_path / "empty")
    with pytest.raises(NoHistory, match="no commits"):
        select_questions(tmp_path / "empty", on_disk(tmp_path / "empty"), SelectOptions())


def test_shallow_boundary_commits_are_skipped(tmp_path: Path) -> None:
    """A shallow clone's oldest commit has no parent here: its diff would be the whole tree."""
    source = tmp_path / "source"
    repo = make_repo(source)
    commit(repo, {"a.py": py("alpha")}, "Add the alpha function to the module", when=EPOCH)
    commit(repo, {"b.py": py("beta")}, "Add the beta function to the module", when=EPOCH + DAY)
    commit(
        repo, {"c.py": py("gamma")}, "Add the gamma function to the module", when=EPOCH + 2 * DAY
    )
    clone = shallow_clone(source, tmp_path / "clone", depth=2)
    found = select_questions(clone, on_disk(clone), SelectOptions())
    assert [q.answers for q in found.questions] == [("c.py",)]
    assert dict(found.skipped) == {"shallow clone boundary": 1}


def test_a_subfolder_workspace_maps_paths(tmp_path: Path) -> None:
    """A workspace folder below the repository's top: answers are relative to it, and commits
    that touch only files outside it are not questions for it."""
    root = tmp_path / "mono"
    repo = make_repo(root)
    commit(repo, {"web/app.py": py("serve_home_page")}, "Serve the home page from the app")
    commit(repo, {"api/routes.py": py("list_orders")}, "List the orders from the routes")
    found = select_questions(root / "web", on_disk(root / "web"), SelectOptions())
    assert [q.answers for q in found.questions] == [("app.py",)]
    assert dict(found.skipped) == {"outside this folder": 1}


def _date(epoch: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d")


def test_a_question_naming_its_file_is_told_apart() -> None:
    def asked(text: str) -> Question:
        return Question(
            "0" * 40, "2024-03-01", text, ("core/storage/lexical/bm25.py",), ("python",)
        )

    assert names_an_answer(asked("bm25.py: tokenize in batches"))
    assert names_an_answer(asked("speed up core/storage/lexical/bm25.py for long rows"))


def test_a_leading_module_prefix_names_its_file() -> None:
    """`netrc: fix ...` answered by lib/netrc.c names the file by its stem, the way curl, git and
    Linux write subjects: such a question is not one that names no file."""

    def asked(text: str, *answers: str) -> Question:
        answers = answers or ("core/storage/lexical/bm25.py",)
        return Question("0" * 40, "2024-03-01", text, answers, ("python",) * len(answers))

    assert names_an_answer(asked("bm25: tokenize rows in batches"))
    assert names_an_answer(asked("BM25: tokenize rows in batches"))
    assert names_an_answer(asked("lexical/bm25: tokenize rows in batches"))
    assert names_an_answer(asked("fix(bm25): tokenize rows in batches"))
    assert names_an_answer(asked("perf(lexical/bm25)!: tokenize rows in batches"))
    assert names_an_answer(asked("vtls/openssl: keep the CA cache", "lib/vtls/openssl.c"))
    assert names_an_answer(asked("url: reuse credentials", "lib/transfer.c", "lib/url.c"))
    # a folder, another file's stem, a path that is not a suffix, the stem later on: not named
    assert not names_an_answer(asked("lexical: tokenize rows in batches"))
    assert not names_an_answer(asked("storage/bm25: tokenize rows in batches"))
    assert not names_an_answer(asked("protocol: disable reuse for SMB", "lib/smb.c"))
    assert not names_an_answer(asked("tokenize: bm25 rows in batches"))
    assert not names_an_answer(asked("the bm25 tokenizer: rows in batches"))
    # only the question's first line carries the prefix
    assert not names_an_answer(asked("Tokenize rows in batches\nbm25: see the comment"))


def test_score_is_recall_and_reciprocal_rank() -> None:
    ranked = ["a.py", "b.py", "c.py", "d.py", "e.py", "f.py"]
    assert score(["b.py"], ranked) == {"R@1": 0.0, "R@5": 1.0, "MRR": 0.5}
    assert score(["a.py", "f.py"], ranked) == {"R@1": 0.5, "R@5": 0.5, "MRR": 1.0}
    assert score(["z.py"], ranked) == {"R@1": 0.0, "R@5": 0.0, "MRR": 0.0}


def test_a_sweep_over_many_files_is_not_a_question(tmp_path: Path) -> None:
    """One code file among twenty-one changed files (a rename sweep, a licence header): the
    message describes the sweep, not the code file."""
    root = tmp_path / "repo"
    repo = make_repo(root)
    commit(repo, {"app.py": py("main")}, "Add the main entry point of the app", when=EPOCH)
    sweep = {f"docs/page{i}.md": f"# page {i}\n" for i in range(20)} | {
        "app.py": py("main", "return 2")
    }
    commit(repo, sweep, "Add twenty documentation pages and touch the app", when=EPOCH + DAY)
    found = select_questions(root, on_disk(root), SelectOptions(max_files=100))
    assert [q.question for q in found.questions] == ["Add the main entry point of the app"]
    assert dict(found.skipped) == {"more files than a focused change": 1}
