"""Build the multi-language pasted-report set from real bug-fix commits.

    python -m benchmarks.reports_build --mirrors /work/.mirror --out benchmarks/data/reports

Each repository of the manifest (benchmarks/data/reports/manifest.json: GitHub name, language,
pinned commit) is read from a local clone with history (`<mirrors>/<owner>+<name>/repo`, a git
directory). A commit becomes a question when it is a bug fix told in prose: one parent, a
subject that says it fixes something (`fix`, `bug`, `crash`, `wrong`, ...) and is long enough to
be a pasted report (`query.is_report`: over 300 characters or more than two lines), changing
one to three source files of the repository's language, none of them a test, all still present
at the pinned commit. The question is the message as a user would paste it (subject and body,
trailers, issue references and URLs removed by `codeask eval`'s cleaner); the answers are the
source files the fix changed. Newest first, at most `--per-repo` per repository.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pygit2
from pygit2.enums import DeltaStatus, DiffOption, SortMode

from codeask.core.checks.selfcheck_questions import clean_message
from codeask.core.git.commits import split_message
from codeask.core.search.query import is_report
from codeask.core.search.retrieve import VENDORED, is_test_path
from codeask.core.source.languages import language_for_path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "reports"
#: Words a bug fix's message uses (a feature or a refactor is not a report).
FIX_WORDS = re.compile(
    r"\b(fix(e[sd])?|bug|crash(es|ed)?|wrong|incorrect(ly)?|broken|regression|"
    r"segfault|overflow|leak|panic(s|ked)?|error|fail(s|ed|ure)?|issue)\b",
    re.IGNORECASE,
)
#: Subjects of changes that are not bug fixes, whatever their body says.
NOT_A_FIX = re.compile(
    r"^(feat|docs?|chore|refactor|tests?|ci|build|style|perf|bump|release|revert)\b|typo|comment",
    re.IGNORECASE,
)
#: A commit that changes more files than this is a sweep, not one fix.
MAX_FILES = 3
#: How far back each repository's walk reads.
WALK = 6000


def load_manifest(folder: Path) -> list[dict[str, Any]]:
    """The repositories: name, language, commit."""
    return list(json.loads((folder / "manifest.json").read_text(encoding="utf-8")))


def report_text(raw: str) -> str:
    """Subject and every body paragraph, cleaned as `codeask eval` cleans a message (its
    cleaner keeps the first paragraph: the paragraphs are joined so that it keeps them all)."""
    subject, body = split_message(raw)
    joined = "\n".join(line for line in body.splitlines() if line.strip())
    return clean_message(f"{subject}\n\n{joined}")


def source_changes(repo: pygit2.Repository, commit: pygit2.Commit, language: str) -> list[str]:
    """Source files of `language` the commit changed (tests and vendored code left out); []
    when it changed more than MAX_FILES files of any kind or a file of another language."""
    parent = repo[commit.parent_ids[0]].peel(pygit2.Commit)
    diff = parent.tree.diff_to_tree(commit.tree, flags=DiffOption.IGNORE_WHITESPACE)
    if len(diff) > MAX_FILES * 3:
        return []
    found = []
    for delta in diff.deltas:
        if delta.status in (DeltaStatus.ADDED, DeltaStatus.DELETED):
            continue
        path = delta.new_file.path
        spec = language_for_path(path)
        if spec is None or _is_test(path) or VENDORED.search(path):
            continue
        if _family(spec.name) != _family(language):
            return []
        found.append(path)
    return found if len(found) <= MAX_FILES else []


def _is_test(path: str) -> bool:
    """A test by the engine's rule, or a file named `test*` (hiredis' `test.c`)."""
    return is_test_path(path) or Path(path).name.lower().startswith("test")


def _family(language: str) -> str:
    """C and C++ headers, JS and TS share files (`.h`, `.d.ts`): one family each."""
    return {"c": "c", "cpp": "c", "javascript": "js", "typescript": "js", "tsx": "js"}.get(
        language, language
    )


def questions(entry: dict[str, Any], mirrors: Path, per_repo: int) -> Iterator[dict[str, Any]]:
    """The repository's bug-fix reports, newest first."""
    owner, name = entry["repo"].split("/")
    repo = pygit2.Repository(str(mirrors / f"{owner}+{name}" / "repo"))
    pinned = repo.revparse_single(entry["commit"]).peel(pygit2.Commit)
    count = 0
    for i, commit in enumerate(repo.walk(pinned.id, SortMode.TIME)):
        if i >= WALK or count >= per_repo:
            return
        if len(commit.parent_ids) != 1:
            continue
        text = report_text(commit.message)
        subject = text.partition("\n")[0]
        if not FIX_WORDS.search(subject) or NOT_A_FIX.search(subject) or not is_report(text):
            continue
        gold = [p for p in source_changes(repo, commit, entry["language"]) if p in pinned.tree]
        if not gold:
            continue
        count += 1
        yield {
            "id": f"{owner}__{name}-{str(commit.id)[:10]}",
            "package": name,
            "version": str(pinned.id)[:12],
            "language": entry["language"],
            "question": text,
            "gold_files": gold,
            "source": "bug-fix commit",
            "repo": entry["repo"],
            "fix_commit": str(commit.id),
            "split": "dev",
        }


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mirrors", type=Path, required=True, help="<owner>+<name>/repo clones")
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--per-repo", type=int, default=15)
    args = parser.parse_args(argv)
    rows = []
    for entry in load_manifest(args.out):
        found = list(questions(entry, args.mirrors, args.per_repo))
        print(f"{entry['repo']}: {len(found)}")
        rows += found
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (args.out / "dev.jsonl").write_text(lines, encoding="utf-8")
    print(f"{len(rows)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
