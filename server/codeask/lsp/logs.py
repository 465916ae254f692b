"""Logging for the server: stderr (the CLI's root handler, or ours) + window/logMessage."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, ClassVar

from lsprotocol import types


class ClientLogHandler(logging.Handler):
    """Forwards `codeask` log records to the editor as window/logMessage."""

    TYPES: ClassVar[dict[int, types.MessageType]] = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, send: Callable[[types.LogMessageParams], Any]) -> None:
        super().__init__()
        self._send = send
        self.setFormatter(logging.Formatter("%(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        """Never raises; `send` drops records until the client can receive notifications."""
        try:
            kind = self.TYPES.get(record.levelno, types.MessageType.Log)
            if record.levelno > logging.ERROR:
                kind = types.MessageType.Error
            self._send(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:
            self.handleError(record)


def setup_logging(handler: logging.Handler) -> None:
    """stderr + the editor; pygls kept quiet."""
    root = logging.getLogger()
    if not root.handlers:
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(stderr)
    logging.getLogger("pygls").setLevel(logging.WARNING)
    logger = logging.getLogger("codeask")
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
