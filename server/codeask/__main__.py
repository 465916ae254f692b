"""`python -m codeask` is the `codeask` command. A plain `serve`, `mcp` or `search` with the
daemon on is forwarded before the CLI is imported (daemon/forwarding.py: the process an editor
or agent starts stays small, a search costs little more than the interpreter's start);
everything else is `codeask.cli.main`."""

import sys

from codeask.daemon.forwarding import run


def main() -> int:
    """Entry point of `python -m codeask`."""
    return run(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
