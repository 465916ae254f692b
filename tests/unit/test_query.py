"""Reading a pasted report: what is noise, what is intent, which files it names."""

from __future__ import annotations

import random
import re
from pathlib import Path

from tests.unit.test_retrieve import make_folder

from codeask.core.search.query import (
    file_mentions,
    is_report,
    lead,
    prose_share,
    query_signals,
    search_text,
)
from codeask.core.search.retrieve import fused_candidates, rank_files

REPORT = """merge(combine_attrs='override') references attrs of the first object
**What happened**: the merged attrs change with the source; the docs say they are copied.
The culprit is here: https://github.com/org/proj/blob/1be777f/proj/core/merge.py#L35
- [X] Minimal example — the example is as focused as reasonably possible
**Environment**:
INSTALLED VERSIONS
------------------
commit: None
python: 3.8.5 |Anaconda, Inc.| (default, Sep  4 2020, 07:30:14)
OS: Linux
machine: x86_64
processor: x86_64
LANG: en_US.UTF-8
numpy: 1.19.1
pandas==1.1.3
index.rst:43: WARNING: more than one target found for cross-reference 'A'
### Additional context
_No response_
"""


def test_a_typed_search_is_not_a_report() -> None:
    assert not is_report("where are chunks embedded")
    assert is_report(REPORT)
    assert search_text("where is numpy: 1.2 used") == "where is numpy: 1.2 used"


def test_report_noise_is_dropped_and_the_substance_kept() -> None:
    words = search_text(REPORT)
    for noise in (
        "numpy",
        "pandas",
        "x86_64",
        "en_US",
        "Anaconda",
        "Minimal example",
        "No response",
        "https",
        "github.com",
    ):
        assert noise not in words, noise
    for kept in (
        "combine_attrs",
        "merged attrs",
        "proj/core/merge.py",
        "WARNING: more than one",
        "INSTALLED VERSIONS",
    ):
        assert kept in words, kept


def test_a_short_key_value_list_is_not_a_dump() -> None:
    text = "x" * 400 + "\nKeyError: 'a'\nmode: strict\n"
    assert "KeyError: 'a'" in search_text(text) and "mode: strict" in search_text(text)


def test_words_in_passing_are_not_intent_in_a_report() -> None:
    """'the docs say' inside an issue is context; in a typed search it is the request."""
    assert not query_signals(REPORT).about_docs
    assert query_signals("where is the merge documented").about_docs
    assert not query_signals("pytest 6.1 fails to collect\n" + "x" * 400).about_tests


def test_traceback_frames_name_files_and_functions() -> None:
    signals = query_signals(
        'Traceback (most recent call last):\n  File "/usr/lib/python3.9/site-packages/'
        'pkg/lint/run.py", line 197, in check_parallel\n    pool = Pool()\n'
    )
    assert "usr/lib/python3.9/site-packages/pkg/lint/run.py" in signals.paths
    assert "check_parallel" in signals.identifiers


def test_an_absolute_or_url_path_finds_the_workspace_file(tmp_path: Path) -> None:
    """A traceback's site-packages path or a GitHub link names `pkg/e/merge.py` by suffix,
    even though four other `merge.py` files match the question's words better."""
    busy = "def combine(a, b):\n    combine(b, a)\n    return combine(a, a)\n"
    files = {f"pkg/{d}/merge.py": busy for d in "abcd"}
    files["pkg/e/merge.py"] = "def combine(a, b):\n    return a\n"
    folder = make_folder(tmp_path, files)
    for question in (
        "combine fails: https://github.com/o/pkg/blob/abc123/pkg/e/merge.py#L2 " + "x " * 200,
        'combine fails\n  File "/opt/venv/lib/site-packages/pkg/e/merge.py", line 2, in combine',
    ):
        hits = fused_candidates([folder], question, mode="lexical")
        assert rank_files(hits)[0][0] == "pkg/e/merge.py", question
    folder.close()


def test_the_lead_is_the_reports_summary_line() -> None:
    assert lead(REPORT).startswith("merge(combine_attrs='override') references")
    body = "x " * 200
    templated = "### Describe the bug\n**To Reproduce**\n```\nTraceback (most recent call last):\n"
    assert lead(templated + "Autodoc drops the return type of a property\n" + body) == (
        "Autodoc drops the return type of a property"
    )
    assert lead("where are chunks embedded") == ""  # a typed search is all lead


