"""A report whose own sentences name a package by a word few files use ranks the package's files
first (core/search/steps/packages.py): the real `codeask index` and `codeask search` on a git
repository the test makes, with the step (the default), with `retrieve.package_weight = 0`,
with the package's name made common in the project, and with the name only in the report's
log and code lines (round 21's `lift_named_package` read those as intent on the kernel's
reports)."""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.steps.packages import prose_named
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
CODE = """
```
class C(object):
    def __init__(self, a: str = None):
        self.a = a
```
"""
REPORT = f"""Use type hints for UML generation

It seems that umlgen does not read the type hints of an argument, and this does not help when
you use None as a default value:
{CODE}
Output of umlgen: the attribute is drawn without its type hint. Expected: `a : String`.
"""
#: The same words, the name only where a log or a command line puts it.
LOGGED = f"""Use type hints for UML generation

It does not read the type hints of an argument, and this does not help when you use None as a
default value:
{CODE}
```
$ umlgen --output dot module.py
umlgen: wrote classes.dot
```
Modules linked in: umlgen checkers
    Hardware name: umlgen umlgen
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


def test_a_name_only_in_logs_and_code_is_no_lead(tmp_path: Path) -> None:
    """A command line, a log line or an indented trace names what ran, not what is wrong."""
    assert first_file(tmp_path, files("plain"), LOGGED) != "tool/umlgen/diagrams.py"


def test_kernel_boilerplate_is_not_prose() -> None:
    """The lines round 21's rule misread on the kernel's reports name nothing: a capitalised
    acronym, a name with digits, a header line, a name in one sentence only."""
    report = (
        "BUG: KASAN: use-after-free in ext4_xattr_set_entry+0x1a4f/0x3a50\n"
        "Hardware name: Google Google Compute Engine/Google Compute Engine, BIOS Google\n"
        "Modules linked in: snd_hda_intel i915 drm_buddy\n"
        " print_report+0x15e/0x45d mm/kasan/report.c:395\n"
        "The expressions of an element seem to be freed twice when the set is deleted in one\n"
        "batch as the element, while the i915 workqueue is being drained.\n"
    )
    named = prose_named(report)
    assert {"kasan", "google", "i915"}.isdisjoint(named)
    assert "element" in named  # two sentences name it
