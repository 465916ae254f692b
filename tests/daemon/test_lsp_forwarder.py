"""`codeask serve`'s forwarder (daemon/lsp_forwarder.py) in pieces: what it imports and how it
cuts the editor's byte stream into frames to notice `shutdown` and `exit` (every byte passes,
in order). What it does when the daemon dies: tests/daemon/test_daemon_serve_crash.py."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from codeask.daemon.lsp_forwarder import Frames, frame


def message(method: str, params: Any = None, request_id: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        body["params"] = params
    if request_id is not None:
        body["id"] = request_id
    return body


def test_forwarder_imports_nothing_heavy() -> None:
    """The process an editor starts: no pygls, lsprotocol, numpy, msgspec or engine module."""
    probe = (
        "import sys; import codeask.cli, codeask.cli.serve, codeask.daemon.lsp_forwarder, "
        "codeask.daemon.client; print(' '.join(sorted(sys.modules)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    heavy = {"numpy", "pygls", "lsprotocol", "cattrs", "msgspec", "anyio", "mcp"}
    assert [m for m in loaded if m.split(".")[0] in heavy] == []
    assert [m for m in loaded if m.startswith("codeask.lsp")] == []
    assert [m for m in loaded if m.startswith("codeask.core")] == [
        "codeask.core",
        "codeask.core.source",  # the room's __init__: a docstring
        "codeask.core.source.names",
    ]


def test_every_byte_passes_in_order_whatever_the_cuts() -> None:
    """Frames, garbage between them, another header, a body cut anywhere: the pieces put
    together are the input, and each whole frame comes out parsed once."""
    first = frame(message("initialize", {"capabilities": {}}, 1))
    body = json.dumps({"jsonrpc": "2.0"}).encode()
    second = b"Content-Length: %d\r\nContent-Type: x\r\n\r\n" % len(body) + body
    stream = b"garbage" + first + b"\r\nnoise Content-Len" + second + frame(message("exit"))
    for size in (1, 3, 7, 64, len(stream)):
        frames = Frames()
        out: list[tuple[bytes, Any]] = []
        for at in range(0, len(stream), size):
            out += frames.feed(stream[at : at + size])
        out += frames.feed(b"")
        assert b"".join(data for data, _ in out) == stream
        methods = [m.get("method") for _, m in out if m is not None]
        assert methods == ["initialize", None, "exit"], size
    rest = Frames()
    assert rest.feed(b"Content-Length: 5\r\n\r\nab") == []  # waits for the whole body


def test_an_oversized_frame_passes_unread_until_a_real_header() -> None:
    """A length over the limit: the body passes unread, in order; a real header inside the
    announced span ends it (the session's reader resynchronises there too, framing.py)."""
    header = b"Content-Length: %d\r\n\r\n" % (100_000_000_000)
    after = frame(message("codeask/indexStatus", {}, "x"))
    for size in (1, 100, 5000):
        stream = header + b"x" * 3000 + after
        frames = Frames()
        out: list[tuple[bytes, Any]] = []
        for at in range(0, len(stream), size):
            out += frames.feed(stream[at : at + size])
        assert b"".join(d for d, _ in out) == stream, size
        assert [m["id"] for _, m in out if m is not None] == ["x"], size


def test_a_deeply_nested_body_passes_unread() -> None:
    """json.loads raises RecursionError (not ValueError) on 100,000 nested arrays: the
    forwarder must pass such a frame on (the session answers it), not die reading it."""
    body = b"[" * 100_000 + b"]" * 100_000
    data = b"Content-Length: %d\r\n\r\n" % len(body) + body
    assert Frames().feed(data) == [(data, None)]


def test_the_mcp_forwarder_survives_a_deeply_nested_line() -> None:
    from codeask.daemon import forwarder

    assert forwarder._parse(b"[" * 100_000 + b"]" * 100_000 + b"\n") is None


def test_a_body_shorter_than_announced_ends_at_the_next_header() -> None:
    """As the session's reader does (framing.py): the next header inside the announced span
    ends the lying frame, and the frames after it are read (a `shutdown` is not swallowed)."""
    body = json.dumps(message("codeask/indexStatus", {}, "short")).encode()
    lying = b"Content-Length: %d\r\n\r\n" % (len(body) + 5000) + body
    shutdown = frame(message("shutdown", None, 2))
    for size in (1, 50, 100_000):
        stream = lying + shutdown
        frames = Frames()
        out: list[tuple[bytes, Any]] = []
        for at in range(0, len(stream), size):
            out += frames.feed(stream[at : at + size])
        assert b"".join(d for d, _ in out) == stream, size
        assert [m["method"] for _, m in out if m is not None] == ["shutdown"], size


def test_the_hand_read_header_is_the_regular_expression() -> None:
    """`_length_at` (no `re` in the forwarder) finds exactly what the header's regular
    expression, the one the forwarder used before, matches: the same frames, and a
    lying or odd header passed on as before. Edge cases, then every cut of them, then random
    bytes drawn from the header's own alphabet."""
    import random
    import re

    from codeask.daemon.lsp_forwarder import _length_at

    header = re.compile(rb"Content-Length:[ \t]*(\d{1,32})[ \t]*\r\n")
    cases = [
        b"Content-Length: 12\r\n",
        b"Content-Length:12\r\n",
        b"Content-Length: \t 7 \t\r\n",
        b"Content-Length: " + b"9" * 32 + b"\r\n",
        b"Content-Length: " + b"9" * 33 + b"\r\n",
        b"Content-Length: 1 2\r\n",
        b"Content-Length: -1\r\n",
        b"Content-Length: +1\r\n",
        b"Content-Length: \xd9\xa3\r\n",  # an Arabic-Indic digit: not \d in bytes
        b"Content-Length: 5\n",
        b"Content-Length: 5\r",
        b"Content-Length 5\r\n",
        b"content-length: 5\r\n",
        b"Content-Length: \r\n",
        b"xxContent-Length: 3\r\n",
    ]
    rng = random.Random(29)
    alphabet = [b"Content-Length:", b" ", b"\t", b"\r", b"\n", b"\r\n", b"0", b"7", b"x"]
    for _ in range(3000):
        cases.append(b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8))))
    for case in list(cases[:15]):
        cases += [case[:cut] for cut in range(len(case))]
    for case in cases:
        buf = bytearray(b"ab" + case)
        for at in (0, 2):
            found = header.match(buf, at)
            expected = None if found is None else int(found.group(1))
            assert _length_at(buf, at) == expected, (case, at)
