"""One warm codeask per user (issue 29): a daemon on a Unix socket that `codeask search`,
`codeask status` and `codeask ask --prompt-only` ask instead of loading the index and the
models in every command, and that serves `codeask mcp` sessions for forwarders.

- `paths`: where the socket, the lock and the log live, and the ownership checks (0700 dir,
  0600 socket, both the user's).
- `protocol`: length-prefixed JSON requests and replies, with a version; `messages`: their
  msgspec types, the operations' typed calls among them (the daemon answers data).
- `server`: the daemon (one per user: a flock; peers of another uid refused; idle exit).
- `client`: what a command calls: the daemon's answer, started on demand, or None (in-process).
- `folders`: the CLI's read-mode indexes kept in the daemon's one cache of open indexes
  (`SharedIndexes`), reopened when a new snapshot is published.
- `forwarding`: run first by `python -m codeask` / the console script: a plain `serve` or `mcp`
  with the daemon on is forwarded before the CLI is imported (the process stays ~13 MB).
- `relay`: the MCP forwarder's skeleton (run loop, reader thread, reconnect, give up).
- `forwarder`: `codeask mcp` as a thin forwarder (standard library only): the agent's stdio
  piped to an MCP session in the daemon (mcp/remote.py), surviving the daemon's death.
- `lsp_forwarder`: `codeask serve` as a pipe to a language-server session (lsp/remote.py);
  the session ends with the daemon (exit 75) and the editor starts it again.

It imports `codeask.core` (and the CLI hands it its operations); `codeask.core` never imports
it.
"""
