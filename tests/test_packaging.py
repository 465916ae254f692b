"""The release artefacts work: `python -m build` makes an sdist and a wheel (the wheel built from
the sdist), the wheel carries the packaged model files, their NOTICE and the licence, and
installed alone into a fresh venv (pipx-style: nothing else there, run from outside the repo)
`codeask index` + `codeask search` find the right code offline with the packaged model.

Dependencies come from pip's cache (or the registry the first time): ~1-2 min warm.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import codeask

ROOT = Path(__file__).resolve().parent.parent
NAME = f"codeask-{codeask.__version__}"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

SOURCE = '''\
def circle_area(radius):
    """Area of a circle with the given radius."""
    return 3.14159 * radius * radius


def invoice_total(lines, tax_rate):
    """Sum of the invoice lines plus tax."""
    subtotal = sum(price * qty for price, qty in lines)
    return subtotal * (1 + tax_rate)
'''


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """stdout of `cmd`; fails the test with its output when it exits non-zero."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{cmd}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build` of the repository: the sdist, and the wheel built from it."""
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], cwd=out)
    return out


def test_the_wheel_carries_the_model_files_notices_and_licence(dist: Path) -> None:
    with zipfile.ZipFile(dist / f"{NAME}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(f"{NAME}.dist-info/METADATA").decode()
    model = "codeask/models/all-minilm-l6-v2/"
    for file in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        assert model + file in names
    assert model + "config.json" in names and model + "NOTICE.md" in names
    static = "codeask/models/potion-base-8M/"
    for file in ("model.safetensors", "tokenizer.json", "config.json", "NOTICE.md"):
        assert static + file in names
    assert "codeask/py.typed" in names and "codeask/cli/__init__.py" in names
    licenses = {n for n in names if "/licenses/" in n}
    assert f"{NAME}.dist-info/licenses/LICENSE" in licenses
    assert any(n.endswith("all-minilm-l6-v2/NOTICE.md") for n in licenses), licenses
    assert any(n.endswith("potion-base-8M/NOTICE.md") for n in licenses), licenses
    assert f"Version: {codeask.__version__}" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    assert "Classifier: Programming Language :: Python :: 3.11" in metadata
    with tarfile.open(dist / f"{NAME}.tar.gz") as tar:
        sdist = tar.getnames()
    for file in ("LICENSE", "README.md", "CHANGELOG.md", "pyproject.toml"):
        assert f"{NAME}/{file}" in sdist, file


def test_the_wheel_alone_in_a_fresh_venv_indexes_and_searches_offline(
    dist: Path, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    run([*pip, str(dist / f"{NAME}-py3-none-any.whl")], cwd=tmp_path, env=env)

    codeask_bin = str(venv / "bin" / "codeask")
    env |= {"HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert run([codeask_bin, "--version"], cwd=tmp_path, env=env).split() == [
        "codeask",
        codeask.__version__,
    ]
    where = run(
        [str(venv / "bin" / "python"), "-c", "import codeask; print(codeask.__file__)"],
        cwd=tmp_path,
        env=env,
    )
    assert where.startswith(str(venv)), where  # the installed copy, not the repository's

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "shapes.py").write_text(SOURCE)
    run([codeask_bin, "index", "--full", str(workspace)], cwd=tmp_path, env=env)
    # Dense only, and no word shared with the code: the packaged model must have run.
    query = "compute the total price of a bill including tax"
    search = [codeask_bin, "search", query, "--root", str(workspace), "--mode", "dense"]
    found = json.loads(run([*search, "--json"], cwd=tmp_path, env=env))
    assert found["results"], found
    best = found["results"][0]
    assert (best["relative_path"], best["symbol"]) == ("shapes.py", "invoice_total"), found
