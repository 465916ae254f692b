"""`codeask ask`'s entry: `--prompt-only` is answered by the daemon when `daemon.enabled` (it
calls no model: the same retrieval and prompt, from warm memory, sent back as data and shown
by cli/ask_view.py as in-process); everything else, and any daemon failure, runs
`codeask.cli.ask` here. Imported before the engine, to stay light."""

from __future__ import annotations

import argparse

from codeask.cli.forward import answer_of, through_daemon


def run(args: argparse.Namespace) -> int:
    if args.prompt_only:
        reply = through_daemon("ask", args)
        if reply is not None:
            from codeask.cli.ask_view import show_prompt

            return show_prompt(answer_of(reply), args.json)
    from codeask.cli import ask

    return ask.run(args)
