"""One cold index of a folder, as a language server runs it, in a fresh process: its peak RSS.

    .venv/bin/python -m benchmarks.cold_peak FOLDER [--minutes N] [--set embed.batch_size=1]

The child process does what `codeask serve` does on a folder it has never indexed (issue 29's
"peak during a cold index"): glibc's heap set up as in every long-running command, the folder
opened as its writer, the lexical pass with the static tier (`refresh(embed=False)`), then the
BM25 copy's build in a thread beside the MiniLM backlog, then the int8 query path
(`prepare_queries`, as the server does when the backlog ends) and one query. Every vector is
computed: the child indexes a copy of FOLDER (without its `.codeask`; the folder itself and an
index an editor may be writing there are never touched) with a fresh, empty embedding cache
(XDG_CACHE_HOME in a temporary folder; only the model folder is linked, so the int8 query copy
is not derived again).

The parent reads the child's VmRSS and VmHWM from /proc every 0.2 s and prints, per phase, the
RSS when it ended and the peak so far, then chunks computed, the backlog's chunks per second
(wall) and per CPU-second (the whole process, BM25 build included), and the load average.
`--minutes N` stops the child N minutes into the backlog (the peak over that much of it).
`--set key=value` passes an editor setting (repeatable). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.env import in_process_env

SAMPLE_S = 0.2
#: Seconds between two progress lines of the child during the backlog.
PROGRESS_S = 10.0


# ---- the child: one cold index, phases reported as JSON lines on stdout ---------------------
def child(folder: Path, editor: dict[str, object]) -> int:
    from codeask.core.runtime import heap

    heap.return_large_frees()
    heap.trim_periodically()
    from codeask.core.indexer import FolderIndex, Progress

    def say(phase: str, **extra: Any) -> None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        event = {"phase": phase, "t": time.monotonic(), "cpu": usage.ru_utime + usage.ru_stime}
        print(json.dumps({**event, **extra}), flush=True)

    say("start")
    index = FolderIndex.open(folder, editor)
    say("opened")
    lexical = index.refresh(embed=False)
    say("lexical+static", chunks=index.storage.chunk_count(), files=lexical.files_indexed)
    warm = threading.Thread(target=index.storage.warm_up, name="codeask-bm25")
    warm.start()
    say("backlog start")
    last = [time.monotonic()]

    def progress(event: Progress) -> None:
        if event.phase == "embed" and time.monotonic() - last[0] > PROGRESS_S:
            last[0] = time.monotonic()
            say("embedding", embedded=event.chunks_embedded)

    report = index.embed_pending(progress=progress)
    say("backlog end", computed=report.vectors_computed, embedded=report.chunks_embedded)
    warm.join()
    index.embedder.prepare_queries()
    index.embedder.embed_query("where is the configuration loaded from a file")
    say("query path")
    index.close()
    return 0


# ---- the parent: fresh cache, sampling, the table -------------------------------------------
def status_mb(pid: int) -> tuple[float, float]:
    """VmRSS and VmHWM of a process, MB (0, 0 once it is gone)."""
    values = status_values(pid, ("VmRSS", "VmHWM"))
    return values["VmRSS"], values["VmHWM"]


def status_values(pid: int, keys: tuple[str, ...]) -> dict[str, float]:
    """Fields of /proc/PID/status given in kB (VmRSS, RssAnon, ...), in MB; 0 once it is gone."""
    values = dict.fromkeys(keys, 0.0)
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in values:
                values[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return values


def fresh_cache(root: Path) -> Path:
    """An XDG cache with an empty embedding cache and the user's model folder linked."""
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codeask" / "models"
    target = root / "codeask"
    target.mkdir(parents=True)
    if user.is_dir():
        (target / "models").symlink_to(user)
    return root


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(source: Path, minutes: float, settings: list[str]) -> int:
    editor: dict[str, object] = {}
    for item in settings:
        key, _, value = item.partition("=")
        editor[key] = json.loads(value) if value[:1] in '[{0123456789-tf"' else value
    with tempfile.TemporaryDirectory(prefix="codeask-cold-peak-") as scratch:
        # a copy: the folder's own index (maybe an editor's, being written) is never touched
        folder = Path(scratch) / source.name
        shutil.copytree(source, folder, symlinks=True, ignore=shutil.ignore_patterns(".codeask"))
        env = in_process_env()
        cache = fresh_cache(Path(scratch) / "xdg")
        env |= {"XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"}
        command = [sys.executable, "-m", "benchmarks.cold_peak", "--child", str(folder)]
        command += ["--editor", json.dumps(editor)]
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
        events: list[dict[str, Any]] = []
        peaks: list[tuple[float, float]] = []
        reader = threading.Thread(target=_read_events, args=(process, events), daemon=True)
        reader.start()
        loads = [load()]
        print(f"# cold index of {source} (a copy), settings {editor or 'default'}, load {loads[0]}")
        while process.poll() is None:
            _rss, hwm = status_mb(process.pid)
            if hwm:
                peaks.append((hwm, time.monotonic()))
            backlog = [e for e in events if e["phase"] == "backlog start"]
            if minutes and backlog and time.monotonic() - backlog[0]["t"] > minutes * 60:
                _stop(process, events)
                break
            time.sleep(SAMPLE_S)
        reader.join(5)
        loads.append(load())
    return _report(events, peaks, loads, process.returncode)


