"""The framing attacks of tests/hostile/test_lsp_fuzz.py, against `codeask serve` as a forwarder
to the daemon (issue 29: the forwarder keeps the protocol): every broken frame gets the same
error reply as in-process, from the session's own framing reader behind the forwarder, and the
server keeps answering. The cases are imported and run here against a forwarded server."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from daemon_helpers import ENABLED, daemon_pid, stop_daemon, wait_until
from test_daemon_serve import FORWARDER_MB, rss_mb

from hostile.test_lsp_fuzz import (
    make_workspace,
    test_bad_body_gets_an_error_reply,
    test_garbage_between_messages,
    test_honest_oversized_message_is_drained_not_buffered,
    test_huge_content_length_is_rejected_and_skipped,
    test_long_garbage_is_not_buffered,
    test_wrong_content_length_resynchronises,
)
from support.lsp_wire import Wire

__all__ = [
    "test_bad_body_gets_an_error_reply",
    "test_garbage_between_messages",
    "test_honest_oversized_message_is_drained_not_buffered",
    "test_huge_content_length_is_rejected_and_skipped",
    "test_long_garbage_is_not_buffered",
    "test_wrong_content_length_resynchronises",
]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Wire]:
    """The hostile cases' server, forwarded: a daemon of this module's own runtime dir."""
    base = tmp_path_factory.mktemp("hostile-forwarded")
    cache, runtime = base / "xdg", base / "run"
    cache.mkdir()
    runtime.mkdir(mode=0o700)
    env = {"XDG_RUNTIME_DIR": str(runtime), ENABLED: "true", "CODEASK_DAEMON__IDLE_SECONDS": "120"}
    server = Wire(cache, env)
    try:
        server.initialize([make_workspace(base / "ws")])
        server.wait_ready()
        assert daemon_pid(env) is not None, "not forwarded: no daemon runs"
        assert rss_mb(server.proc.pid) < FORWARDER_MB
        yield server
        assert server.close() == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
        pid = daemon_pid(env)
        stop_daemon(dict(os.environ, **env))
        if pid and not wait_until(lambda: daemon_pid(env) is None, 15):
            os.kill(pid, signal.SIGKILL)
