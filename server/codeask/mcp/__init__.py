"""The agents' face: `codeask mcp`, an MCP server over stdio (docs/mcp.md).

The only package that imports the MCP SDK (as `codeask.lsp` is the only one that imports
pygls). A thin adapter: the five tools call `codeask.core.operations` over the folders'
indexes and shape what they answer; nothing here ranks, indexes or redacts by itself.

- `server`: the SDK's `MCPServer` with the tools, run over `wire` (stdio that answers every
  request, stdout kept for the protocol).
- `tools`: the five tools; `results`: answers sized for an agent; `status`: `index_status`.
- `folders`: each folder's index opened and kept current in the background (one writer).
- `paths`: the path guard; `limits`: bounds on arguments.
- `remote`: the same server as one session per connection in the per-user daemon, each with
  its own folders and checks, the folders' drivers shared (daemon/forwarder.py forwards).
"""
