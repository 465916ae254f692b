"""An editor's save is on disk (searchable by every reader) before the model tier embeds it
(issue 42): the MiniLM vectors of a file take seconds, and never come while the embedding
server is down, and an edit must not wait for them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from codeask.core.indexer.folder import FolderIndex
from support import codeask, in_process_env
from support.embed_endpoint import free_port


def test_an_edit_is_searchable_by_another_process_while_the_model_server_is_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "billing.py").write_text("def compute_invoice_total(lines):\n    return sum(lines)\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens: the model tier cannot answer
    settings = {
        "CODEASK_EMBED__PROVIDER": "openai",
        "CODEASK_EMBED__ENDPOINT": down,
        "CODEASK_EMBED__MODEL": "code-model",
        "CODEASK_EMBED__REQUEST_TIMEOUT": "2",
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    writer = FolderIndex.open(root, mode="write")  # what the editor's server holds
    try:
        writer.refresh(embed=False)
        (root / "billing.py").write_text(
            "def compute_invoice_total(lines):\n    return sum(lines)\n\n\n"
            "def reconcile_ledger_drift(entries):\n    return [e for e in entries if e]\n"
        )
        with pytest.raises(Exception, match="embedding endpoint"):
            writer.update_paths(["billing.py"])  # the model's step fails: the server is down
        env = in_process_env(**settings)
        done = codeask(
            "search", "--json", "--no-daemon", "--mode", "lexical", "--root", str(root),
            "reconcile_ledger_drift", cwd=root, env=env,
        )  # fmt: skip
    finally:
        writer.abandon()
    assert done.returncode == 0, done.stderr[-2000:]  # 1: no hit, the edit was not saved
    symbols = [hit.get("symbol") for hit in json.loads(done.stdout)["results"]]
    assert "reconcile_ledger_drift" in symbols, done.stdout
