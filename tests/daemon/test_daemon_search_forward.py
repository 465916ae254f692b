"""`codeask search` forwarded before the CLI is imported (daemon/forwarding.py with
daemon/search_line.py): real processes against a real daemon on a real indexed folder. The
light path (`python -m codeask`, the console script's entry) must print byte for byte what the
full CLI's path (`python -m codeask.cli`, argparse and cli/forward.py) prints, with the same exit
code, and leave everything it does not read exactly to that full CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from daemon_helpers import ENABLED, codeask, daemon_pid

pytestmark = pytest.mark.slow

#: The entry point, then the modules it held, on stderr (after the command's own output,
#: also when argparse exits).
PROBE = (
    "import sys\n"
    "from {entry} import main\n"
    "sys.argv[0] = 'codeask'\n"
    "try:\n"
    "    code = main()\n"
    "finally:\n"
    "    sys.stdout.flush()\n"
    "    sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\n"
    "raise SystemExit(code)\n"
)
LIGHT, FULL = "codeask.__main__", "codeask.cli"
#: What the light path never imports: the CLI, its parser and logging, the engine, the
#: settings tree, numpy, msgspec, json/socket (their `re`, enum and selectors), contextlib.
NOT_LIGHT = (
    "codeask.cli",
    "codeask.core",
    "codeask.config",
    "argparse",
    "logging",
    "pathlib",
    "typing",
    "numpy",
    "msgspec",
    "json",
    "socket",
    "re",
    "tomllib",
    "contextlib",  # with collections, functools and operator: ~4 ms of every search
)
#: Command lines the light path reads, with what they exercise.
LINES = [
    ["search", "invoice pdf"],  # human output
    ["search", "invoice pdf", "--json"],
    ["-v", "search", "tax rate for a country", "-k", "1"],
    ["search", "mail", "--lang", "python", "--json", "-k2"],
    ["search", "invoice", "--path", "billing/*.py", "--mode", "lexical", "--kind", "function"],
    ["search", "invoice", "--root", ".", "--root=billing/..", "--json"],
    ["search", "invoice", "--scope", "all"],  # a note on stderr: not a git repository
    ["search", "invoice", "--history"],  # a user error: no history anywhere
    ["search", "x", "--root", "nowhere"],  # a user error: not a folder
    ["search", "   "],  # a user error: empty query
    ["search", "zzqx wqzzx", "--mode", "lexical"],  # no results: exit 1
]


def run(
    entry: str, argv: list[str], cwd: Path, env: dict[str, str]
) -> tuple[int, str, str, set[str]]:
    """(exit code, stdout, stderr, modules) of `codeask ARGV` through `entry`."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(entry=entry), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = done.stderr.splitlines(keepends=True)
    assert lines and lines[-1].startswith("MODULES "), done.stderr
    return done.returncode, done.stdout, "".join(lines[:-1]), set(lines[-1].split()[1:])


def timeless(stdout: str, stderr: str) -> tuple[str, str]:
    """The output minus the search's own timing (`"seconds"`, `N results in X ms`)."""
    stdout = re.sub(r'"seconds": [0-9.e-]+', '"seconds": 0', stdout)
    return stdout, re.sub(r" results in \d+ ms", " results in _ ms", stderr)


#: The engine modules the renderer (codeask/search_view.py) needs: names' display helpers.
RENDERER = {"codeask.core", "codeask.core.source", "codeask.core.source.names"}


def light_modules(modules: set[str]) -> list[str]:
    return sorted(m for m in modules - RENDERER if m in NOT_LIGHT or m.startswith(NOT_LIGHT[:3]))


def test_the_light_path_prints_what_the_full_cli_prints(
    project: Path, daemon_env: dict[str, str]
) -> None:
    started = codeask("search", "invoice pdf", cwd=project, env=daemon_env)  # starts one
    assert started.returncode == 0 and "daemon unavailable" not in started.stderr
    pid = daemon_pid(daemon_env)
    assert pid
    for argv in LINES:
        code, out, err, modules = run(LIGHT, argv, project, daemon_env)
        full_code, full_out, full_err, full_modules = run(FULL, argv, project, daemon_env)
        assert "codeask.cli" in full_modules
        assert light_modules(modules) == [], argv
        assert (code, *timeless(out, err)) == (full_code, *timeless(full_out, full_err)), argv
        assert "daemon unavailable" not in err
    assert daemon_pid(daemon_env) == pid, "one daemon answered every line"
    info = json.loads(codeask("daemon", "--status", cwd=project, env=daemon_env).stdout)
    assert info["requests"] == 1 + 2 * len(LINES), "every line was answered by the daemon"
    # And the daemon's answers are a fresh process's (the rule the daemon keeps).
    for argv in (LINES[1], LINES[3], LINES[5]):
        _, out, _, _ = run(LIGHT, argv, project, daemon_env)
        alone = codeask(*argv, "--no-daemon", cwd=project, env=daemon_env)
        assert alone.returncode == 0, alone.stderr
        assert timeless(out, "")[0] == timeless(alone.stdout, "")[0]


