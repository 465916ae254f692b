"""The agents' face: `codeask mcp`, an MCP server over stdio (docs/mcp.md).

A thin adapter: the tools call `codeask.core.operations` over the folders' indexes and
shape what they answer; nothing here ranks, indexes or redacts by itself. MCP itself is
codeask's own small JSON-RPC layer over msgspec: the MCP SDK and pydantic (~44 MB of every
process serving agents) are only the tests' client.

- `server`: the session over `wire` (stdio that answers every request, stdout kept for the
  protocol); `protocol`: the MCP session (handshake, both eras, methods, calls on worker
  threads, cancellation); `jsonrpc`: JSON-RPC 2.0 messages and errors.
- `tools`: the tools; `arguments`: their arguments (a contract); `toolkit`: schemas,
  argument checks, results; `results`: answers sized for an agent; `status`: `index_status`.
- `folders`: each folder's index opened and kept current in the background (one writer).
- Paths go through the one path guard (core/operations/paths.py), argument bounds through the
  one limits table (core/source/limits.py), as in the language server.
- `remote`: the same server as one session per connection in the per-user daemon, each with
  its own folders and checks, the folders' drivers shared (daemon/forwarder.py forwards).
"""
