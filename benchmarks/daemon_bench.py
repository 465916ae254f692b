"""`codeask search` through the per-user daemon versus in-process (issue 29).

    python -m benchmarks.daemon_bench [--repo PATH] [--runs 20] [--full] [--json]

Copies the repository (default: flask 2.2.3 from the eval cache, else this checkout's
`server/`) into a temporary folder, indexes it there (`--full`: with the MiniLM tier) under a
private cache and runtime dir, then runs the same queries as real `codeask search`
subprocesses (the `codeask` console script next to this Python, else `python -m codeask`):
through the daemon (started by the first of them, then warm), the same through the full CLI
(`python -m codeask.cli`: argparse and cli/forward.py, what every search paid before the light
path of daemon/forwarding.py) and with `--no-daemon`. For each: wall time per command (p50,
p90, p95), CPU seconds (user + system) and peak RSS of the client process (/usr/bin/time), plus
the daemon's own RSS afterwards. The outputs of all ways are compared: every query must print
the same hits. `python -c pass` under the same conditions is the floor any command pays (the
load average is printed too).

The breakdown (`--breakdown`, printed with the rest) times one forwarded search's parts from
this process against the same daemon: the client's checks and connect (runtime dir and socket
ownership, SO_PEERCRED), encoding and sending the request, the daemon's whole turn (until the
reply's first byte), reading and decoding the reply; and, in this process with the daemon's
own code (a `FolderCache`, `cli/search.py`'s `answer`), what that turn is made of: finding the
folder, re-reading its settings and checking its snapshot, the search itself, the answer as
data, and the daemon's check that its code did not change on disk; and the client's rendering
of that answer (codeask/search_view.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TIME = "/usr/bin/time"
FLASK = Path.home() / ".cache" / "codeask-eval" / "src" / "flask-2.2.3"
QUERIES = (
    "url routing rule",
    "session cookie signing",
    "render a template with context",
    "register a blueprint",
    "json response",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = FLASK if FLASK.is_dir() else Path(__file__).resolve().parent.parent / "server"
    parser.add_argument("--repo", type=Path, default=default)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--full", action="store_true", help="index the MiniLM tier too")
    parser.add_argument("--breakdown", action="store_true", help="time a request's parts")
    parser.add_argument(
        "--config",
        action="store_true",
        help="turn the daemon on in config.toml (the documented switch), not the environment",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codeask-daemon-bench-") as tmp:
        report = bench(
            args.repo,
            Path(tmp),
            runs=args.runs,
            full=args.full,
            breakdown=args.breakdown,
            config=args.config,
        )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0 if report["same_output"] else 1


def bench(
    repo: Path, tmp: Path, *, runs: int, full: bool, breakdown: bool, config: bool
) -> dict[str, Any]:
    work = tmp / repo.name
    shutil.copytree(repo, work, ignore=shutil.ignore_patterns(".codeask", ".git"))
    run_dir = tmp / "run"
    run_dir.mkdir(mode=0o700)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "cache"), XDG_RUNTIME_DIR=str(run_dir))
    if config:
        (tmp / "config" / "codeask").mkdir(parents=True)
        (tmp / "config" / "codeask" / "config.toml").write_text("[daemon]\nenabled = true\n")
        env["XDG_CONFIG_HOME"] = str(tmp / "config")
        env.pop("CODEASK_DAEMON__ENABLED", None)
    else:
        env["CODEASK_DAEMON__ENABLED"] = "true"
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: imports from cached bytecode
    started = time.perf_counter()
    index = ["index", str(work), *(["--full"] if full else [])]
    subprocess.run(codeask(*index), env=env, check=True, capture_output=True)
    indexed = time.perf_counter() - started
    full_cli = [sys.executable, "-m", "codeask.cli"]
    parts: dict[str, float] = {}
    try:
        first = measure(["search", QUERIES[0]], work, env)  # starts the daemon
        daemon, through_cli = [], []
        for i in range(runs):  # interleaved: both ways see the same load
            query = QUERIES[i % len(QUERIES)]
            daemon.append(measure(["search", query], work, env))
            through_cli.append(measure([], work, env, command=[*full_cli, "search", query]))
        local = [
            measure(["search", QUERIES[i % len(QUERIES)], "--no-daemon"], work, env)
            for i in range(runs)
        ]
        daemon_rss = daemon_rss_mb(work, env)
        bare = [measure([], work, env, command=[sys.executable, "-c", "pass"]) for _ in range(runs)]
        if breakdown:
            parts = request_parts(work, env, runs=max(runs, 20))
    finally:
        subprocess.run(codeask("daemon", "--stop"), env=env, capture_output=True, timeout=30)
    same = all(
        d["stdout"] == c["stdout"] == n["stdout"]
        for d, c, n in zip(daemon, through_cli, local, strict=True)
    )
    notes = sorted(
        {
            line
            for run in daemon + through_cli
            for line in run["stderr"].splitlines()
            if "daemon" in line
        }
    )
    return {
        "repo": str(repo),
        "tiers": "lexical+static+minilm" if full else "lexical+static",
        "daemon_on_by": "config.toml" if config else "CODEASK_DAEMON__ENABLED",
        "index_seconds": round(indexed, 1),
        "runs": runs,
        "command": " ".join(codeask()),
        "first_call_with_daemon_start": summary([first]),
        "through_daemon": summary(daemon),
        "through_daemon_full_cli": summary(through_cli),
        "in_process": summary(local),
        "python_startup": summary(bare),
        "daemon_rss_mb": daemon_rss,
        "same_output": same,
        "daemon_notes": notes,
        "load_average": os.getloadavg(),
        "request_parts_ms": parts,
    }


def codeask(*args: str) -> list[str]:
    """The `codeask` command as a user runs it: the console script next to this Python."""
    script = Path(sys.executable).with_name("codeask")
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "codeask", *args]


def measure(
    args: list[str], cwd: Path, env: dict[str, str], *, command: list[str] | None = None
) -> dict[str, Any]:
    """One `codeask` process under /usr/bin/time: wall (ours), CPU (user + system: our
    children's rusage, to the microsecond, where time's %U %S count hundredths; it includes
    /usr/bin/time's own, well under a millisecond) and peak RSS (time's %M: the kernel's
    maxrss of a direct child of this process would also count this process's pages, kept
    across fork and exec)."""
    import resource

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(
            [TIME, "-f", "codeask-time %U %S %M", *(command or codeask(*args))],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=err,
            check=False,
        )
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        err.seek(0)
        out_text, stderr = out.read().decode(), err.read().decode()
    lines = stderr.splitlines()
    peak_kb = lines[-1].split()[3]
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {
        "wall": wall,
        "cpu": cpu,
        "rss_mb": int(peak_kb) / 1024,
        "stdout": out_text,
        "stderr": "\n".join(lines[:-1]),
    }


def request_parts(work: Path, env: dict[str, str], *, runs: int) -> dict[str, float]:
    """Median milliseconds of each part of one forwarded search (see the module's docstring):
    the client's against the running daemon, the daemon's turn in this process."""
    import _socket

    from codeask.daemon import client, protocol
    from codeask.daemon.paths import SOCKET_NAME, check_socket, private_folder
    from codeask.daemon.search_line import read

    times: dict[str, list[float]] = {}

    def clock(part: str, started: float) -> float:
        now = time.perf_counter()
        times.setdefault(part, []).append((now - started) * 1000)
        return now

    here = os.getcwd()
    os.chdir(work)
    try:
        for i in range(runs):
            args = read(["search", QUERIES[i % len(QUERIES)]])
            request = dict(client.command_request("search", args or {}))
            request["environment"] = protocol.environment(env)
            t = time.perf_counter()
            folder = private_folder(create=False, environ=env)
            path = os.path.join(folder, SOCKET_NAME)
            check_socket(path)
            t = clock("client: runtime dir and socket are ours", t)
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            sock.connect(path)
            assert protocol.peer_uid(sock) == os.getuid()
            t = clock("client: connect, SO_PEERCRED", t)
            data = protocol.encode(request)
            sock.sendall(len(data).to_bytes(4, "big") + data)
            t = clock("client: encode and send the request", t)
            head = sock.recv(4, _socket.MSG_WAITALL)
            t = clock("daemon: its whole turn (until the reply's first byte)", t)
            size, body = int.from_bytes(head, "big"), b""
            while len(body) < size:
                body += sock.recv(size - len(body))
            reply = protocol.decode(body)
            sock.close()
            assert reply["status"] == "ok", reply
            clock("client: read and decode the reply", t)
        times.update(_daemon_turn(work, env, runs=runs))
    finally:
        os.chdir(here)
    return {part: round(statistics.median(ms), 2) for part, ms in times.items()}


def _daemon_turn(work: Path, env: dict[str, str], *, runs: int) -> dict[str, list[float]]:
    """The daemon's turn, part by part, run here with the daemon's code (warm)."""
    import contextlib
    import io

    import msgspec

    from codeask import search_view
    from codeask.cli import common, search
    from codeask.cli.parser import build_parser
    from codeask.core import operations
    from codeask.core.indexer import FolderIndex, SharedIndexes
    from codeask.daemon import client, protocol
    from codeask.daemon.folders import FolderCache
    from codeask.daemon.messages import Request, SearchCall
    from codeask.daemon.server import CodeWatch

    saved = dict(os.environ)
    os.environ.update(env)
    times: dict[str, list[float]] = {}
    try:
        cache, watch = FolderCache(SharedIndexes()), CodeWatch()
        held: list[FolderIndex] = []  # what one `answer` opened, released after it

        def open_held(path: Path) -> FolderIndex:
            """The daemon's `open_folder`: a folder from the cache, noted to be released."""
            opened = cache.open(path)
            held.append(opened)
            return opened

        for i in range(runs + 3):  # the first three warm up (index load, imports)
            query = QUERIES[i % len(QUERIES)]
            args = build_parser().parse_args(["search", query])
            wire = protocol.encode(client.command_request("search", vars(args)))
            part: dict[str, float] = {}
            t = time.perf_counter()
            request = msgspec.convert(protocol.decode(wire), Request)
            call = msgspec.convert(request.args, SearchCall)
            part["daemon: decode and check the request"] = time.perf_counter() - t
            t = time.perf_counter()
            watch.changed()
            part["daemon: its code unchanged on disk (CodeWatch)"] = time.perf_counter() - t
            t = time.perf_counter()
            (root,) = common.roots(call.root, Path(request.cwd))
            part["daemon: the folder (cli/common.roots)"] = time.perf_counter() - t
            t = time.perf_counter()
            folder = cache.open(root)
            part["daemon: settings re-read, snapshot current (FolderCache)"] = (
                time.perf_counter() - t
            )
            t = time.perf_counter()
            found = operations.answer_search(
                [folder],
                query,
                k=call.k,
                filters=operations.Filters.from_options(call),
                mode=call.mode,
            )
            part["daemon: the search as data (answer_search)"] = time.perf_counter() - t
            cache.release(folder)
            t = time.perf_counter()
            search.answer(
                call,
                cwd=Path(request.cwd),
                open_folder=open_held,
                note=lambda _: None,
            )
            for opened in held:
                cache.release(opened)
            held.clear()
            part["daemon: all of cli/search.py's answer"] = time.perf_counter() - t
            reply = {"protocol": 1, "status": "ok", "answer": msgspec.to_builtins(found)}
            t = time.perf_counter()
            data = protocol.encode(reply)
            part["daemon: encode the reply"] = time.perf_counter() - t
            t = time.perf_counter()
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                search_view.render(protocol.decode(data)["answer"], False)
            part["client: decode and render the answer"] = time.perf_counter() - t
            if i >= 3:
                for name, seconds in part.items():
                    times.setdefault(name, []).append(seconds * 1000)
        cache.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return times


def daemon_rss_mb(cwd: Path, env: dict[str, str]) -> float | None:
    status = subprocess.run(codeask("daemon", "--status"), cwd=cwd, env=env, capture_output=True)
    if status.returncode:
        return None
    pid = json.loads(status.stdout)["pid"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def summary(runs: list[dict[str, Any]]) -> dict[str, float]:
    walls = sorted(r["wall"] for r in runs)
    return {
        "wall_p50_ms": round(statistics.median(walls) * 1000, 1),
        "wall_p90_ms": round(walls[min(len(walls) - 1, int(len(walls) * 0.9))] * 1000, 1),
        "wall_p95_ms": round(walls[min(len(walls) - 1, int(len(walls) * 0.95))] * 1000, 1),
        "cpu_p50_s": round(statistics.median(r["cpu"] for r in runs), 4),
        "rss_p50_mb": round(statistics.median(r["rss_mb"] for r in runs), 1),
        "rss_max_mb": round(max(r["rss_mb"] for r in runs), 1),
    }


def print_report(report: dict[str, Any]) -> None:
    print(f"{report['repo']} ({report['tiers']}), {report['runs']} runs each")
    print(f"command: {report['command']} search QUERY (daemon on by {report['daemon_on_by']})")
    print(f"{'':32} {'p50 wall':>9} {'p95 wall':>9} {'CPU-s':>7} {'client RSS':>11}")
    for key in (
        "first_call_with_daemon_start",
        "through_daemon",
        "through_daemon_full_cli",
        "in_process",
        "python_startup",
    ):
        s = report[key]
        print(
            f"{key:32} {s['wall_p50_ms']:>7.0f}ms {s['wall_p95_ms']:>7.0f}ms "
            f"{s['cpu_p50_s']:>7.4f} {s['rss_p50_mb']:>8.1f} MB"
        )
    if report["request_parts_ms"]:
        print("one forwarded search, part by part (median ms):")
        for part, ms in report["request_parts_ms"].items():
            print(f"  {part:44} {ms:7.2f}")
    print(f"daemon RSS after the runs: {report['daemon_rss_mb']} MB")
    print(f"same hits both ways: {report['same_output']}; load average {report['load_average']}")
    for note in report["daemon_notes"]:
        print(f"  note: {note}")


if __name__ == "__main__":
    raise SystemExit(main())
