"""What is read and how it is cut: the first stage of the pipeline.

- `discover`: which files of a folder are indexed, and why the rest are not
  (`specialfs`: the pseudo filesystems a walk never enters; `walk_cache`: folders unchanged
  since the last walk are not listed again; `tree_watch`: the file events of a folder a
  long-lived writer holds, so its passes re-check only the changed paths).
- `globs`: gitignore-style globs matched in linear time (RE2), whoever wrote them.
- `ignore_note`: the note when ignore rules leave (nearly) nothing of a folder to index.
- `names`: file names as text (storable? shown on one line).
- `safe_read`: one workspace file read for a request, never through a swapped symlink.
- `limits`: the one table of request limits for every face (and the differences, as data).
- `languages`: the one list of languages (grammar, suffixes, definition node types).
- `chunk`: files → chunks (definitions, sections, windows), secrets redacted (`secrets`),
  tree-sitter bounded per file (`parse_bound`: CPU budget, nesting depth).
- `redact_outbound`: the stricter redaction of text that leaves the machine.

Imports nothing of ours but `config`, `records` and `runtime.private_files` (the walk cache's
file is owner-only, like the index beside it).

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "chunk",
    "discover",
    "globs",
    "ignore_note",
    "languages",
    "limits",
    "names",
    "redact_outbound",
    "safe_read",
    "secrets",
    "tree_watch",
    "walk_cache",
]
