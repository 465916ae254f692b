"""core/search/steps/fields.py: a report quoting reST fields ranks the module that registers
them first (real `codeask index` and `codeask search`, with and without the step)."""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.steps.fields import field_names
from support.search_cli import first_file

RENDER_ONE = (
    "def render_{}(docstring, types):\n"
    '    """Render the docstring of a parameter with its types joined by a bar."""\n'
    "    return ' | '.join(types) + docstring\n"
)
RENDER = "\n\n".join(RENDER_ONE.format(i) for i in range(5))
FIELDS = (
    "FIELDS = {'param': 'Parameters', 'type': 'Types'}\n\n\n"
    "def field_of(name):\n"
    '    """The heading of a field."""\n'
    "    return FIELDS[name]\n"
)
FILES = {"docs/render.py": RENDER, "docs/fields.py": FIELDS}
REPORT = """Support union types with a bar in a parameter's types

The docstring of a parameter should accept types joined by a bar:

```
:param text: a text
:type text: bytes | str
```

Render the parameter's types joined by the bar.
"""


def test_the_module_registering_the_fields_ranks_first(tmp_path: Path) -> None:
    """Without the step the module sharing the report's words wins."""
    off = {"CODEASK_RETRIEVE__FIELD_WEIGHT": "0"}
    assert first_file(tmp_path / "off", FILES, REPORT, **off) == "docs/render.py"
    assert first_file(tmp_path / "on", FILES, REPORT) == "docs/fields.py"


def test_fields_and_roles_not_urls_nor_paths() -> None:
    text = ":param text: a\n:rtype: str\nsee :py:func:`f` at http://x.org and a::b or c:d:e"
    assert field_names(text) == {"param", "rtype", "py"}
