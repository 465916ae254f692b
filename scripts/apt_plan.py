"""What `apt-get install --no-upgrade PKG...` would do, from apt's own simulation, before anything
is installed: the new packages (with the download and disk sizes) and the installed packages it
would upgrade.

scripts/test-vscode prints this plan before it installs, and stops when the plan upgrades an
installed package unless CODEASK_APT_UPGRADE=1: `--no-upgrade` keeps the packages named as they
are, but a new package may depend on newer versions of installed ones (Chromium pulled newer
systemd, perl-base, libkrb5-3, e2fsprogs... into an install that was only meant to add it).

    python3 scripts/apt_plan.py PKG...

Exit 0: the plan adds packages and upgrades none; 3: it would upgrade installed packages (they
are listed); 1: apt could not plan (an unknown package, no package lists: apt-get update).
Standard library only: it runs before the project's venv exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

#: `Inst name [installed version] (new version release [arch])`; no [..] for a new package.
INST = re.compile(r"^Inst (?P<name>\S+) (?:\[(?P<old>[^\]]+)\] )?\((?P<new>\S+)")
EXIT_UPGRADES = 3


@dataclass
class Plan:
    """The packages apt would add and upgrade; sizes in bytes (0 when apt-cache cannot say)."""

    new: list[tuple[str, str]] = field(default_factory=list)  # (name, version)
    upgrades: list[tuple[str, str, str]] = field(default_factory=list)  # (name, old, new)
    download: int = 0
    disk: int = 0


def apt_command(packages: list[str]) -> list[str]:
    """The install command test-vscode runs: only what is missing, nothing upgraded on purpose."""
    return ["apt-get", "install", "-y", "--no-upgrade", "--no-install-recommends", *packages]


def parse_simulation(text: str) -> Plan:
    """The `Inst` lines of `apt-get -s install ...`: new packages and upgrades."""
    plan = Plan()
    for line in text.splitlines():
        match = INST.match(line)
        if not match:
            continue
        if match["old"]:
            plan.upgrades.append((match["name"], match["old"], match["new"]))
        else:
            plan.new.append((match["name"], match["new"]))
    return plan


def _sizes(specs: list[str]) -> dict[str, tuple[int, int]]:
    """`name=version` -> (download bytes, installed KiB), from `apt-cache show`."""
    if not specs:
        return {}
    out = subprocess.run(
        ["apt-cache", "show", "--no-all-versions", *specs],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    sizes: dict[str, tuple[int, int]] = {}
    for stanza in out.split("\n\n"):
        fields = dict(re.findall(r"^([\w-]+): (.*)$", stanza, flags=re.M))
        if "Package" in fields:
            sizes[fields["Package"]] = (
                int(fields.get("Size", 0)),
                int(fields.get("Installed-Size", 0)),
            )
    return sizes


def add_sizes(plan: Plan) -> None:
    """Download size of every package apt fetches; disk size of the new ones (as apt counts it,
    the upgrades' change in size is left out: small next to the new packages)."""
    new = _sizes([f"{name}={version}" for name, version in plan.new])
    upgraded = _sizes([f"{name}={version}" for name, _, version in plan.upgrades])
    plan.download = sum(size for size, _ in [*new.values(), *upgraded.values()])
    plan.disk = 1024 * sum(kib for _, kib in new.values())


def simulate(packages: list[str]) -> tuple[Plan | None, str]:
    """apt's simulation of the install (no root needed, nothing changes); None on an apt error."""
    proc = subprocess.run(
        ["apt-get", "-s", *apt_command(packages)[1:]],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "LC_ALL": "C"},
    )
    if proc.returncode != 0:
        return None, proc.stdout + proc.stderr
    return parse_simulation(proc.stdout), proc.stdout


def mb(size: int) -> str:
    return f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"


def describe(plan: Plan) -> str:
    """The plan in words, the sizes first (what a user weighs before saying yes)."""
    lines = [
        f"apt would add {len(plan.new)} packages ({mb(plan.download)} to download, "
        f"{mb(plan.disk)} on disk) and upgrade {len(plan.upgrades)} installed ones",
        "new: " + " ".join(name for name, _ in plan.new),
    ]
    if plan.upgrades:
        lines.append(
            "upgrades of installed packages: "
            + ", ".join(f"{name} {old} -> {new}" for name, old, new in plan.upgrades)
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: apt_plan.py PKG...", file=sys.stderr)
        return 2
    plan, output = simulate(argv)
    if plan is None:
        print(f"apt could not plan `{' '.join(apt_command(argv))}`:", file=sys.stderr)
        print(output.strip(), file=sys.stderr)
        return 1
    add_sizes(plan)
    print(describe(plan))
    return EXIT_UPGRADES if plan.upgrades else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
