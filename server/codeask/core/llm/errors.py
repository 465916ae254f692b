"""The failures of a chat call, each with one line the editor can show as is.

Shared by every provider: a provider raises these, never its own kinds, so the editor, the CLI
and `ask` tell "endpoint down" from "bad answer" the same way whatever the API.
"""

from __future__ import annotations

import os
import socket

#: Longest piece of an error body (or of a server-sent error) quoted in a message.
EXCERPT_CHARS = 200


class LLMError(Exception):
    """Any failure talking to the model; `.message` is one clear line for the editor."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class EndpointUnreachable(LLMError):
    """No connection: refused, DNS failure, or no answer within the connect timeout."""


class EndpointTimeout(LLMError):
    """Connected, but the server stopped sending for longer than the read timeout."""


class AuthFailed(LLMError):
    """HTTP 401/403: the API key is missing or rejected."""


class ModelNotFound(LLMError):
    """The endpoint does not know the configured model."""


class BadResponse(LLMError):
    """The server answered, but not with a usable stream (HTTP error, garbage, error event)."""


class ResponseTooLarge(BadResponse):
    """A line or a whole response went past its cap (`llm.max_line_bytes` and friends)."""


class AnswerTooLong(LLMError):
    """The answer went past `llm.max_answer_chars`; what arrived up to the cap was kept."""


class AnswerCutShort(LLMError):
    """The stream ended properly, but the server says the answer is not whole: it stopped at
    its token limit (finish reason `length`) or a content filter stopped it."""


class ContextExceeded(BadResponse):
    """The server refused the prompt as longer than its context window (`llm.context_tokens`
    is set above what the server holds)."""


class DeadlineExceeded(EndpointTimeout):
    """The whole call took longer than its deadline (`llm.total_timeout` for an answer)."""


class StreamTruncated(BadResponse):
    """The stream ended (or the connection closed) before the answer's end marker."""


def reason(exc: Exception) -> str:
    """The root cause on one line: the OS error's name ('connection refused', ...) when known.

    TLS errors first: they are OSErrors whose errno is OpenSSL's code, not the OS's (a refused
    certificate would read 'operation not permitted').
    """
    import ssl  # ~6 MB: imported with the first failure, not by the prompt's code (issue 29)

    cause: BaseException = exc
    for _ in range(8):  # bounded: exception chains can be long
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"certificate not trusted ({cause.verify_message or cause.reason})"
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed ({cause.reason or cause})"
        if isinstance(cause, socket.gaierror):
            return f"cannot resolve host ({cause.strerror or cause})"
        if isinstance(cause, OSError) and cause.errno:
            return os.strerror(cause.errno).lower()
        inner = cause.__cause__ or cause.__context__
        if inner is None:
            break
        cause = inner
    text = str(cause) or str(exc) or type(exc).__name__
    return " ".join(text.split())[:EXCERPT_CHARS]
