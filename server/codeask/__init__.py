"""codeask: a local code-understanding language server."""

__version__ = "0.1.0"
