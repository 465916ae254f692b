"""A report that names a package by a word few files use ranks the package's files first
(core/search/steps/packages.py): the real `codeask index` and `codeask search` on a git
repository the test makes, with the step (the default), with `retrieve.package_weight = 0`,
and with the package's name made common in the project."""

from __future__ import annotations

from pathlib import Path

from support.search_cli import first_file


def checker(i: int) -> str:
    """A big module that shares the report's common words (type hints, default values)."""
    return "\n\n".join(
        f"def check_type_hint_{i}_{j}(node, default=None):\n"
        '    """Read the type hints of an argument: it does not help when the default value '
        'is None."""\n'
        f"    return node.annotation is None and default is None\n"
        for j in range(4)
    )


DIAGRAM = (
    "class ClassDiagram:\n"
    '    """Boxes and arrows, one box per klass."""\n\n'
    "    def slots(self, klass):\n"
    "        return sorted(klass.instance_attrs)\n"
)
REPORT = """Use type hints for UML generation

It seems that umlgen does not read the type hints of an argument, and this does not help when
you use None as a default value:

```
class C(object):
    def __init__(self, a: str = None):
        self.a = a
```

Output of umlgen: the attribute is drawn without its type hint. Expected: `a : String`.
"""


def files(filler: str) -> dict[str, str]:
    """Twelve checkers, the diagram package, and 60 small modules holding `filler`."""
    tree = {f"tool/checkers/check{i}.py": checker(i) for i in range(12)}
    tree["tool/umlgen/diagrams.py"] = DIAGRAM
    tree |= {f"tool/misc/m{i}.py": f"VALUE_{i} = {i}  # {filler}\n" for i in range(60)}
    return tree


def test_the_package_the_report_names_leads(tmp_path: Path) -> None:
    """Without the step the checkers, full of the report's common words, fill the head."""
    off = {"CODEASK_RETRIEVE__PACKAGE_WEIGHT": "0"}
    assert first_file(tmp_path / "off", files("plain"), REPORT, **off) != "tool/umlgen/diagrams.py"
    assert first_file(tmp_path / "on", files("plain"), REPORT) == "tool/umlgen/diagrams.py"


def test_a_name_many_files_use_is_no_lead(tmp_path: Path) -> None:
    """When most of the project's files hold the word, it names nothing in particular."""
    assert first_file(tmp_path, files("umlgen"), REPORT) != "tool/umlgen/diagrams.py"
