"""A report that keeps naming one module of a package ranks it above its bigger sibling
(core/search/steps/siblings.py): the real `codeask index` and `codeask search` on a git
repository the test makes, once with the step (the default) and once with
`retrieve.sibling_weight = 0`."""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.steps.siblings import named_words
from support.search_cli import first_file


def parser(doc: str, count: int) -> str:
    """A module of `count` signature-parsing functions described by `doc`."""
    return "\n\n".join(
        f"def parse_signature_{i}(signature, annotation):\n"
        f'    """{doc}"""\n'
        f"    return [part.strip() for part in signature.split(annotation)]\n"
        for i in range(count)
    )


FILES = {
    "docs/__init__.py": "",
    "docs/domains/__init__.py": "",
    "docs/domains/cpp.py": parser(
        "Parse a signature and its annotation into cross-reference nodes for the type.", 6
    ),
    "docs/domains/python.py": parser("Parse a function signature into nodes.", 1),
}
REPORT = """Return annotation None is not a cross-reference in a Python signature

Documenting a Python function whose signature has the annotation `-> None`, the type in the
signature is not turned into a cross-reference node, while `-> int` is. Seen with Python 3.8.
"""


def test_the_module_the_report_names_leads_its_folder(tmp_path: Path) -> None:
    """Without the step the sibling with more of the report's words wins."""
    off = {"CODEASK_RETRIEVE__SIBLING_WEIGHT": "0"}
    assert first_file(tmp_path / "off", FILES, REPORT, **off) == "docs/domains/cpp.py"
    assert first_file(tmp_path / "on", FILES, REPORT) == "docs/domains/python.py"


def test_a_word_named_in_passing_is_not_a_name() -> None:
    assert named_words("Python, python and PYTHON; html twice: html") == {"python"}
