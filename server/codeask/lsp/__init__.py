"""The language server: a thin pygls 2 layer over `codeask.core` (see docs/protocol.md).

server.py: the server's state and plumbing and `run()`; features/: one module per LSP
feature, each registering its own handlers; gate.py + framing.py: what reaches pygls;
messages.py: typed custom params/results; settings.py: editor settings shapes; folders.py:
the background indexing threads; progress.py: `$/progress` sessions.
"""
