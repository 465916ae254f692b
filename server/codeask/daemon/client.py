"""The client side: what `codeask search` and `codeask status` call before doing anything
themselves (the answer comes back as data: the command renders it).

`ask()` returns the daemon's reply, starting a daemon when none answers, or raises
`Unavailable` (the caller then answers in-process and says why in one line). It imports only
the standard library, msgspec and this package's light modules: no numpy, ONNX or tree-sitter
on the forwarding path.
"""

from __future__ import annotations

import _socket  # socket.py's own base: `socket` imports enum and selectors (~4 ms per command)
import os
import sys
import time

from codeask import __version__
from codeask.daemon import protocol
from codeask.daemon.paths import LOG_NAME, SOCKET_NAME, Unsafe, check_socket, private_folder
from codeask.daemon.protocol import PROTOCOL

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported at run time: the forwarding path stays small
    import argparse
    from collections.abc import Mapping
    from typing import Any

    #: A reply as JSON: status, answer, notes, code, message, info (daemon/messages.py's Reply).
    Answer = dict[str, Any]

#: Seconds a daemon started on demand may take to listen (imports on a busy machine: ~2 s).
START_SECONDS = 20.0
#: Seconds to wait for an answer (the first search of a folder loads its index and models).
REPLY_SECONDS = 600.0
#: The daemon's log is started afresh past this size.
LOG_LIMIT = 1 << 20
#: Daemons started for one request at most (one that lost the start race exits at once).
STARTS = 3


class Unavailable(Exception):
    """No daemon answered this request; the message says why (one line)."""


class NotRunning(Unavailable):
    """No daemon listens (and none was to be started)."""


def enabled(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> bool:
    """`daemon.enabled` (user config < environment; default on), unless `--no-daemon`."""
    if getattr(args, "no_daemon", False):
        return False
    return setting(environ)


def setting(environ: Mapping[str, str] | None = None) -> bool:
    """`daemon.enabled` (user config < environment; default on).

    Read here without `codeask.config` (msgspec and the whole settings tree cost more than a
    forwarded search) when the daemon section is plain: booleans, a positive number of
    seconds, nothing else. Anything else takes load_settings' path, so the answer is always
    load_settings' (tests/daemon/test_daemon_settings.py holds the two together).
    """
    env = os.environ if environ is None else environ
    plain = plain_setting(env)
    if plain is None:
        from codeask.config import load_settings

        return load_settings(None, environ=env)[0].daemon.enabled
    return plain


def plain_setting(environ: Mapping[str, str] | None = None) -> bool | None:
    """`daemon.enabled` when the daemon section is plain (see `setting`), else None: only
    `codeask.config` can say (the forwarded search then leaves the command to the CLI)."""
    section = _plain_section(os.environ if environ is None else environ)
    return None if section is None else bool(section.get("enabled", True))


def _plain_section(env: Mapping[str, str]) -> dict[str, Any] | None:
    """The merged `[daemon]` section when every value in it is plain, else None."""
    section: dict[str, Any] = {}
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    path = os.path.join(os.path.expanduser(base), "codeask", "config.toml")
    if os.path.exists(path):
        data = _user_config(path)
        if data is None:
            return None
        found = data.get("daemon", {})
        if not isinstance(found, dict):
            return None
        section.update(found)
    for name, raw in env.items():
        if not (name.startswith("CODEASK_") and name[8:].lower().startswith("daemon__")):
            continue
        text = raw.strip()
        if text in ("true", "false"):
            section[name[16:].lower()] = text == "true"
        elif text.isdigit():
            section[name[16:].lower()] = int(text)
        else:
            return None
    flag, idle = section.get("enabled", True), section.get("idle_seconds", 1)
    if set(section) - {"enabled", "idle_seconds"} or not isinstance(flag, bool):
        return None
    if isinstance(idle, bool) or not isinstance(idle, int | float) or not 0 < idle < float("inf"):
        return None  # an invalid section falls back to its defaults: config.py decides
    return section


def _user_config(path: str) -> dict[str, Any] | None:
    """The user config as tomllib reads it (None: unreadable or not TOML); a plain one is
    read without importing tomllib (daemon/light_toml.py: `re` alone is ~10 ms)."""
    from codeask.daemon import light_toml

    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError):
        return None
    data = light_toml.loads(text)
    if data is not None:
        return data
    import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):  # nested too deep: config.py says so
        return None


