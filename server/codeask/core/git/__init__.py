"""Git, read through pygit2: one module per job.

- `repo`: opening the repository, HEAD, files changed between commits, uncommitted files.
- `commits`: commit facts as people read them (author, date, subject) and recent commits.
- `diffs`: unified diffs of a commit or of the working tree, under discovery's path rules.
- `hunks`: one commit's diff as hunk chunks, within per-commit work caps.
- `sync`: the indexed history window kept in line with HEAD (commit and hunk chunks).
- `blame`: the commits behind the lines the editor shows.

Every function degrades to "no history" instead of raising: a folder that is not a git
repository, an empty repository, a shallow clone or a broken ref only turn features off.
The workspace folder may be a subfolder of the repository (monorepos): paths in and out of
this package are relative to the workspace folder.
"""

__all__ = [
    "blame",
    "commits",
    "diffs",
    "repo",
    "sync",
]
