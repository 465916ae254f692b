"""Round 3 item 18: scripts/test-vscode installs only the missing Debian packages, with
--no-upgrade, after printing apt's plan (the packages and their size), and stops rather than
upgrade an installed package. These tests run the real script in `--plan` mode and apt's real
simulation: nothing is installed (the dpkg database is compared before and after)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "test-vscode"
APT_PLAN = REPO / "scripts" / "apt_plan.py"
#: The packages the script asks for when it runs the e2e (kept in step with scripts/test-vscode).
E2E_PACKAGES = re.search(r"PKGS\+=\(chromium [^)]*\)", SCRIPT.read_text())

needs_apt = pytest.mark.skipif(
    not (shutil.which("apt-get") and shutil.which("dpkg-query")), reason="not a Debian system"
)


def installed() -> str:
    """Every package dpkg knows with its status and version: changes if anything is installed."""
    return subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${Version} ${Status}\n"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def is_installed(package: str) -> bool:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status}", package], capture_output=True, text=True
    ).stdout
    return "install ok installed" in out


def plan_run(**env: str) -> subprocess.CompletedProcess[str]:
    """`scripts/test-vscode --plan`: it exits after the plan (a script without --plan would go on
    and install as root, so this refuses to run one)."""
    assert '[ "${1:-}" != --plan ]' in SCRIPT.read_text(), "scripts/test-vscode has no --plan"
    return subprocess.run(
        ["bash", str(SCRIPT), "--plan"],
        capture_output=True,
        text=True,
        timeout=240,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home()), **env},
    )


def apt_summary(packages: list[str]) -> tuple[int, int]:
    """(upgraded, newly installed) from apt's own summary line of the same simulation."""
    out = subprocess.run(
        ["apt-get", "-s", "install", "--no-upgrade", "--no-install-recommends", *packages],
        capture_output=True,
        text=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
    ).stdout
    match = re.search(r"^(\d+) upgraded, (\d+) newly installed", out, flags=re.M)
    assert match, out
    return int(match[1]), int(match[2])


@needs_apt
@pytest.mark.slow
def test_plan_names_only_missing_packages_and_installs_nothing() -> None:
    before = installed()
    run = plan_run()
    assert run.returncode == 0, run.stdout + run.stderr
    assert installed() == before, "--plan installed or changed a Debian package"
    out = run.stdout + run.stderr
    if "nothing to install" in out:
        return
    missing = re.search(r"Debian packages missing: (.*?);", out)
    assert missing, out
    names = missing[1].split()
    assert names and not any(is_installed(name) for name in names), names
    assert f"command: apt-get install -y --no-upgrade --no-install-recommends {missing[1]}" in out
    sizes = re.search(r"apt would add (\d+) packages \((\d+) [kM]B to download, (\d+) [kM]B", out)
    assert sizes, out
    upgraded, new = apt_summary(names)
    assert int(sizes[1]) == new, out
    if upgraded:  # named before apt-get runs; CODEASK_APT_UPGRADE=0 stops there instead
        assert f"upgrade {upgraded} installed ones" in out, out
        assert "the ones apt needs for" in out and "stopping" not in out, out
        refused = plan_run(CODEASK_APT_UPGRADE="0")
        assert "stopping before apt-get (CODEASK_APT_UPGRADE=0)" in refused.stderr, refused.stderr
    else:
        assert "stopping" not in out, out


@needs_apt
def test_plan_of_installed_packages_is_empty() -> None:
    """dpkg and bash are on every Debian system: the plan adds and upgrades nothing."""
    run = subprocess.run(
        [sys.executable, str(APT_PLAN), "dpkg", "bash"], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert "apt would add 0 packages" in run.stdout and "upgrade 0 installed" in run.stdout


@needs_apt
def test_an_unknown_package_is_a_clear_error() -> None:
    run = subprocess.run(
        [sys.executable, str(APT_PLAN), "no-such-package-codeask"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1
    assert "apt could not plan" in run.stderr and "no-such-package-codeask" in run.stderr


def test_the_e2e_packages_are_installed_without_upgrades_or_recommends() -> None:
    """The script's install line: the missing packages only, never `apt-get install -y X` bare."""
    text = SCRIPT.read_text()
    assert E2E_PACKAGES, "the e2e package list moved: update this test"
    installs = re.findall(r"apt-get install -y[^\n\\]*(?:\\\n[^\n]*)?", text)
    assert installs, text
    for line in installs:
        assert "--no-upgrade" in line and "--no-install-recommends" in line, line
    assert "apt-get upgrade" not in text and "dist-upgrade" not in text


def test_simulation_lines_are_read_as_new_or_upgrade() -> None:
    """apt-get -s prints `Inst name [installed] (new ...)` for an upgrade, no [..] for a new one."""
    spec = importlib.util.spec_from_file_location("apt_plan", APT_PLAN)
    assert spec is not None and spec.loader is not None
    apt_plan = importlib.util.module_from_spec(spec)
    sys.modules["apt_plan"] = apt_plan  # its dataclasses look their module up while defined
    spec.loader.exec_module(apt_plan)
    plan = apt_plan.parse_simulation(
        "Inst perl-base [5.36.0-7+deb12u2] (5.36.0-7+deb12u3 Debian:12.15/oldstable [amd64]) []\n"
        "Inst chromium (150.0.7871.100-1~deb12u1 Debian-Security:12/oldstable-security [amd64])\n"
        "Conf chromium (150.0.7871.100-1~deb12u1 Debian-Security:12/oldstable-security [amd64])\n"
    )
    assert plan.new == [("chromium", "150.0.7871.100-1~deb12u1")]
    assert plan.upgrades == [("perl-base", "5.36.0-7+deb12u2", "5.36.0-7+deb12u3")]
