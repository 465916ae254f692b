"""The packaged MiniLM's chunk session loads only when chunks are embedded (issue 29).

Queries go through the int8 `QueryEncoder` and chunks through the packaged model's own chunk
session, so no process embedding with the packaged model imports fastembed. Run in a fresh
interpreter: `sys.modules` there says exactly what a query path imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from pathlib import Path
from codeask.config import EmbedSettings
from codeask.core.embedding.embed import FastEmbedder
model = FastEmbedder(EmbedSettings(), Path(sys.argv[1]))
model.prepare_queries()
vector = model.embed_query("where are retries configured")
after_query = "fastembed" in sys.modules
rows = model.embed(["def retry(): pass"])
print(json.dumps({
    "dim": model.dim,
    "query_dim": int(vector.shape[0]),
    "fastembed_after_query": after_query,
    "fastembed_after_embed": "fastembed" in sys.modules,
    "row_dim": int(rows.shape[1]),
}))
"""


def test_neither_queries_nor_chunks_of_the_packaged_model_load_fastembed(tmp_path: Path) -> None:
    """Chunks run through the packaged model's own session (`chunk_model`): fastembed and what
    it imports (PIL, loguru, ~30 MB) stay out of the process."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "models")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "dim": 384,
        "query_dim": 384,
        "fastembed_after_query": False,
        "fastembed_after_embed": False,
        "row_dim": 384,
    }
