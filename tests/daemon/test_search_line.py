"""`codeask search ...` read without argparse (daemon/search_line.py) must read exactly what
cli/parser.py reads, or leave the line to the full CLI (None): never another answer."""

from __future__ import annotations

import contextlib
import io
import random
from typing import Any

import pytest

from codeask.cli.parser import build_parser
from codeask.daemon.search_line import read

#: Command lines the light reader takes: each must parse to argparse's namespace.
READ = [
    ["search", "url routing"],
    ["-v", "search", "x"],
    ["-vv", "--verbose", "search", "x"],
    ["search", "x", "--json"],
    ["search", "--json", "x"],
    ["search", "x", "-k", "5"],
    ["search", "x", "-k7"],
    ["search", "-k", "05", "x", "-k", "3"],
    ["search", "x", "--lang", "go", "--path", "src/**"],
    ["search", "x", "--lang=go", "--path=src/*.py", "--root=."],
    ["search", "x", "--root", "a", "--root", "b"],
    ["search", "x", "--root="],
    ["search", "x", "--mode", "lexical", "--scope", "all"],
    ["search", "x", "--mode=dense", "--history"],
    ["search", "x", "--history", "--scope", "code"],
    ["search", "x", "--kind", "function", "--author", "ann", "--since", "2020-01-01"],
    ["search", "x", "--until", "2024-12-31", "--json", "--json"],
    ["search", ""],
    ["search", "--lang", "", "x"],
    ["search", "x", "--lang=-x"],
    ["search", "a=b", "--json"],
    ["search", "ünïcödé ☃", "--path", "*.rs"],
    ["search", "x=1"],
]
#: Command lines left to the full CLI: unusual, refused by argparse, or not a search.
LEFT = [
    [],
    ["search"],
    ["search", "a", "b"],
    ["search", "x", "--no-daemon"],
    ["search", "--no-daemon", "x"],
    ["search", "x", "-h"],
    ["search", "x", "--help"],
    ["search", "--js", "x"],
    ["search", "x", "--json=1"],
    ["search", "x", "--history=1"],
    ["search", "x", "-k"],
    ["search", "x", "-k", "five"],
    ["search", "x", "-k", "-5"],
    ["search", "x", "-k", "+5"],
    ["search", "x", "-k", "٥"],
    ["search", "x", "-k=5"],
    ["search", "x", "--lang"],
    ["search", "x", "--lang", "--json"],
    ["search", "x", "--lang", "-"],
    ["search", "x", "--mode", "fast"],
    ["search", "x", "--scope=everything"],
    ["search", "--", "-x"],
    ["search", "-x"],
    ["search", "-5"],
    ["search", "-x y"],
    ["search", "x", "-v"],
    ["--verb", "search", "x"],
    ["-vx", "search", "x"],
    ["--version", "search", "x"],
    ["status"],
    ["serve"],
    ["mcp", "x"],
    ["ask", "x"],
    ["search", "caf\udce9"],
    ["search", "x", "--root", "caf\udce9"],
]


def argparse_reads(argv: list[str]) -> dict[str, Any] | None:
    """What the full CLI parses from `argv` (None: it refuses the line, or exits)."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(build_parser().parse_args(argv))
        except SystemExit:
            return None


@pytest.mark.parametrize("argv", READ, ids=" ".join)
def test_a_plain_search_reads_as_argparse_reads_it(argv: list[str]) -> None:
    expected = argparse_reads(argv)
    assert expected is not None, "argparse refuses this line: not a case for the table"
    assert read(argv) == expected


@pytest.mark.parametrize("argv", LEFT, ids=repr)
def test_anything_else_is_left_to_the_full_cli(argv: list[str]) -> None:
    assert read(argv) is None


def test_random_command_lines_read_the_same_or_not_at_all() -> None:
    """Lines drawn from the search options, values, queries and junk: every line the light
    reader takes, argparse parses to the same arguments (and it takes most plain lines)."""
    words = [
        "q", "other", "", "-", "-k", "3", "-k3", "-k=3", "--lang", "--lang=go", "go",
        "--path", "*.py", "--root", "--root=.", ".", "--mode", "lexical", "dense", "bad",
        "--scope", "all", "--history", "--kind", "class", "--author", "--since", "--until",
        "--json", "--no-daemon", "--", "-v", "--js", "-x", "-5", "=", "--mode=hybrid",
    ]  # fmt: skip
    rng = random.Random(29)
    taken = 0
    for _ in range(3000):
        head = ["-v"] * rng.randint(0, 2) + ["search"]
        argv = head + [rng.choice(words) for _ in range(rng.randint(0, 6))]
        light = read(argv)
        if light is not None:
            taken += 1
            assert light == argparse_reads(argv), argv
    assert taken > 200, taken
