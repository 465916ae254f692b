"""One warm codeask per user (issue 29): a daemon on a Unix socket that `codeask search`,
`codeask status` and `codeask ask --prompt-only` ask instead of loading the index and the
models in every command, and that serves `codeask mcp` sessions for forwarders.

- `paths`: where the socket, the lock and the log live, and the ownership checks (0700 dir,
  0600 socket, both the user's).
- `protocol`: length-prefixed msgspec JSON requests and replies, with a version.
- `server`: the daemon (one per user: a flock; peers of another uid refused; idle exit).
- `client`: what a command calls: the daemon's answer, started on demand, or None (in-process).
- `folders`: the daemon's opened folder indexes, reopened when a new snapshot is published.
- `forwarding`: run first by `python -m codeask` / the console script: a plain `serve` or `mcp`
  with the daemon on is forwarded before the CLI is imported (the process stays ~13 MB).
- `relay`: the skeleton both forwarders share (run loop, reader thread, reconnect, give up).
- `forwarder`: `codeask mcp` as a thin forwarder (standard library only): the agent's stdio
  piped to an MCP session in the daemon (mcp/remote.py), surviving the daemon's death.
- `lsp_forwarder`: `codeask serve` the same way, to a language-server session (lsp/remote.py).

It imports `codeask.core` (and the CLI hands it its commands); `codeask.core` never imports it.
"""
