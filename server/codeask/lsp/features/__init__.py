"""The server's features, one module each: it registers its own handlers (`register(ls)`).

`lsp/server.py` holds the server's state and plumbing; a feature module holds what one
capability needs: its handlers, their engine calls and the conversions of their results.
"""
