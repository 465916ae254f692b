"""What a question says before any index is asked: identifiers, paths, intent, the text to search.

Questions come in two shapes. A search typed by hand ("where are chunks embedded") means every
word. A pasted report (an issue, a traceback, a log) is mostly context: environment dumps,
template checklists and links add terms that match the wrong files (an `INSTALLED VERSIONS`
block names every dependency, so the module that prints versions wins), and words like "test" or
"docs" appear in passing while the answer is code. `search_text` drops the noise; `is_report`
keeps incidental words from being read as intent.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from codeask.core.source.languages import CODE_SUFFIXES

TEST_WORDS = re.compile(r"\b(tests?|testing|pytest|unittest|fixture|conftest)\b", re.I)
#: "test" naming a kind of code rather than asking for tests: the test client, a test server.
TEST_MODIFIER = re.compile(
    r"\btest\s+(client|runner|server|mode|request|response|app|application|harness|"
    r"database|db|config|configuration|settings|environment|helper|helpers|utils?)\b",
    re.I,
)
DOC_WORDS = re.compile(
    r"\b(docs?|documentation|documented|readme|guide|tutorial|changelog|release notes)\b", re.I
)
DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
#: A file mention is a run of path characters up to its last `.ext` (1-5 letters or digits, a
#: word boundary after). Found in two linear passes (`file_mentions`): the one regex
#: `[A-Za-z0-9_./\\-]+\.[A-Za-z0-9]{1,5}\b` backtracks through every start of a long run, and a
#: pasted base64 blob or minified line of 400k characters took it 85 s.
PATH_RUN = re.compile(r"[A-Za-z0-9_./\\-]+")
EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,5}\b")
IDENT = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]{2,}(?![A-Za-z0-9_])")
CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
#: Longer than this (characters or lines), a query is a report, not a typed search.
REPORT_CHARS = 300
REPORT_LINES = 2
#: Report lines that carry no search terms: `numpy: 1.23.4` / `commit: None` / `pkg==1.2`
#: version dumps, template checkboxes (`- [X] Minimal example — ...`) and unanswered fields.
NOISE_LINE = re.compile(
    r"^\s*[-*]?\s*[\w.-]{1,30}(:\s*|==)(None|v?\d+(\.[\w+-]+)*)(\s*[|(].*)?\s*$"
    r"|^\s*[-*]\s*\[[ xX]\]\s"
    r"|^\s*_?No response_?\s*$",
)
#: `key: value` with a one-word value (`OS: Linux`, `machine: x86_64`): noise in a run of them.
DUMP_LINE = re.compile(r"^\s*[-*]?\s*[\w.-]{1,30}:\s*\S{1,40}\s*$")
DUMP_RUN = 4
#: Scheme and host of a link: the path part may name a file (`.../xarray/core/nanops.py#L35`).
#: A Python traceback frame: the file and the function it was in.
FRAME = re.compile(r'File "([^"]+)", line \d+, in ([A-Za-z_][A-Za-z0-9_]*)')
URL_HOST = re.compile(r"\bhttps?://[^/\s]+")
#: Lines that open a report without summarising it: a fence, a traceback header, a comment,
#: a template heading (`### Describe the bug`, `**To Reproduce**`), an attachment (a line that
#: is only a markdown image or link: `![screenshot](...)`, `[repro.zip](...)`).
NOT_A_LEAD = re.compile(
    r"^\s*(```|~~~|<|#|\*\*[^*]+\*\*:?\s*$|Traceback \(most recent|!?\[[^\]]*\]\([^)]*\)\s*$)"
)
LEAD_CHARS = 300


@dataclass
class QuerySignals:
    """What a question text says about where to look."""

    identifiers: set[str]
    paths: list[str]
    about_tests: bool
    about_docs: bool
    tests_as_modifier: bool = False
    """Every test word is a modifier ("the test client"): the question is about that code."""
    report: bool = False
    """A pasted report rather than a typed search (see `is_report`)."""
    text: str = ""
    """The words worth matching (`search_text`), for the lexical query and the query vector."""
    lead: str = ""
    """The report's summary line (`lead`), searched on its own; '' for a typed search."""


