"""Daemon tests: every daemon a test starts lives in that test's own runtime dir and is gone
when the test ends (stopped, else SIGKILLed by its pid), so no daemon outlives a test."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import ENABLED, codeask, processes_run_in, stop_daemon, wait_until
from mcp_agents import Agents


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A small indexed project (first pass: lexical + static vectors)."""
    root = tmp_path / "shop"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "invoice.py").write_text(
        "def render_invoice_pdf(invoice):\n"
        '    """Draw the invoice as a PDF page."""\n'
        '    return b""\n\n\n'
        "def send_invoice_email(invoice, address):\n"
        '    """Mail the rendered invoice to the customer."""\n'
        "    return address\n"
    )
    (root / "billing" / "tax.py").write_text(
        "def vat_rate(country):\n"
        '    """Value added tax rate for a country code."""\n'
        "    return 0.2 if country == 'FR' else 0.19\n"
    )
    (root / "README.md").write_text("# Shop\n\nInvoices are rendered as PDF and mailed.\n")
    indexed = codeask("index", str(root), cwd=root, env=dict(os.environ))
    assert indexed.returncode == 0, indexed.stderr
    return root


@pytest.fixture()
def daemon_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """The environment of a user with `daemon.enabled` on and a runtime dir of this test's."""
    runtime = tmp_path / "xdg-run"
    runtime.mkdir(mode=0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime))
    env[ENABLED] = "true"
    env["CODEASK_DAEMON__IDLE_SECONDS"] = "120"
    yield env
    stop_daemon(env)
    folders = {str(runtime), env["XDG_RUNTIME_DIR"]}
    wait_until(lambda: not processes_run_in(folders), timeout=15)  # a stopped one finishing
    left = processes_run_in(folders)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "a process of this test outlived it (killed now)"


@pytest.fixture()
def agents(daemon_env: dict[str, str], tmp_path: Path) -> Agents:
    """The agents of this test's daemon (mcp_agents.Agents: `agents.two(a, b)` opens two)."""
    return Agents(daemon_env, tmp_path / "agents.log")
