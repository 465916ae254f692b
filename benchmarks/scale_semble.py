"""semble 0.7.0 on one tree and a list of questions, for benchmarks.scale (run by semble's venv).

    SEMBLE_VENV/bin/python benchmarks/scale_semble.py TREE QUESTIONS.json

QUESTIONS.json is a list of [query, relevant paths]. Prints one JSON line: chunks, index
seconds, per-question latency (s) and ranked distinct files (the first 5). Imports no codeask:
it runs in semble's own venv, with the model of ../shared/eval-search/semble/setup.sh.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
MODEL = os.path.join(
    os.environ.get("CODEASK_EVAL_CACHE", os.path.expanduser("~/.cache/codeask-eval")),
    "potion-base-8M",
)


def main() -> int:
    from semble import SembleIndex

    tree, questions = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    started = time.perf_counter()
    index = SembleIndex.from_path(str(tree), model_path=os.environ.get("SEMBLE_MODEL_NAME", MODEL))
    index_s = time.perf_counter() - started
    latencies, ranked = [], []
    for query, _relevant in questions:
        started = time.perf_counter()
        hits = index.search(query, top_k=20)
        latencies.append(time.perf_counter() - started)
        files: list[str] = []
        for hit in hits:
            path = hit.chunk.file_path
            if path not in files:
                files.append(path)
        ranked.append(files[:5])
    result = {"chunks": len(index.chunks), "index_s": index_s, "latencies": latencies}
    print(json.dumps(result | {"ranked": ranked}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
