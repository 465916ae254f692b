"""A command's answer from the per-user daemon, when `daemon.enabled` is on (docs/daemon.md).

`through_daemon` replays the daemon's stdout, stderr and exit code (a user error raises here as
it would have in-process); None means "answer in this process": the daemon is off, or it could
not answer, and then one line on stderr says why. Imports nothing heavy.
"""

from __future__ import annotations

import argparse
import sys

from codeask.cli.common import UserError


def through_daemon(command: str, args: argparse.Namespace) -> int | None:
    """The exit code of `command` answered by the daemon, or None (answer in-process)."""
    from codeask.daemon import client

    if not client.enabled(args):
        return None
    try:
        reply = client.ask(command, args)
    except client.Unavailable as exc:
        sys.stderr.write(f"codeask: daemon unavailable ({exc}); answering in-process\n")
        return None
    except Exception as exc:  # anything else on the way: the command must still answer
        sys.stderr.write(
            f"codeask: daemon unavailable ({type(exc).__name__}: {exc}); answering in-process\n"
        )
        return None
    sys.stdout.write(reply["stdout"])
    sys.stderr.write(reply["stderr"])
    if reply["status"] == "user_error":
        error = UserError(reply["message"])
        error.exit_code = reply["code"]
        raise error
    return int(reply["code"])
