"""`python -m codeask` is the `codeask` command."""

from codeask.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