def query_signals(query: str) -> QuerySignals:
    """Identifiers, dotted module paths and file names in free text (issues, tracebacks)."""
    identifiers = {m.group() for m in IDENT.finditer(query) if _code_like(query, m)}
    paths: list[str] = []
    for mention in file_mentions(query):
        text = mention.replace("\\", "/").strip("./")
        if "/" in text or text.endswith(CODE_SUFFIXES):
            paths.append(text)
    for match in FRAME.finditer(query):
        paths.append(match.group(1).replace("\\", "/").lstrip("/"))
        identifiers.add(match.group(2))
    for match in DOTTED.finditer(query):
        parts = match.group().split(".")
        identifiers.update(parts)
        paths.append("/".join(parts))
    paths = list(dict.fromkeys(paths))  # a long log names the same file thousands of times
    if is_report(query):
        text = search_text(query)
        return QuerySignals(
            identifiers,
            paths,
            about_tests=False,
            about_docs=False,
            report=True,
            text=text,
            lead=_first_summary_line(text),
        )
    test_words = len(TEST_WORDS.findall(query))
    return QuerySignals(
        identifiers,
        paths,
        about_tests=test_words > 0,
        about_docs=bool(DOC_WORDS.search(query)),
        tests_as_modifier=0 < test_words == len(TEST_MODIFIER.findall(query)),
        text=query,
    )


def file_mentions(text: str) -> list[str]:
    """What `PATH_RUN` + `EXTENSION` as one regex would find, in linear time: each run of path
    characters up to its rightmost extension after the run's first character (at most one
    mention per run: the greedy run ends at that last extension)."""
    extensions = [m.span() for m in EXTENSION.finditer(text)]  # every valid `.ext`, ascending
    ends = [end for _, end in extensions]
    mentions: list[str] = []
    for run in PATH_RUN.finditer(text):
        start, end = run.span()
        last = bisect.bisect_right(ends, end) - 1  # the rightmost extension ending in this run
        if last >= 0 and extensions[last][0] > start:
            mentions.append(text[start : ends[last]])
    return mentions


def is_report(query: str) -> bool:
    """A pasted issue, traceback or log rather than a search typed by hand.

    Such texts mention tests and docs in passing ("the docs say", "in my test", "pytest 6.1")
    while the answer is code, so they carry no intent to find tests or docs: on the dev set
    reading intent from them cost R@5 .536 → .664 (benchmarks/README.md)."""
    return len(query) > REPORT_CHARS or query.count("\n") > REPORT_LINES


#: A word of prose: letters only, lower case after an optional capital, with the punctuation
#: a sentence puts around it. `parse_args`, `fooBar`, `x.y`, `0x1f`, `<atomic>` are not.
PROSE_WORD = re.compile(r"^[(\"']?[A-Za-z][a-z]*[.,;:!?)\"']*$")


def prose_share(query: str) -> float:
    """The share of a text's words that are plain English words rather than code, paths,
    numbers or log output (0.0 for an empty text): how much a report reads like a sentence."""
    words = query.split()
    if not words:
        return 0.0
    return sum(1 for word in words if PROSE_WORD.match(word)) / len(words)


def search_text(query: str) -> str:
    """The words worth matching: a report without its version dumps, checkboxes and link hosts."""
    if not is_report(query):
        return query
    lines = [line for line in query.splitlines() if not NOISE_LINE.match(line)]
    kept: list[str] = []
    run: list[str] = []
    for line in [*lines, ""]:
        if DUMP_LINE.match(line):
            run.append(line)
            continue
        if len(run) < DUMP_RUN:
            kept.extend(run)
        run = []
        kept.append(line)
    return URL_HOST.sub(" ", "\n".join(kept[:-1]))


def lead(query: str) -> str:
    """A report's summary line (an issue's title): the densest statement of what is wrong.

    Weighted as its own lexical query, it lifts the dev set's R@5 from .686 to .829
    (benchmarks/README.md); the body's many incidental words no longer drown it.
    '' for a typed search (it is all lead) or a report without one. Taken from `search_text`,
    so it is always part of the text the query vector is made of (its tokens are pooled again
    from that one pass) and has no link hosts or version dumps either."""
    return _first_summary_line(search_text(query)) if is_report(query) else ""


def _first_summary_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip() and not NOT_A_LEAD.match(line) and len(line.split()) >= 2:
            return line.strip()[:LEAD_CHARS]
    return ""


def _code_like(text: str, match: re.Match[str]) -> bool:
    """`snake_case`, `camelCase`, `Name(` or a `backticked` word; plain English words are not."""
    word = match.group()
    if "_" in word.strip("_") or CAMEL.search(word):
        return True
    before = text[match.start() - 1 : match.start()]
    after = text[match.end() : match.end() + 1]
    return after == "(" or (before != "" and before in "`'\"")
