"""`python -m codeask.cli` is the `codeask` command too."""

from codeask.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
