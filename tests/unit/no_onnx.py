"""An `onnx` package whose import fails, first on the path a deriving child inherits (as an
uninstalled one would fail): what the model copies do without it (simulated, named so)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def shadow_onnx(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "site" / "onnx"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'onnx'\")\n")
    monkeypatch.setattr(sys, "path", [str(fake.parent), *sys.path])
