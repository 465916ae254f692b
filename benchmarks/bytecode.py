"""codeask's modules compiled before a benchmark times a process's start, as an install leaves them.

Why: `pip install` of a wheel writes every module's bytecode, and an editable install writes it
at the first import, unless PYTHONDONTWRITEBYTECODE is set (as it is on some machines here). A
process that compiles its ~300 modules from source each start spends ~0.25 s more on 2 cores,
which a user never pays: each cold step (a fresh daemon, `search --no-daemon`, an edit's
`codeask index`) would count it. The children still obey the variable; they read what is here.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import codeask


def compile_codeask() -> str:
    """Compile codeask's modules where they are installed; a line saying what was done."""
    package = Path(codeask.__file__).parent
    try:
        compiled = compileall.compile_dir(str(package), quiet=1)
    except OSError as exc:
        return f"# bytecode: {package} not compiled ({exc}); each process compiles what it imports"
    variable = "set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "unset"
    state = "compiled" if compiled else "NOT all compiled (a folder is read-only?)"
    return (
        f"# bytecode: codeask's modules {state} under {package} "
        f"(PYTHONDONTWRITEBYTECODE {variable}), as an install leaves them"
    )