#: Lines the light path leaves to the full CLI (which still asks the daemon, or not).
LEFT = [
    ["search", "invoice", "--js"],  # an abbreviation argparse accepts
    ["search", "invoice", "-k", "+1"],  # int() reads it, the light reader does not
    ["search", "--", "invoice"],
    ["search", "invoice", "--no-daemon"],
    ["search", "invoice", "--bogus"],  # argparse's usage error, exit 2
]


def test_what_the_light_path_does_not_read_the_full_cli_answers(
    project: Path, daemon_env: dict[str, str]
) -> None:
    assert codeask("search", "invoice", cwd=project, env=daemon_env).returncode == 0
    for argv in LEFT:
        code, out, err, modules = run(LIGHT, argv, project, daemon_env)
        full_code, full_out, full_err, _ = run(FULL, argv, project, daemon_env)
        assert "codeask.cli" in modules, argv
        assert (code, *timeless(out, err)) == (full_code, *timeless(full_out, full_err)), argv


def test_no_daemon_running_the_full_cli_starts_one(
    project: Path, daemon_env: dict[str, str]
) -> None:
    assert daemon_pid(daemon_env) is None
    code, out, err, modules = run(LIGHT, ["search", "invoice pdf", "--json"], project, daemon_env)
    assert code == 0 and "daemon unavailable" not in err, err
    assert "codeask.cli" in modules and daemon_pid(daemon_env), "the full CLI started one"
    code, again, err, modules = run(LIGHT, ["search", "invoice pdf", "--json"], project, daemon_env)
    assert code == 0 and light_modules(modules) == [], err
    assert timeless(again, "") == timeless(out, "")


def test_off_by_setting_nothing_is_forwarded_or_started(
    project: Path, daemon_env: dict[str, str]
) -> None:
    off = dict(daemon_env, **{ENABLED: "false"})
    code, out, err, modules = run(LIGHT, ["search", "invoice pdf"], project, off)
    assert code == 0 and "daemon" not in err and "render_invoice_pdf" in out
    assert "codeask.cli" in modules and daemon_pid(daemon_env) is None


def test_a_setting_only_the_config_reads_goes_to_the_full_cli(
    project: Path, daemon_env: dict[str, str]
) -> None:
    """`idle_seconds = 1.5` in the environment is not a plain value (client.setting): the full
    CLI reads the settings and then asks the daemon itself."""
    assert codeask("search", "invoice", cwd=project, env=daemon_env).returncode == 0
    odd = dict(daemon_env, CODEASK_DAEMON__IDLE_SECONDS="150.5")
    code, _, err, modules = run(LIGHT, ["search", "invoice", "--json"], project, odd)
    assert code == 0 and "daemon unavailable" not in err, err
    assert "codeask.cli" in modules
    info = json.loads(codeask("daemon", "--status", cwd=project, env=daemon_env).stdout)
    assert info["requests"] == 2, "the full CLI asked the running daemon"


def test_a_refusing_daemon_is_noted_once_and_answered_in_process(
    project: Path, daemon_env: dict[str, str]
) -> None:
    """A daemon started under another environment refuses: the light path says so in the very
    line the full CLI says it, once, and the full CLI answers in-process (not asking again)."""
    assert codeask("search", "invoice", cwd=project, env=daemon_env).returncode == 0
    other = dict(daemon_env, GIT_AUTHOR_NAME="someone else")  # may change answers: refused
    argv = ["search", "invoice pdf", "--json"]
    code, out, err, modules = run(LIGHT, argv, project, other)
    full_code, full_out, full_err, _ = run(FULL, argv, project, other)
    assert "codeask.cli" in modules
    assert err.count("daemon unavailable") == 1, err
    assert (code, *timeless(out, err)) == (full_code, *timeless(full_out, full_err))
    info = json.loads(codeask("daemon", "--status", cwd=project, env=daemon_env).stdout)
    assert info["requests"] == 1, "refusals are not answers"


def test_turned_on_in_the_user_config_the_light_path_reads_it_without_tomllib(
    project: Path, daemon_env: dict[str, str], tmp_path: Path
) -> None:
    """`[daemon] enabled = true` in config.toml (the documented switch), no environment
    variable: forwarded, and neither tomllib nor `re` imported to read it."""
    config = tmp_path / "config-home"
    (config / "codeask").mkdir(parents=True)
    (config / "codeask" / "config.toml").write_text(
        "# mine\n[llm]\nmodel = 'qwen2.5-coder'  # local\n\n[daemon]\nenabled = true\n"
    )
    env = dict(daemon_env, XDG_CONFIG_HOME=str(config))
    del env[ENABLED]
    assert codeask("search", "invoice", cwd=project, env=env).returncode == 0  # starts one
    argv = ["search", "invoice pdf", "--json"]
    code, out, err, modules = run(LIGHT, argv, project, env)
    full_code, full_out, full_err, _ = run(FULL, argv, project, env)
    assert code == 0 and light_modules(modules) == [], err
    assert (code, *timeless(out, err)) == (full_code, *timeless(full_out, full_err))