def _read_events(process: subprocess.Popen[str], events: list[dict[str, Any]]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("{"):
            event = json.loads(line)
            event["rss"], event["hwm"] = status_mb(process.pid)
            events.append(event)


def _stop(process: subprocess.Popen[str], events: list[dict[str, Any]]) -> None:
    usage_at_stop = time.monotonic()
    rss, hwm = status_mb(process.pid)
    cpu = _child_cpu(process.pid)
    events.append({"phase": "stopped", "t": usage_at_stop, "cpu": cpu, "rss": rss, "hwm": hwm})
    process.terminate()
    process.wait(30)


def _child_cpu(pid: int) -> float:
    """utime + stime of a running process, seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _report(
    events: list[dict[str, Any]], peaks: list[tuple[float, float]], loads: list[str], code: int
) -> int:
    print("| phase (end) | s | CPU-s | RSS MB | peak MB |")
    print("|---|---:|---:|---:|---:|")
    start = events[0]["t"] if events else 0.0
    for event in events:
        if event["phase"] == "embedding":
            continue
        print(
            f"| {event['phase']} | {event['t'] - start:.1f} | {event['cpu']:.1f} "
            f"| {event['rss']:.1f} | {event['hwm']:.1f} |"
        )
    by = {e["phase"]: e for e in events}
    begin, end = by.get("backlog start"), by.get("backlog end") or by.get("stopped")
    chunks = by.get("lexical+static", {}).get("chunks", 0)
    top = max(peaks, default=(0.0, start))
    reached = min(t for hwm, t in peaks if hwm == top[0]) if peaks else start
    during = [e["phase"] for e in events if e["t"] >= reached][:1] or ["the end"]
    print(
        f"peak RSS {top[0]:.1f} MB, reached at {reached - start:.1f} s (in the phase ending with "
        f"'{during[0]}'); {chunks} chunks; load {' -> '.join(loads)}"
    )
    if begin and end and "computed" in end:
        wall, cpu = end["t"] - begin["t"], end["cpu"] - begin["cpu"]
        done = end["computed"]
        print(
            f"backlog: {done} computed in {wall:.1f} s, {cpu:.1f} CPU-s: "
            f"{done / wall:.1f} chunks/s, {done / cpu:.2f} chunks per CPU-s"
        )
    elif begin and end:
        wall, cpu = end["t"] - begin["t"], end["cpu"] - begin["cpu"]
        seen = [e for e in events if e["phase"] == "embedding"]
        done = seen[-1]["embedded"] - seen[0]["embedded"] if len(seen) > 1 else 0
        span = seen[-1]["cpu"] - seen[0]["cpu"] if len(seen) > 1 else 0.0
        rate = f"{done / span:.2f} chunks per CPU-s between progress lines" if span else ""
        print(f"stopped {wall:.0f} s into the backlog ({cpu:.1f} CPU-s); {rate}")
    return code if code not in (None, -15) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument(
        "--minutes", type=float, default=0.0, help="stop N minutes into the backlog"
    )
    parser.add_argument("--set", action="append", default=[], help="an editor setting key=value")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--editor", default="{}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    folder = args.folder.resolve()
    if args.child:
        return child(folder, json.loads(args.editor))
    return run(folder, args.minutes, args.set)


if __name__ == "__main__":
    raise SystemExit(main())
