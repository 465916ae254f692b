"""The language server: a thin pygls 2 layer over `codeask.core` (see docs/protocol.md).

server.py: the pygls server, its features and `run()`; handlers.py: adapters from LSP params
to core calls; messages.py: typed custom params/results; settings.py: editor settings shapes;
folders.py: the background indexing threads; progress.py: `$/progress` sessions.
"""
