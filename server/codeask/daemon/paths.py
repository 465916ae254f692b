"""Where the daemon lives and who may talk to it.

`$XDG_RUNTIME_DIR/codeask/`; without XDG_RUNTIME_DIR, the uid's runtime directory that
XDG_RUNTIME_DIR names in a login session (`/run/user/UID`, when it is the user's own and
0700); else `$XDG_CACHE_HOME/codeask/run/` (~/.cache/...). A client whose environment drops
XDG_RUNTIME_DIR (the MCP SDK starts servers with HOME, PATH, SHELL, TERM, USER and LOGNAME
only) so finds the daemon its user's editor and CLI use: one user, one daemon.

The directory is one only the user can enter (0700, owned by the user, not a symlink),
holding `daemon.sock` (0600), `daemon.lock` (the flock that makes one daemon per directory)
and `daemon.log`. Two users have two directories, so two daemons; a directory or a socket
that belongs to someone else is refused, never used or repaired.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:  # pathlib is not imported at run time: ~1 MB of every forwarder
    from collections.abc import Mapping
    from pathlib import Path

SOCKET_NAME = "daemon.sock"
LOCK_NAME = "daemon.lock"
LOG_NAME = "daemon.log"
#: Where login sessions' runtime directories are (pam_systemd, elogind: `/run/user/UID`).
USER_RUNTIME_BASE = "/run/user"


class Unsafe(Exception):
    """The runtime directory or the socket is not the user's own: never connect or bind there."""


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """`$XDG_RUNTIME_DIR/codeask`, else `/run/user/UID/codeask` (when the uid's own), else the
    user cache dir's `codeask/run` (not created)."""
    from pathlib import Path

    return Path(runtime_folder(environ))


def runtime_folder(environ: Mapping[str, str] | None = None) -> str:
    """`runtime_dir` as the string pathlib would make of it (without importing pathlib)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg):
        return _pathlike(os.path.join(xdg, "codeask"))
    session = _session_runtime()
    if session:
        return _pathlike(os.path.join(session, "codeask"))
    cache = env.get("XDG_CACHE_HOME", "")
    base = cache if cache and os.path.isabs(cache) else os.path.join(_home(), ".cache")
    return _pathlike(os.path.join(base, "codeask", "run"))


def private_dir(*, create: bool, environ: Mapping[str, str] | None = None) -> Path:
    """The runtime directory, checked (and made, with `create`): a directory, ours, 0700.

    A directory of ours with looser bits is tightened; one of another user (or a symlink) is
    `Unsafe`: whoever owns it could put their own socket there.
    """
    from pathlib import Path

    return Path(private_folder(create=create, environ=environ))


def private_folder(*, create: bool, environ: Mapping[str, str] | None = None) -> str:
    """`private_dir` as a string (the forwarders' path: no pathlib import)."""
    path = runtime_folder(environ)
    if create:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:  # noqa: SIM105 - contextlib costs a search's forwarder ~4 ms of imports
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise Unsafe(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise Unsafe(f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def check_socket(path: str | os.PathLike[str]) -> None:
    """Raise `Unsafe` unless `path` is a socket owned by this user (FileNotFoundError: none)."""
    info = os.lstat(path)
    if not stat.S_ISSOCK(info.st_mode):
        raise Unsafe(f"{os.fspath(path)} is not a socket")
    if info.st_uid != os.getuid():
        raise Unsafe(
            f"{os.fspath(path)} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})"
        )


def _session_runtime() -> str:
    """`USER_RUNTIME_BASE/UID` when it is what a login session's XDG_RUNTIME_DIR is: a real
    directory (not a symlink) of this uid that no one else may enter; else ''."""
    path = os.path.join(USER_RUNTIME_BASE, str(os.getuid()))
    try:
        info = os.lstat(path)
    except OSError:
        return ""
    mine = info.st_uid == os.getuid() and not info.st_mode & 0o077
    return path if stat.S_ISDIR(info.st_mode) and mine else ""


def _home() -> str:
    """`Path.home()`'s string: os.path.expanduser("~")."""
    return os.path.expanduser("~")


def _pathlike(path: str) -> str:
    """The string `pathlib.PurePosixPath(path)` makes: repeated slashes and "." parts dropped
    (two leading slashes kept, as POSIX allows), no trailing slash; ".." kept."""
    stripped = path.lstrip("/")
    root = "//" if len(path) - len(stripped) == 2 else "/" if stripped != path else ""
    parts = [part for part in stripped.split("/") if part and part != "."]
    return root + "/".join(parts) if root or parts else "."
