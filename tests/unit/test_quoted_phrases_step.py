"""The error message a report quotes ranks the file that raises it first
(core/search/steps/phrases.py): the real `codeask index` and `codeask search` on a git
repository the test makes, once with the step (the default) and once with
`retrieve.phrase_weight = 0`."""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.steps.phrases import PHRASE_WORDS, phrases, quoted, shared_runs
from support.search_cli import first_file

RUNNER = "\n\n".join(
    f"def {name}(session, module):\n"
    f'    """{doc}"""\n'
    f"    return session.skip(module) if module.skipped else session.run(module)\n"
    for name, doc in (
        ("run_module", "Run a module of the session unless it is skipped at module level."),
        ("skip_module", "Skip a module: the session reports it as skipped, at module level."),
        ("collect_module", "Collect a module; a module level skip ends its collection."),
        ("report_skip", "Report a skipped module and the reason it was skipped."),
    )
)
FILES = {
    "app/runner.py": RUNNER,
    "app/loader.py": (
        "def load(path, allow_module_level=False):\n"
        '    """Import the file at `path`."""\n'
        "    if not allow_module_level:\n"
        "        raise UsageError(\n"
        '            "Skipping outside of a function is not allowed; pass the "\n'
        '            "allow_module_level flag to do it on purpose."\n'
        "        )\n"
    ),
}
REPORT = """Improve handling of skip at module level

When a module is skipped at module level the session runs the module anyway. Skipping the
module with the documented call prints this:

> Skipping outside of a function is not allowed; pass the allow_module_level flag to do it
> on purpose.

I expected the module to be skipped and the skip reported like any other skipped module.
"""


def test_the_file_that_raises_the_quoted_message_ranks_first(tmp_path: Path) -> None:
    """Without the step the module using more of the report's words wins."""
    assert first_file(tmp_path / "on", FILES, REPORT) == "app/loader.py"
    off = {"CODEASK_RETRIEVE__PHRASE_WEIGHT": "0"}
    assert first_file(tmp_path / "off", FILES, REPORT, **off) == "app/runner.py"


def test_phrases_ignore_case_digits_and_punctuation() -> None:
    quoted = phrases("Skipping OUTSIDE of (2) a function, is not allowed!")
    raised = phrases('raise UsageError("skipping outside of a function is not allowed")')
    assert quoted and quoted <= raised
    assert phrases(" ".join(["word"] * (PHRASE_WORDS - 1))) == set()


def test_a_message_in_the_reports_own_words_is_not_read(tmp_path: Path) -> None:
    """Only what a report pasted (fenced, or quoted with `>`) is matched: unquoted, the same
    words are the reporter's prose (a commit message's compiler output, a paraphrase)."""
    unquoted = REPORT.replace("\n> ", "\n")
    assert first_file(tmp_path, FILES, unquoted) == "app/runner.py"


def test_quoted_keeps_fenced_blocks_and_quotes_only() -> None:
    text = "prose one\n```\nfenced line\n```\nprose two\n  > quoted line\n~~~\ntilde line\n"
    assert quoted(text) == "fenced line\n  > quoted line\ntilde line"


def test_shared_runs_counts_what_the_set_intersection_counts() -> None:
    pasted_text = "the value is not allowed here; the value is not allowed at module level at all"
    pasted = phrases(pasted_text)
    vocabulary = set(pasted_text.replace(";", "").split())
    for text in (
        "if x: raise Error('The value is NOT allowed here, the value is not allowed at module')",
        "the value is not allowed the value is not allowed here",
        "nothing in common with it at all, not one run of six",
        "",
    ):
        assert shared_runs(text, vocabulary, pasted) == len(pasted & phrases(text))
