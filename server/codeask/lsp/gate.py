"""The lifecycle and params rules every message passes before pygls sees it.

pygls 2 answers nothing when a standard request's params do not structure into the lsprotocol
type (the error happens inside its JSON reader, before a request id is known), and it runs
requests that arrive before `initialize`. Rather than override pygls' protocol internals, the
framing reader (framing.py) asks this gate about every well-formed message and answers the
rejected ones itself:

- a request before `initialize` → ServerNotInitialized (-32002); notifications are dropped
  (LSP: "notifications should be dropped, except for the exit notification");
- a second `initialize` → InvalidRequest (-32600);
- a standard request whose params do not match its lsprotocol type → InvalidParams (-32602)
  with cattrs' account of what is wrong.

Custom requests are not checked here: their handlers decode the params with msgspec
(`features/common.custom_request`) and raise InvalidParams with the reason, which pygls sends
as the error of that request through its public handler path.
"""

from __future__ import annotations

from typing import Any

import cattrs
from lsprotocol import types
from pygls.protocol import default_converter

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
SERVER_NOT_INITIALIZED = -32002


class Rejected(Exception):
    """A message answered with an error instead of reaching pygls."""

    def __init__(self, code: int, reason: str, msg_id: Any = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.msg_id = msg_id


def cattrs_reason(method: str, exc: BaseException) -> str:
    """cattrs' validation tree as one line: `textDocument/hover: invalid value at position...`."""
    if isinstance(exc, cattrs.ClassValidationError):
        details = "; ".join(e.replace("@ .", "at ") for e in cattrs.transform_error(exc, path=""))
        return f"{method}: {details}"
    return f"{method}: params do not match the LSP type ({exc})"


class MessageGate:
    """Tracks `initialize` and checks standard request params; called on the reader thread."""

    def __init__(self) -> None:
        self.seen_initialize = False
        self._converter = default_converter()

    def admit(self, message: dict[str, Any]) -> bool:
        """True: hand the message to pygls. False: drop it. Raises `Rejected` to answer it."""
        method = message.get("method")
        if method is None:
            return True  # a response to one of our requests
        is_request = "id" in message
        if method == types.INITIALIZE and is_request:
            if self.seen_initialize:
                raise Rejected(
                    INVALID_REQUEST,
                    "initialize: the server is already initialized",
                    message["id"],
                )
            self._check_params(method, message)
            self.seen_initialize = True
            return True
        if not self.seen_initialize and method != types.EXIT:
            if is_request:
                raise Rejected(
                    SERVER_NOT_INITIALIZED,
                    f"{method}: the server is not initialized (send initialize first)",
                    message["id"],
                )
            return False
        if is_request:
            self._check_params(method, message)
        return True

    def _check_params(self, method: str, message: dict[str, Any]) -> None:
        """Structure a standard request as pygls will; a failure is InvalidParams with why."""
        request_type = types.METHOD_TO_TYPES.get(method, (None,))[0]
        if request_type is None:
            return
        try:
            self._converter.structure(message, request_type)
        except Exception as exc:
            raise Rejected(INVALID_PARAMS, cattrs_reason(method, exc), message["id"]) from None
