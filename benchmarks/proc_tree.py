"""What one benchmark step's process tree costs: wall, CPU and peak RSS summed over every process.

A step is a child process (`codeask index`, `codeask search`) plus whatever works for it: its
chunk workers (descendants) and a per-user daemon it started or talks to, which runs in a session
of its own and is no descendant. Both are found by a marker variable in their environment (every
process the child starts inherits it) and by parentage, sampled from /proc every ~100 ms.

CPU is the child's `os.wait4` rusage (user + system, waited-for children such as chunk workers
included) plus what the marked processes that outlive the step (the daemon) spent during it.
RSS is summed over the tree at each sample (shared pages count once per process, as `ps` shows
them); the largest single process is reported by its own high-water mark (VmHWM, reset at the
step's start for a process that lived before it: a daemon). The tree's
anonymous memory (RssAnon) is sampled beside it: RSS also counts mapped index pages, which are
page cache.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.cold_peak import status_mb, status_values

#: Seconds between two samples of the tree.
SAMPLE_S = 0.1
#: The variable that marks a run's processes (not CODEASK_*: codeask reads those as settings).
MARKER = "SCALE_BENCH_RUN"


@dataclass(frozen=True)
class Cost:
    """One step's child: what it printed and what its process tree cost."""

    wall_s: float
    cpu_s: float
    peak_tree_mb: float
    peak_single_mb: float
    load_before: float
    load_after: float
    returncode: int
    stdout: str
    stderr: str
    #: The command's own process (last sample before it ended; -1: not sampled): the rest of
    #: `cpu_s` is its children's (a first pass's chunk workers).
    main_cpu_s: float = -1.0
    #: The tree's largest sampled sum of RssAnon (-1: not sampled): RSS less mapped file pages.
    peak_anon_mb: float = -1.0


def _stat(pid: str) -> tuple[int, float, int] | None:
    """Parent pid, CPU seconds (utime + stime) and start time (ticks after boot: with the pid,
    a process's identity) of a live process; None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return int(fields[1]), cpu, int(fields[19])


class Tree:
    """The processes of one run: those carrying `MARKER=token`, and descendants of a root."""

    def __init__(self, token: str) -> None:
        self.marker = f"{MARKER}={token}".encode()
        self._marked: dict[tuple[int, int], bool] = {}

    def _is_marked(self, pid: int, started: int) -> bool:
        known = self._marked.get((pid, started))  # a reused pid is another process
        if known is None:
            try:
                known = self.marker in (Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"))
            except OSError:
                known = False
            self._marked[pid, started] = known
        return known

    def members(self, root: int | None = None) -> dict[int, float]:
        """pid -> CPU seconds of every live process of the run (and of `root`'s subtree)."""
        parents: dict[int, int] = {}
        cpu: dict[int, float] = {}
        found: set[int] = set()
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                stat = _stat(entry)
                if stat is not None:
                    pid = int(entry)
                    parents[pid], cpu[pid], started = stat
                    if self._is_marked(pid, started):
                        found.add(pid)
        if root is not None and root in parents:
            found.add(root)
            grew = True
            while grew:
                more = {pid for pid, parent in parents.items() if parent in found} - found
                found |= more
                grew = bool(more)
        return {pid: cpu[pid] for pid in found}

    def run(
        self, command: list[str], env: dict[str, str], cwd: Path, timeout: float | None = None
    ) -> Cost:
        """Run `command` to its end while sampling the tree; raise on a timeout."""
        before = self.members()
        for pid in before:  # a daemon's high-water mark from an earlier step is not this one's
            _reset_high_water(pid)
        load_before = os.getloadavg()[0]
        peaks = [0.0, 0.0, -1.0, 0.0]  # tree sum, largest single, the root's CPU, tree anon
        done = threading.Event()
        started = time.perf_counter()
        child = subprocess.Popen(
            command,
            env=env | {MARKER: self.marker.decode().split("=", 1)[1]},
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        streams: dict[str, bytes] = {}
        readers = [
            threading.Thread(target=_drain, args=(child.stdout, streams, "out"), daemon=True),
            threading.Thread(target=_drain, args=(child.stderr, streams, "err"), daemon=True),
        ]
        sampler = threading.Thread(target=self._sample, args=(child.pid, peaks, done), daemon=True)
        for thread in [*readers, sampler]:
            thread.start()
        timer = None
        if timeout is not None:
            timer = threading.Timer(timeout, child.kill)
            timer.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        if timer is not None:
            timer.cancel()
        done.set()
        sampler.join()
        for thread in readers:
            thread.join(30)
        # what the run's long-lived processes (a daemon) spent during the step
        after = self.members()
        lasting = sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())
        child.returncode = os.waitstatus_to_exitcode(status)
        if timeout is not None and child.returncode == -9 and wall >= timeout:
            raise TimeoutError(f"{command[:4]} ran over {timeout:.0f} s")
        return Cost(
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime + max(lasting, 0.0),
            peak_tree_mb=max(peaks[:2]),  # a spike between two samples: at least the largest HWM
            peak_single_mb=peaks[1],
            main_cpu_s=peaks[2],
            peak_anon_mb=peaks[3],
            load_before=load_before,
            load_after=os.getloadavg()[0],
            returncode=child.returncode,
            stdout=streams.get("out", b"").decode("utf-8", "replace"),
            stderr=streams.get("err", b"").decode("utf-8", "replace"),
        )

    def _sample(self, root: int, peaks: list[float], done: threading.Event) -> None:
        while True:
            total = anon = 0.0
            own = _stat(str(root))
            if own is not None:
                peaks[2] = own[1]
            for pid in self.members(root):
                rss, hwm = status_mb(pid)
                total += rss
                anon += anon_mb(pid)
                peaks[1] = max(peaks[1], hwm)
            peaks[0] = max(peaks[0], total)
            peaks[3] = max(peaks[3], anon)
            if done.wait(SAMPLE_S):
                return

    def rss_mb(self) -> float:
        """The RSS of the run's live processes now (between steps: the resting daemon)."""
        return sum(self.sizes_mb())

    def anon_now_mb(self) -> float:
        """The RssAnon of the run's live processes now: `rss_mb` less mapped file pages."""
        return sum(anon_mb(pid) for pid in self.members())

    def sizes_mb(self) -> list[float]:
        """The RSS of each of the run's live processes now."""
        return [status_mb(pid)[0] for pid in self.members()]


def _reset_high_water(pid: int) -> None:
    """Reset a live process's VmHWM to its RSS now (Linux `clear_refs` 5): the step's peak
    takes "at least the largest HWM", and a long-lived daemon's HWM was set by earlier steps
    (4d read +151 MB above rest, all of it 4c's)."""
    with contextlib.suppress(OSError):  # gone, or not ours: its HWM stays (an overestimate)
        Path(f"/proc/{pid}/clear_refs").write_text("5")


def anon_mb(pid: int) -> float:
    """RssAnon of a process, MB (0 once it is gone)."""
    return status_values(pid, ("RssAnon",))["RssAnon"]


def _drain(stream: object, into: dict[str, bytes], key: str) -> None:
    into[key] = stream.read()  # type: ignore[attr-defined]
