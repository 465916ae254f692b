"""A plain `codeask search ...` command line read without argparse (issue 29: the forwarded
search's process stays near a bare interpreter).

`read` gives the very dict `vars(build_parser().parse_args(argv))` gives (cli/parser.py: the
daemon runs the command with it) for the common command lines, and None for anything it does
not read exactly as argparse would: an abbreviated or unknown option, `-h`, `--no-daemon`, `--`,
an argument that starts with `-` where a value or the query stands, a second query, a value
argparse would refuse, bytes that are not UTF-8 (argparse's `input_text` rewrites them). None
means "the full CLI parses it": never a different answer, only a slower one.
tests/daemon/test_search_line.py holds the two readers together. Kept on purpose: the CLI's
parser added 40 ms of CPU to a forwarded search, argparse alone 17 ms (docs/architecture.md,
"Copies kept on purpose").
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (the forwarded search stays small)
    from collections.abc import Sequence
    from typing import Any

#: Options taking one value → the dest argparse stores it under (`--root` appends).
VALUED = {
    "-k": "k",
    "--lang": "language",
    "--path": "path_glob",
    "--root": "root",
    "--mode": "mode",
    "--scope": "scope",
    "--kind": "kind",
    "--author": "author",
    "--since": "since",
    "--until": "until",
}
#: Options without a value → (dest, the value they store).
FLAGS = {"--json": ("json", True), "--history": ("scope", "history")}
#: Values argparse checks against a list of choices.
CHOICES = {"mode": ("hybrid", "lexical", "dense"), "scope": ("code", "history", "all")}


def leading_verbosity(argv: Sequence[str]) -> tuple[int, int]:
    """(where the command stands, how many `-v`) of the top-level flags before it."""
    at, verbose = 0, 0
    for arg in argv:
        if arg == "--verbose":
            verbose += 1
        elif arg[:2] == "-v" and set(arg[1:]) == {"v"}:
            verbose += len(arg) - 1
        else:
            break
        at += 1
    return at, verbose


def read(argv: Sequence[str]) -> dict[str, Any] | None:
    """The parsed arguments of a plain `[-v...] search QUERY [OPTIONS]`, or None."""
    at, verbose = leading_verbosity(argv)
    if argv[at : at + 1] != ["search"] or not all(_utf8(arg) for arg in argv):
        return None
    args: dict[str, Any] = {
        "verbose": verbose,
        "command": "search",
        "query": None,
        "k": None,
        "language": None,
        "path_glob": None,
        "root": None,
        "json": False,
        "mode": "hybrid",
        "scope": "code",
        "kind": None,
        "author": None,
        "since": None,
        "until": None,
        "no_daemon": False,
    }
    rest = list(argv[at + 1 :])
    while rest:
        arg = rest.pop(0)
        if not arg.startswith("-"):
            if args["query"] is not None:
                return None  # argparse: unrecognized arguments
            args["query"] = arg
            continue
        if arg in FLAGS:
            dest, value = FLAGS[arg]
            args[dest] = value
            continue
        option, value = _split(arg)
        if option not in VALUED:
            return None
        if value is None:
            if not rest or rest[0].startswith("-"):
                return None  # argparse: expected one argument (or a value it reads otherwise)
            value = rest.pop(0)
        if not _store(args, VALUED[option], value):
            return None
    return args if args["query"] is not None else None


def _split(arg: str) -> tuple[str, str | None]:
    """(the option, its attached value or None): `--lang=go`, `-k5`; `-k=5` is left alone."""
    if arg.startswith("--"):
        option, equals, value = arg.partition("=")
        return (option, value) if equals else (arg, None)
    if arg.startswith("-k") and len(arg) > 2:
        return ("-k", arg[2:]) if arg[2] != "=" else ("", None)
    return arg, None


def _store(args: dict[str, Any], dest: str, value: str) -> bool:
    """Store one option's value as argparse would; False when argparse would refuse it."""
    if dest == "k":
        if not (value.isascii() and value.isdigit()):
            return False  # int() reads more ("+5", " 5", "5_0"): left to argparse
        args["k"] = int(value)
    elif dest == "root":
        args["root"] = [*(args["root"] or []), value]
    elif dest in CHOICES and value not in CHOICES[dest]:
        return False
    else:
        args[dest] = value
    return True


def _utf8(text: str) -> bool:
    """No surrogate escapes in it (argparse's `input_text` would rewrite them)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
