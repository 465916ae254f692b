"""Pasted text as a search query: a huge blob, a dotted or slashed run of thousands of parts.

Each of these once stalled a search: a 400k-character base64 line took the file-mention regex
85 s (it backtracked through every start of the run), and a 50,000-part dotted run took 15 s
(every suffix of the "path" was joined and looked up). The timeout marks are hang guards, not
speed targets (the linear code answers each in well under a second here; the old code took
minutes on these inputs). Every case also checks that the search still does its job.
"""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest
from tests.unit.test_retrieve import make_folder

from codeask.core.search.query import query_signals
from codeask.core.search.retrieve import search

FILES = {
    "pkg/mod.py": "def handle_request(request):\n    return request.body\n",
    "pkg/other.py": "def unrelated():\n    return 1\n",
}


def blob(chars: int) -> str:
    """One unbroken run of path characters (url-safe base64: letters, digits, `-`, `_`), as a
    pasted token, hash list or minified bundle can be."""
    return base64.urlsafe_b64encode(random.Random(5).randbytes(chars * 3 // 4)).decode()


@pytest.mark.timeout(60)
def test_a_huge_unbroken_token_is_searched_in_linear_time(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, FILES)
    query = "handle_request fails on this payload: " + blob(400_000) + " see pkg/mod.py"
    signals = query_signals(query)
    assert "pkg/mod.py" in signals.paths
    for mode in ("lexical", "hybrid"):
        hits = search([folder], query, mode=mode).hits  # type: ignore[arg-type]
        assert hits and hits[0].path == "pkg/mod.py", mode
    folder.close()


@pytest.mark.timeout(60)
def test_a_run_of_thousands_of_parts_still_names_its_file(tmp_path: Path) -> None:
    """A dotted or slashed run of 100,000 parts: only suffixes a workspace path could have are
    tried, and the file its tail names is still found."""
    folder = make_folder(tmp_path, FILES)
    for query in (
        ".".join(["abc"] * 100_000) + ".pkg.mod",
        "/".join(["dir"] * 100_000) + "/pkg/mod.py",
    ):
        hits = search([folder], query, mode="lexical").hits
        assert hits and hits[0].path == "pkg/mod.py"
        assert "path" in hits[0].retrievers
    folder.close()


@pytest.mark.timeout(60)
def test_a_long_log_naming_one_file_thousands_of_times(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, FILES)
    frame = '  File "/srv/app/pkg/mod.py", line {}, in handle_request'
    query = "\n".join(frame.format(i) for i in range(50_000))
    signals = query_signals(query)
    assert signals.paths.count("srv/app/pkg/mod.py") == 1  # one mention, not 50,000
    hits = search([folder], query, mode="lexical").hits
    assert hits and hits[0].path == "pkg/mod.py"
    folder.close()
