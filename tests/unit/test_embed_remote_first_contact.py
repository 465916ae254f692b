"""An embedding server that fails its first contact costs only the model tier, never the index.

The real CLI (`codeask index`, `status`, `search` as processes) against a real loopback
OpenAI-compatible /v1/embeddings (tests/support/embed_endpoint.py). The first `codeask index` meets
the server down, dripping, streaming without end, sending an oversized answer or vectors wider
than the cap (50,000 floats, `MAX_DIM` is 8,192): the index is
built (lexical + static) and answers. Then the server answers: `status` and `search` keep
working on the same index (it is not "not indexed yet" or "damaged"), and the next
`codeask index --full` fills the model tier, so dense search answers too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_embed_remote_trust import Repo as Workspace  # root + environment
from test_embed_remote_trust import codeask  # the real CLI in a child process

from support import in_process_env
from support.embed_endpoint import Endpoint
from support.gitrepo import ALICE, EPOCH, commit, make_repo

pytestmark = pytest.mark.slow

FILES = {
    "billing.py": "def compute_invoice_total(lines):\n"
    '    """Sum the invoice lines, with tax."""\n'
    "    return sum(line.amount for line in lines) * 1.2\n",
    "net.py": "class HttpClient:\n    def fetch_page(self, url):\n        return url\n",
}


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    served = Endpoint()
    yield served
    served.close()


@pytest.fixture
def workspace(tmp_path: Path, endpoint: Endpoint) -> Workspace:
    root = tmp_path / "repo"
    commit(make_repo(root), FILES, "billing and net", ALICE, EPOCH)
    env = in_process_env(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        HF_HUB_OFFLINE="1",
        CODEASK_EMBED__PROVIDER="openai",
        CODEASK_EMBED__ENDPOINT=endpoint.url,
        CODEASK_EMBED__MODEL="code-model",
        CODEASK_EMBED__REQUEST_TIMEOUT="3",
    )
    return Workspace(root, env)


def search(ws: Workspace, query: str, mode: str = "hybrid") -> str:
    done = codeask(ws, "search", query, "--mode", mode, "--root", str(ws.root))
    assert done.returncode == 0, done.stderr
    assert "damaged" not in done.stderr
    # The tiers line names the configured model, never a MiniLM this index does not have.
    assert "MiniLM" not in done.stderr, done.stderr
    return done.stdout


def status(ws: Workspace) -> str:
    done = codeask(ws, "status", "--root", str(ws.root))
    assert done.returncode == 0, done.stderr
    assert "not indexed yet" not in done.stdout, done.stdout
    return done.stdout


@pytest.mark.parametrize("first", ["down", "drip", "endless", "oversized", "wide"])
def test_a_failed_first_contact_costs_only_the_model_tier_until_the_server_answers(
    first: str, endpoint: Endpoint, workspace: Workspace
) -> None:
    if first == "wide":  # well-formed, but 50,000 floats a row: past the cap
        endpoint.dim = 50_000
    elif first != "down":
        endpoint.mode = first
    if first != "down":
        endpoint.start()
    indexed = codeask(workspace, "index", str(workspace.root))
    assert indexed.returncode == 0, indexed.stderr
    assert "model tier waits for its server" in indexed.stderr  # said, with the reason
    before = status(workspace)
    assert "files 2, chunks" in before and re.search(r"static (\d+)/\1 complete, minilm 0/", before)
    assert "billing.py" in search(workspace, "compute invoice total")

    endpoint.mode, endpoint.dim = "vectors", 8
    if first == "down":
        endpoint.start()
    assert "minilm 0/" in status(workspace)  # the same index, its model tier still empty
    assert "billing.py" in search(workspace, "compute invoice total")
    full = codeask(workspace, "index", "--full", str(workspace.root))
    assert full.returncode == 0, full.stderr
    assert re.search(r"minilm (\d+)/\1 complete", status(workspace))
    assert "billing.py" in search(workspace, "invoice", mode="dense")


def test_the_summary_names_the_server_and_too_wide_vectors_never_reach_the_index(
    endpoint: Endpoint, workspace: Workspace
) -> None:
    """The first pass's summary names the configured provider, model and endpoint, with no
    MiniLM time estimate; `--full` against 50,000-float vectors fails naming the cap, and the
    index stays the size of its lexical and static tiers (it grew to 121 MB before)."""
    endpoint.dim = 50_000
    endpoint.start()
    indexed = codeask(workspace, "index", str(workspace.root))
    assert indexed.returncode == 0, indexed.stderr
    named = f"The model tier (openai 'code-model' at {endpoint.url}) has 0/"
    assert named in indexed.stderr
    assert "MiniLM" not in indexed.stderr and "on 2 cores" not in indexed.stderr
    full = codeask(workspace, "index", "--full", str(workspace.root))
    assert full.returncode == 1
    assert "50000-dimensional vectors of 'code-model'; codeask takes at most 8,192" in full.stderr
    index_dir = workspace.root / ".codeask"
    size = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
    assert size < 5 << 20
    assert "minilm 0/" in status(workspace)
    assert "billing.py" in search(workspace, "compute invoice total")
