"""The `codeask` command line: every subcommand and its flags, in one place.

It imports no command module, so `codeask --help` stays fast; `codeask.cli.main` runs the
module named after the chosen subcommand.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeAlias

from codeask import __version__
from codeask.cli.common import EXIT_BUSY
from codeask.core.source.names import input_text

#: What `add_subparsers` returns: each `_add_*` adds one subcommand to it.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (also used to document the CLI)."""
    parser = argparse.ArgumentParser(
        prog="codeask", description="Index, search and ask about code, offline."
    )
    parser.add_argument("--version", action="version", version=f"codeask {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _SUBCOMMANDS:
        add(sub)
    return parser


def _add_no_daemon(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-daemon",
        action="store_true",
        help="answer in this process even when `daemon.enabled` is on",
    )


def _add_query_options(parser: argparse.ArgumentParser) -> None:
    """Options `search` and `ask` share. The filters' dests are `Filters` field names, so
    `Filters.from_options(args)` reads them."""
    parser.add_argument("-k", type=int, default=None, help="number of results")
    parser.add_argument(
        "--lang",
        dest="language",
        metavar="LANG",
        type=input_text,
        help="only this language (python, go, ...)",
    )
    parser.add_argument(
        "--path",
        dest="path_glob",
        metavar="PATH",
        type=input_text,
        help="only paths matching this glob (gitignore syntax)",
    )
    parser.add_argument("--root", action="append", help="workspace folder (repeatable)")
    parser.add_argument("--json", action="store_true")


def _add_index(sub: Subcommands) -> None:
    """`codeask index`: first pass, --full, backends."""
    index = sub.add_parser(
        "index",
        help="index (or update) workspace folders",
        description="Index (or update) workspace folders. Ignore rules: .gitignore files "
        "(nested, with negation), .git/info/exclude, .codeaskignore (same syntax, beats "
        ".gitignore) and the index.exclude setting. When they leave (nearly) nothing at a "
        "folder's top, index and status name the file and line. To index such a tree anyway: "
        "set index.gitignore = false (user config, a trusted .codeask.toml, or "
        "CODEASK_INDEX__GITIGNORE=false) so git's rules are not read, or re-include with a "
        "`!` line in .codeaskignore (e.g. `!/*`).",
    )
    index.add_argument("paths", nargs="*", help="folders to index (default: this project)")
    index.add_argument("--rebuild", action="store_true", help="forget the index and rebuild it")
    index.add_argument(
        "--full",
        action="store_true",
        help="also wait for the MiniLM tier (minutes: ~25-55 chunks/s on 2 cores); without it, "
        "index returns once the first pass (lexical + static vectors) is searchable",
    )
    index.add_argument(
        "--lexical-only",
        action="store_true",
        help="the first pass only, never the MiniLM tier (the default without --full; "
        "kept for scripts)",
    )
    index.add_argument(
        "--no-wait",
        action="store_true",
        help=f"if another `codeask index` is writing this index, exit {EXIT_BUSY} at once",
    )
    index.add_argument(
        "--allow-broad-root",
        action="store_true",
        help="allow indexing your home folder or / (refused by default)",
    )
    index.add_argument(
        "--backend",
        choices=("local", "postgres"),
        default="local",
        help="postgres: share vectors through the team database and publish HEAD's index "
        "there (CI, writer role; the DSN is read from the variable index.dsn_env names)",
    )
    index.add_argument(
        "--repo-name",
        help="the repository's name in the team index (default: the origin URL, else the folder "
        "name; the name is printed)",
    )
    index.add_argument("--json", action="store_true")
    _add_no_daemon(index)


def _add_search(sub: Subcommands) -> None:
    """`codeask search` (the daemon's forwarded search reads its line with this too)."""
    search = sub.add_parser("search", help="hybrid semantic + lexical search")
    search.add_argument("query", type=input_text)
    _add_query_options(search)
    search.add_argument("--mode", choices=("hybrid", "lexical", "dense"), default="hybrid")
    search.add_argument("--scope", choices=("code", "history", "all"), default="code")
    search.add_argument(
        "--history",
        dest="scope",
        action="store_const",
        const="history",
        help="search git history (commits and diff hunks)",
    )
    search.add_argument(
        "--kind", help="function, method, class, module, section, window, commit, hunk"
    )
    search.add_argument(
        "--author", type=input_text, help="history: author name or email contains this"
    )
    search.add_argument("--since", help="history: on or after this date (YYYY-MM-DD)")
    search.add_argument("--until", help="history: on or before this date (YYYY-MM-DD)")
    _add_no_daemon(search)


def _add_status(sub: Subcommands) -> None:
    """`codeask status`."""
    status = sub.add_parser("status", help="what is indexed")
    status.add_argument("--root", action="append", help="workspace folder (repeatable)")
    status.add_argument("--json", action="store_true")
    _add_no_daemon(status)


def _add_daemon(sub: Subcommands) -> None:
    """`codeask daemon`: run, --stop or --status."""
    daemon = sub.add_parser(
        "daemon",
        help="run the per-user daemon that serve, mcp and search forward to (foreground)",
    )
    control = daemon.add_mutually_exclusive_group()
    control.add_argument("--stop", action="store_true", help="stop the running daemon")
    control.add_argument("--status", action="store_true", help="is one running, and what it holds")


def _add_health(sub: Subcommands) -> None:
    """`codeask health`: what the editors check."""
    health = sub.add_parser(
        "health", help="LLM endpoint, model, embedding tiers and index: what the editors check"
    )
    health.add_argument("--root", action="append", help="workspace folder (repeatable)")
    health.add_argument(
        "--timeout", type=float, default=2.0, help="seconds to wait for the endpoint (default 2)"
    )
    health.add_argument("--json", action="store_true")


def _add_ask(sub: Subcommands) -> None:
    """`codeask ask`."""
    ask = sub.add_parser("ask", help="ask a question; the answer streams from the configured LLM")
    ask.add_argument("question", type=input_text)
    _add_query_options(ask)
    ask.add_argument("--prompt-only", action="store_true", help="print the prompt, call no model")
    _add_no_daemon(ask)


def _add_eval(sub: Subcommands) -> None:
    """`codeask eval`: the retrieval self-check from git history."""
    selfcheck = sub.add_parser(
        "eval",
        help="retrieval self-check from this repository's git history: recent commit messages "
        "as questions, their files as answers (R@5 / MRR per language and tier)",
    )
    selfcheck.add_argument("path", nargs="?", help="workspace folder (default: this project)")
    selfcheck.add_argument(
        "--commits", type=int, default=200, help="questions at most, newest first (default 200)"
    )
    selfcheck.add_argument("--since", help="only commits on or after this date (YYYY-MM-DD)")
    selfcheck.add_argument(
        "--max-files",
        type=int,
        default=3,
        help="skip commits that change more code files than this (default 3)",
    )
    selfcheck.add_argument(
        "--subject-only", action="store_true", help="ask the subject line alone, not the body"
    )
    selfcheck.add_argument(
        "--questions",
        action="store_true",
        help="also list every question and where its files ranked",
    )
    selfcheck.add_argument("--json", action="store_true")


def _add_gc(sub: Subcommands) -> None:
    """`codeask gc`: the team index's revisions."""
    gc = sub.add_parser(
        "gc", help="team index: delete all but the newest published revisions (writer role)"
    )
    gc.add_argument(
        "--keep", type=int, default=5, help="revisions kept per repository and model (default 5)"
    )
    gc.add_argument("--json", action="store_true")


def _add_mcp(sub: Subcommands) -> None:
    """`codeask mcp`."""
    mcp = sub.add_parser("mcp", help="run the MCP server for coding agents (stdio)")
    mcp.add_argument("paths", nargs="*", help="folders to serve (default: this project)")
    _add_no_daemon(mcp)
    mcp.add_argument(
        "--allow-broad-root",
        action="store_true",
        help="allow serving your home folder or / (refused by default)",
    )
    mcp.add_argument(
        "--print-config",
        choices=("claude", "codex", "cursor", "gemini", "vscode"),
        metavar="CLIENT",
        help="print the line that registers this codeask with CLIENT (claude, codex, cursor, "
        "gemini, vscode), its full path included, and exit",
    )


def _add_serve(sub: Subcommands) -> None:
    """`codeask serve`: the language server."""
    serve = sub.add_parser("serve", help="run the language server (stdio)")
    serve.add_argument("--tcp", type=int, metavar="PORT", help="listen on TCP instead (debugging)")
    serve.add_argument(
        "--stdio", action="store_true", help="use stdio (the default; accepted for LSP clients)"
    )
    _add_no_daemon(serve)


#: The subcommands in `codeask --help` order.
_SUBCOMMANDS: tuple[Callable[[Subcommands], None], ...] = (
    _add_index,
    _add_search,
    _add_status,
    _add_daemon,
    _add_health,
    _add_ask,
    _add_eval,
    _add_gc,
    _add_mcp,
    _add_serve,
)
