"""`daemon.enabled` as the client reads it without loading the settings tree (to stay light)
is always what `load_settings` says, for the plain cases it reads itself and the rest."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from codeask.config import load_settings
from codeask.daemon.client import enabled

CONFIGS = (
    None,
    "[daemon]\nenabled = true\n",
    "[daemon]\nenabled = false\n",
    "[daemon]\nenabled = true\nidle_seconds = 5\n",
    '[daemon]\nenabled = "true"\n',
    "[daemon]\nidle_seconds = 5\n",
    "[daemon]\nenabled = true\nidle_seconds = -1\n",  # invalid section: defaults (on)
    "[daemon]\nenabled = true\nsurprise = 1\n",  # unknown field: defaults (on)
    "daemon = 3\n",
    "[llm]\nmodel = 'x'\n",
    "not toml [",
    "# mine\n[llm]\nmodel = 'x'  # c\n\n[ daemon ]\r\nenabled = true\r\nidle_seconds = 600\r\n",
    "[daemon]\nenabled = true\n[daemon]\nenabled = false\n",  # a table twice: not TOML
    "[daemon]\nenabled = true\nenabled = true\n",  # a key twice: not TOML
    '[llm]\nprompt = """\n[daemon]\nenabled = true\n"""\n',  # a string, not a table
)
VALUES = (None, "true", "false", "1", "0", "yes", " true ", "TRUE")
IDLE = (None, "30", "0", "-5", "2.5", "soon")


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("idle", IDLE)
def test_quick_read_agrees_with_load_settings(
    tmp_path: Path, config: str | None, value: str | None, idle: str | None
) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    if config is not None:
        (tmp_path / "codeask").mkdir()
        (tmp_path / "codeask" / "config.toml").write_text(config)
    if value is not None:
        env["CODEASK_DAEMON__ENABLED"] = value
    if idle is not None:
        env["CODEASK_DAEMON__IDLE_SECONDS"] = idle
    expected = load_settings(None, environ=env)[0].daemon.enabled
    assert enabled(argparse.Namespace(no_daemon=False), env) is expected
    assert enabled(argparse.Namespace(no_daemon=True), env) is False


def test_default_is_on(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)}
    assert enabled(argparse.Namespace(), env) is True
    assert enabled(argparse.Namespace(no_daemon=True), env) is False
