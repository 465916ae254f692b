"""Kernel and pseudo filesystems that a walk must never enter.

`/proc`, `/sys` and friends are not files anyone wants indexed: they are huge (`/proc/*/` for
every process), change under the walker, hold symlinks such as `/proc/<pid>/exe` into the whole
system, and some reads block or have side effects. A workspace folder of `/`, or one that holds
a bind mount of `/proc`, must still index cleanly, so the walker asks `SpecialMounts.reason`
before entering any folder. Mount points come from `/proc/self/mountinfo` (read once per walk:
it is a few KB); without it (not Linux, no /proc), the well-known path prefixes are used.
Ground floor: imports nothing of ours.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

MOUNTINFO = "/proc/self/mountinfo"
#: Filesystem types whose contents are kernel state, devices or automounts, never source files.
SPECIAL_FS_TYPES = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "pstore",
        "bpf",
        "fusectl",
        "mqueue",
        "hugetlbfs",
        "autofs",
        "configfs",
        "binfmt_misc",
        "efivarfs",
        "rpc_pipefs",
        "nsfs",
    }
)
#: Never walked whatever the mount table says (and the whole answer when it cannot be read).
SPECIAL_PREFIXES = ("/proc", "/sys", "/dev", "/run")
_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as `\\ooo`."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(lines: Iterable[str]) -> dict[str, str]:
    """mount point → filesystem type, from mountinfo lines (fields: see proc(5))."""
    mounts: dict[str, str] = {}
    for line in lines:
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        separator = fields.index("-", 6)
        if len(fields) > separator + 1 and len(fields) > 4:
            mounts[_unescape(fields[4])] = fields[separator + 1]
    return mounts


def _read_mountinfo() -> dict[str, str]:
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as handle:
            return parse_mountinfo(handle)
    except OSError:
        return {}


def mount_types() -> dict[str, str]:
    """Every mount point of this process and its filesystem type ({} without /proc)."""
    return _read_mountinfo() if os.sep == "/" else {}


def _below(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _outermost(points: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """Mount points not below another one: `/dev/pts` adds nothing once `/dev` is skipped."""
    kept: list[tuple[str, str]] = []
    for point in sorted(points):
        if not any(_below(point, top) for top, _ in kept):
            kept.append((point, points[point]))
    return tuple(kept)


@dataclass(frozen=True, slots=True)
class SpecialMounts:
    """The special mount points of this system, as (mount point, fs type) pairs."""

    points: tuple[tuple[str, str], ...]

    @classmethod
    def read(cls) -> SpecialMounts:
        """Prefixes always, plus every mount whose type is special (from mountinfo)."""
        mounts = _read_mountinfo() if os.sep == "/" else {}
        points = {p: t for p, t in mounts.items() if t in SPECIAL_FS_TYPES}
        for prefix in SPECIAL_PREFIXES:
            points.setdefault(prefix, mounts.get(prefix, "reserved path"))
        return cls(_outermost(points))

    def reason(self, real: str) -> str | None:
        """Why the folder (a real, absolute path) must not be walked, or None."""
        for point, fs_type in self.points:
            if _below(real, point):
                return f"special filesystem ({fs_type} at {point}): never indexed"
        return None