def ask(command: str, args: argparse.Namespace) -> Answer:
    """The daemon's reply to operation `command` with `args` (status ok or user_error),
    starting a daemon when none answers."""
    return checked(call(command_request(command, vars(args)), start=True))


def ask_running(command: str, args: dict[str, Any]) -> Answer:
    """As `ask`, from a daemon already running only (`NotRunning` when none listens): the
    forwarded search (daemon/forwarding.py) leaves starting one to the full CLI."""
    return checked(call(command_request(command, args), start=False))


def command_request(command: str, args: dict[str, Any]) -> dict[str, Any]:
    """The request for an operation: the command's parsed arguments (argparse's namespace as a
    dict: the daemon reads the operation's own), the client's cwd and the environment that
    decides answers."""
    return {
        "protocol": PROTOCOL,
        "version": __version__,
        "command": command,
        "args": args,
        "cwd": os.getcwd(),
        "environment": protocol.environment(),
    }


def checked(reply: Answer) -> Answer:
    """An operation's reply (its answer, or its user error), with its notes and exit code;
    else `Unavailable` (refused, failed, or not the shape of one)."""
    if reply["status"] not in ("ok", "user_error"):
        raise Unavailable(str(reply.get("message") or reply["status"]))
    if reply["status"] == "ok" and reply.get("answer") is None:
        raise Unavailable("the daemon's reply has no answer")
    if not (isinstance(reply.get("notes"), str) and isinstance(reply.get("message"), str)):
        raise Unavailable("the daemon's reply has no notes")
    if not isinstance(reply.get("code"), int):
        raise Unavailable("the daemon's reply has no exit code")
    return reply


def call(request: dict[str, Any], *, start: bool) -> Answer:
    """Send one request and read its reply (starting a daemon first when `start`; else
    `NotRunning` when none listens)."""
    try:
        run_dir = private_folder(create=start)
    except FileNotFoundError as exc:  # not made yet: no daemon ever listened there
        raise NotRunning("no daemon is running") from exc
    except (Unsafe, OSError) as exc:
        raise Unavailable(str(exc)) from exc
    sock = connect(run_dir, start=start)
    try:
        sock.settimeout(REPLY_SECONDS)
        protocol.send(sock, request)
        reply = protocol.receive(sock)
    except TimeoutError as exc:
        raise Unavailable(f"no answer within {REPLY_SECONDS:.0f} s") from exc
    except (protocol.ProtocolError, OSError) as exc:
        raise Unavailable(f"the daemon went away mid-request ({exc})") from exc
    finally:
        sock.close()
    if reply.get("protocol") != PROTOCOL or reply.get("status") not in (
        "ok",
        "user_error",
        "refused",
        "failed",
    ):
        raise Unavailable(f"the daemon speaks another protocol ({reply.get('protocol')!r})")
    return reply


def open_session(request: dict[str, Any]) -> tuple[_socket.socket, Answer]:
    """A long-lived connection (`codeask mcp`): the request sent, the daemon's reply read, and
    the socket left open for the session's own bytes when the reply says ok. Refused or failed
    raise `Unavailable`; a user error comes back with the socket closed."""
    try:
        run_dir = private_folder(create=True)
    except (Unsafe, OSError) as exc:
        raise Unavailable(str(exc)) from exc
    sock = connect(run_dir, start=True)  # `_socket`'s: the relay needs no more (relay.py)
    try:
        sock.settimeout(REPLY_SECONDS)
        protocol.send(sock, request)
        reply = protocol.receive(sock)
        sock.settimeout(None)
    except TimeoutError as exc:
        sock.close()
        raise Unavailable(f"no answer within {REPLY_SECONDS:.0f} s") from exc
    except (protocol.ProtocolError, OSError) as exc:
        sock.close()
        raise Unavailable(f"the daemon went away mid-request ({exc})") from exc
    status = reply.get("status")
    if reply.get("protocol") != PROTOCOL or status not in ("ok", "user_error"):
        sock.close()
        raise Unavailable(str(reply.get("message") or f"the daemon answered {status!r}"))
    if status != "ok":
        sock.close()
    return sock, reply


