"""core/search/central.py: which candidate file the other candidate files call into."""

from __future__ import annotations

from codeask.core.records import Chunk
from codeask.core.search.central import callers_by_file, lift_central_files


def chunk(path: str, ident: int, symbol: str = "", calls: tuple[str, ...] = ()) -> Chunk:
    return Chunk(
        path=path,
        language="python",
        kind="function",
        start_line=1,
        end_line=2,
        text="",
        symbol=symbol,
        calls=list(calls),
        id=ident,
    )


def test_callers_are_other_files_and_common_names_point_nowhere() -> None:
    """A file's own calls do not count, `obj.name` counts for `name`, and a name three
    candidate files define (`get`) points at none of them."""
    by_path = {
        "hub.py": [chunk("hub.py", 1, "dispatch", ("dispatch", "get"))],
        "a.py": [chunk("a.py", 2, "get", ("core.dispatch", "get"))],
        "b.py": [chunk("b.py", 3, "get", ("dispatch",))],
        "c.py": [chunk("c.py", 4, "get", ())],
    }
    assert callers_by_file(by_path) == {"hub.py": {"a.py", "b.py"}}


def test_only_a_file_called_from_two_files_or_more_is_lifted() -> None:
    by_path = {
        "hub.py": [chunk("hub.py", 1, "dispatch"), chunk("hub.py", 2, "helper")],
        "a.py": [chunk("a.py", 3, "send", ("dispatch",))],
        "b.py": [chunk("b.py", 4, "recv", ("dispatch", "send"))],
    }
    fused = {1: 0.5, 2: 0.2, 3: 1.0, 4: 0.8}
    lift_central_files(by_path, fused, 0.15)
    assert fused == {1: 0.5 + 0.15, 2: 0.2, 3: 1.0, 4: 0.8}
