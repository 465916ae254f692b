"""An operation's answer from the per-user daemon, when `daemon.enabled` is on (docs/daemon.md).

`through_daemon` returns the daemon's reply: the operation's answer as data (or its user
error), with the notes its own process would have written to stderr first; the command renders
it as it renders an answer of its own. None means "answer in this process": the daemon is off,
or it could not answer, and then one line on stderr says why. Imports nothing heavy.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def through_daemon(command: str, args: argparse.Namespace) -> dict[str, Any] | None:
    """The daemon's reply to operation `command` (status ok or user_error), or None."""
    from codeask.daemon import client

    if not client.enabled(args):
        return None
    try:
        return client.ask(command, args)
    except client.Unavailable as exc:
        sys.stderr.write(f"codeask: daemon unavailable ({exc}); answering in-process\n")
        return None
    except Exception as exc:  # anything else on the way: the command must still answer
        sys.stderr.write(
            f"codeask: daemon unavailable ({type(exc).__name__}: {exc}); answering in-process\n"
        )
        return None


def answer_of(reply: dict[str, Any]) -> Any:
    """The daemon's answer, after the notes its own process would have written to stderr; a
    user error raises here as it would have in-process."""
    sys.stderr.write(reply["notes"])
    if reply["status"] == "user_error":
        from codeask.cli.common import UserError

        error = UserError(reply["message"])
        error.exit_code = reply["code"]
        raise error
    return reply["answer"]