def connect(run_dir: str | os.PathLike[str], *, start: bool) -> _socket.socket:
    """A connection to the user's daemon (checked: our socket, our uid at the other end)."""
    path = os.path.join(run_dir, SOCKET_NAME)
    log = os.path.join(run_dir, LOG_NAME)
    deadline = time.monotonic() + START_SECONDS
    started: list[Any] = []
    while True:
        try:
            return _connect_once(path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            if not start:
                raise NotRunning("no daemon is running") from exc
            ended = started[-1].poll() if started else None
            if ended:  # 0: it lost the start race to another daemon, which will listen
                raise Unavailable(f"the daemon failed to start (exit {ended}; see {log})") from exc
            if not started or (ended is not None and len(started) < STARTS):
                started.append(_start(run_dir))
            if time.monotonic() > deadline:
                raise Unavailable(
                    f"the daemon did not start within {START_SECONDS:.0f} s (see {log})"
                ) from exc
            time.sleep(0.02)


def _connect_once(path: str) -> _socket.socket:
    try:
        check_socket(path)
    except Unsafe as exc:
        raise Unavailable(f"refused: {exc}") from exc
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
        uid = protocol.peer_uid(sock)
    except OSError:
        sock.close()
        raise
    if uid is not None and uid != os.getuid():
        sock.close()
        raise Unavailable(f"refused: the daemon at {path} runs as uid {uid}, not as you")
    return sock


class Started:
    """A daemon this process started: `poll()` is Popen's (None while it runs, else its exit
    code, negative for a signal)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: its code is lost
                self.returncode = 0
                return 0
            if done:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


#: Daemons started here and not reaped yet (each `_start` reaps those that ended, as
#: subprocess does with the Popen objects it was left).
_started: list[Started] = []


def _start(run_dir: str | os.PathLike[str]) -> Started:
    """`codeask daemon` in the background, its own session, its output in daemon.log: what
    `subprocess.Popen(argv, stdin=DEVNULL, stdout=DEVNULL, stderr=log, cwd="/",
    start_new_session=True)` does, without importing subprocess (it imports threading,
    selectors, contextlib and signal: ~1 MB of the forwarder that starts a daemon)."""
    _started[:] = [child for child in _started if child.poll() is None]
    argv = [sys.executable, "-P", "-m", "codeask.cli", "daemon"]  # -P: nothing from cwd
    log = _open_log(os.path.join(run_dir, LOG_NAME))
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        pid = os.fork()
        if pid == 0:  # the child: no Python beyond these calls, then the daemon's interpreter
            try:
                os.setsid()
                os.chdir("/")
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(log, 2)
                os.closerange(3, _max_fd())  # close_fds, as Popen's default
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
    finally:
        os.close(log)
        os.close(null)
    child = Started(pid)
    _started.append(child)
    return child


def _max_fd() -> int:
    try:
        return max(256, os.sysconf("SC_OPEN_MAX"))
    except (OSError, ValueError):
        return 256


def _open_log(path: str) -> int:
    """daemon.log (0600) as a descriptor, started afresh past LOG_LIMIT."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
    fd = os.open(path, flags, 0o600)
    try:
        if os.fstat(fd).st_size > LOG_LIMIT:
            os.ftruncate(fd, 0)
    except OSError:
        os.close(fd)
        raise
    return fd
