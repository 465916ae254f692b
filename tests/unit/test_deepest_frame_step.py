"""A pasted traceback's deepest project frame ranks its file first (core/search/steps/frames.py):
the real `codeask index` and `codeask search` on a git repository the test makes, once with
the step (the default) and once with `retrieve.frame_weight = 0`."""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.steps.frames import frames
from support.search_cli import first_file

SESSION = "\n\n".join(
    f"def {name}(session, report):\n"
    f'    """{doc}"""\n'
    f"    session.report = report\n"
    f"    return session.hooks.{name}(session=session, report=report)\n"
    for name, doc in (
        ("run_session", "Run the session: collect, run and report every item of the session."),
        ("dispatch_hook", "Dispatch a session hook to every plugin with the session's report."),
        ("collect_report", "Collect the session report for an item whose repr is shown."),
        ("session_finish", "Finish the session and write the report of every item."),
        ("report_item", "Report one item of the session with its repr and its outcome."),
    )
)
FILES = {
    "shop/session.py": SESSION,
    "shop/saferepr.py": (
        "def format_failure(obj):\n"
        '    """Text for an object that cannot describe itself."""\n'
        "    return '<%s instance>' % type(obj).__name__\n"
    ),
    "tests/test_repro.py": "class Broken:\n    def __repr__(self):\n        raise RuntimeError()\n",
}
SITE = "/usr/lib/python3.11/site-packages/shop"
REPORT = f"""INTERNALERROR when an item's repr raises during a session

The session crashes while it writes the report of an item whose repr raises.

```
INTERNALERROR> Traceback (most recent call last):
INTERNALERROR>   File "{SITE}/session.py", line 3, in run_session
INTERNALERROR>   File "{SITE}/session.py", line 9, in dispatch_hook
INTERNALERROR>   File "{SITE}/session.py", line 15, in collect_report
INTERNALERROR>   File "{SITE}/session.py", line 27, in report_item
INTERNALERROR>   File "{SITE}/saferepr.py", line 3, in format_failure
INTERNALERROR>   File "/home/me/project/tests/test_repro.py", line 3, in __repr__
INTERNALERROR> RuntimeError: No active exception to reraise
```
"""


def test_the_deepest_project_frame_ranks_first(tmp_path: Path) -> None:
    """Without the step the frames' outer module, named four times, wins."""
    assert first_file(tmp_path / "on", FILES, REPORT) == "shop/saferepr.py"
    off = {"CODEASK_RETRIEVE__FRAME_WEIGHT": "0"}
    assert first_file(tmp_path / "off", FILES, REPORT, **off) == "shop/session.py"


def test_the_three_frame_shapes_outermost_first() -> None:
    text = (
        'File "C:\\env\\Lib\\shop\\a.py", line 1, in outer\n'
        "File ~/code/shop/b.py:265, in Plot._repr_png_(self)\n"
        "shop/c.py:12: in inner\n"
        "not a frame: shop/d.py line 3\n"
    )
    assert list(frames(text)) == [
        ("C:/env/Lib/shop/a.py", "outer"),
        ("code/shop/b.py", "_repr_png_"),
        ("shop/c.py", "inner"),
    ]
