"""`codeask ask`'s entry: `--prompt-only` is answered by the daemon when `daemon.enabled` (it
calls no model: the same retrieval and prompt, from warm memory); everything else, and any
daemon failure, runs `codeask.cli.ask` here. Imported before the engine, to stay light."""

from __future__ import annotations

import argparse

from codeask.cli.forward import through_daemon


def run(args: argparse.Namespace) -> int:
    if args.prompt_only:
        answered = through_daemon("ask", args)
        if answered is not None:
            return answered
    from codeask.cli import ask

    return ask.run(args)
