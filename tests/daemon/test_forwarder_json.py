"""The forwarders read and write JSON without the json module (protocol.py's `_json` path):
the bytes they send and the keys they track are json's own, and relay.py's `Signal` (the
`_thread` stand-in for threading.Event) wakes its waiters as an Event does."""

from __future__ import annotations

import _thread
import json
import subprocess
import sys
import time
from typing import Any

from codeask.daemon.forwarder import _line
from codeask.daemon.lsp_forwarder import _parse, frame
from codeask.daemon.relay import Signal, request_key

MESSAGES: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}},
    {"jsonrpc": "2.0", "id": "x\u00e9\u2028\U0001f600", "result": [None, True, False, -7]},
    {"jsonrpc": "2.0", "method": "m", "params": {"nested": [[{"a": []}]], "t": "\ud800"}},
    {"jsonrpc": "2.0", "id": 2, "params": {"ratio": 0.25, "big": 10**30}},  # a float: json's
]


def test_the_replies_and_replays_are_jsons_bytes() -> None:
    for message in MESSAGES:
        compact = json.dumps(message, separators=(",", ":")).encode()
        assert frame(message) == b"Content-Length: %d\r\n\r\n" % len(compact) + compact
        assert _line(message) == json.dumps(message, ensure_ascii=True).encode() + b"\n"


def test_request_keys_are_jsons_sorted_dumps() -> None:
    """1, "1", 1.0 and True stay apart; a dict id's key order does not matter."""
    ids = [1, "1", 1.0, True, None, -0, 10**40, "\u00e9", [1, "a"], {"b": 1, "a": 2}]
    for request_id in ids:
        assert request_key(request_id) == json.dumps(request_id, sort_keys=True)
    assert len({request_key(i) for i in (1, "1", 1.0, True)}) == 4
    assert request_key({"b": 1, "a": 2}) == request_key({"a": 2, "b": 1})


def test_bodies_are_read_as_json_loads_reads_bytes() -> None:
    """Including a lone surrogate's bytes (json.loads reads bytes with surrogatepass), and
    refusing what it refuses."""
    for message in MESSAGES:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
        assert _parse(body) == json.loads(body)
    for bad in (b"[1]", b"{", b'{"a": 1} x', b"\xff{}", b"", b"  "):
        try:
            expected = json.loads(bad)
        except ValueError:
            expected = None
        assert _parse(bad) == (expected if isinstance(expected, dict) else None), bad


def test_a_signal_wakes_its_waiters_and_stays_set() -> None:
    signal = Signal()
    started = time.monotonic()
    assert signal.wait(0.05) is False
    assert time.monotonic() - started >= 0.04
    woken: list[bool] = []
    done = _thread.allocate_lock()
    done.acquire()

    def waiter() -> None:
        woken.append(signal.wait(10.0))
        done.release()

    _thread.start_new_thread(waiter, ())
    time.sleep(0.05)
    signal.set()
    assert done.acquire(timeout=10.0) and woken == [True]
    signal.set()  # twice: no error
    assert signal.wait(0.0) is True and signal.wait(0.0) is True


#: A forwarder's process never imports json: json's C scanner then reports a syntax error by
#: importing nothing (it looks json.decoder up in sys.modules) and returned NULL: a SystemError
#: that killed the forwarder on the first broken body an editor sent (the LSP fuzz through it).
BROKEN_IN_A_FORWARDER = r"""
import sys
from codeask.daemon import protocol
from codeask.daemon.lsp_forwarder import _parse
assert "json.decoder" not in sys.modules
for bad in (b'{"a": "unterminated', b'{"a": tru}', b"[1, 2", b'{"a" 1}', b'"\\x"', b'{"a": 1e}'):
    try:
        protocol.decode(bad, "surrogatepass")
    except ValueError:
        pass
    else:
        raise SystemExit(f"no ValueError for {bad!r}")
    assert _parse(bad) is None, bad
assert protocol.decode(b'{"ok": [1, 2.5, null]}') == {"ok": [1, 2.5, None]}
print("read like json.loads")
"""


def test_a_broken_body_is_a_value_error_where_json_was_never_imported() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BROKEN_IN_A_FORWARDER], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "read like json.loads"