def test_the_lead_is_a_span_of_the_searched_text() -> None:
    """The lead comes from `search_text`: a link's host is gone from both (the query vector
    pools the lead's tokens from the text's own pass, so it must be found there), and an
    attachment line or an unanswered template field is never the summary."""
    report = (
        "_No response_\n"
        "![screenshot](https://user-images.example.com/1/shot.png)\n"
        "[repro.zip](https://github.com/o/r/files/1/repro.zip)\n"
        "$ git clone https://github.com/someone/project\n" + "body line\n" * 5
    )
    signals = query_signals(report)
    assert signals.lead == "$ git clone  /someone/project"
    assert signals.lead in signals.text
    assert lead(report) == signals.lead


def test_the_lead_outweighs_a_long_body(tmp_path: Path) -> None:
    """An issue whose body is mostly about another module still finds the one its title
    names: the title is searched on its own beside the whole text (`lead_weight` 0 shows
    the body winning without it)."""
    folder = make_folder(
        tmp_path,
        {
            "pkg/extension.py": "def verify_needs_extensions(app, config):\n"
            '    """Check that each extension is new enough."""\n',
            "pkg/builder.py": "def build_step(app):\n    make_output_directory(app, 'html')\n",
            "pkg/other.py": "def unrelated(x):\n    return x\n",
        },
    )
    body = "make output directory html build step failed\n" * 4 + "padding words here " * 20
    question = f"needs_extensions checks versions using strings\n{body}"
    top = {}
    for weight in (0.0, 1.0):
        folder.settings.retrieve.lead_weight = weight
        top[weight] = rank_files(fused_candidates([folder], question, mode="lexical"))[0][0]
    assert top == {0.0: "pkg/builder.py", 1.0: "pkg/extension.py"}
    folder.close()


def test_test_as_a_modifier_names_code_not_tests() -> None:
    client = query_signals("how does the test client handle cookies")
    assert client.about_tests and client.tests_as_modifier
    both = query_signals("tests for the test client")
    assert both.about_tests and not both.tests_as_modifier
    assert not query_signals("where is the retry loop").tests_as_modifier


def test_a_test_client_question_ranks_the_client_above_its_tests(tmp_path: Path) -> None:
    """Its tests say "client" and "cookie" more often than the client does; they still show
    up, below it (undemoted, as before, they came first)."""
    test = (
        "def test_client_cookie_{i}(client):\n    client.set_cookie('a', 'b')\n"
        "    assert client.cookies['a'] == 'b'\n\n"
    )
    folder = make_folder(
        tmp_path,
        {
            "pkg/testing.py": 'class TestClient:\n    """Sends requests, keeps cookies."""\n'
            "    def set_cookie(self, key, value):\n        self.cookies[key] = value\n",
            "tests/test_testing.py": test.format(i=1) + test.format(i=2),
            "pkg/other.py": "def unrelated(x):\n    return x\n",
        },
    )
    question = "how does the test client handle cookies"
    ranked = [p for p, _ in rank_files(fused_candidates([folder], question, mode="lexical"))]
    assert ranked[:2] == ["pkg/testing.py", "tests/test_testing.py"]
    folder.close()


def test_file_mentions_find_what_the_single_regex_found() -> None:
    """`file_mentions` is the old one-regex search done in two linear passes: on thousands of
    random path-like strings it finds exactly the same mentions (ordinary ones included)."""
    one_regex = re.compile(r"[A-Za-z0-9_./\\-]+\.[A-Za-z0-9]{1,5}\b")
    alphabet = "ab1Z_./\\-: é\n"
    rng = random.Random(13)
    texts = [
        "see src/pkg/mod.py:12 and C:\\work\\app.js, archive.tar.gz, v1.2.3 a.b/c x.pyé",
        'File "/usr/lib/python3.9/site-packages/pkg/mod.py", line 3, in run',
    ]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(4000)]
    for text in texts:
        assert file_mentions(text) == one_regex.findall(text), text


def test_prose_share_counts_english_words_not_code() -> None:
    """A report told in sentences reads as prose; one that is mostly code, paths and numbers
    does not (the share decides where the model tier ranks)."""
    told = "The parser drops the last key when a map is empty, so the output is wrong."
    assert prose_share(told) == 1.0
    pasted = "jv_parse(buf, 0x1f) -> NULL at src/jv_parse.c:120 `jvp_dtoa_fmt` [42]"
    assert prose_share(pasted) < 0.3
    assert prose_share("") == 0.0
    assert prose_share("Fix `foo_bar` when x.y is None") == 4 / 6
