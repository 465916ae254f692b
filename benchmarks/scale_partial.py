"""Step 1's "searchable partially within 10 s of the start" (issue 42): while the first pass
runs, a thread waits for the index's first snapshot (a `CURRENT` file under the index
location) and asks one question with `codeask search --no-daemon`; the figure is the seconds
from the pass's start to that answer and how many hits it had."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

#: How often the thread looks for the first snapshot.
POLL_S = 0.25


class FirstAnswer(threading.Thread):
    """Started with the pass, stopped after it; `figure()` says when part of the tree answered."""

    def __init__(self, index_root: Path, tree: Path, query: str, env: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.index_root, self.tree, self.query, self.env = index_root, tree, query, env
        self.started = time.perf_counter()
        self.seconds: float | None = None
        self.hits = 0
        self._finished = threading.Event()

    def run(self) -> None:
        while not self._finished.is_set():
            snapshot = self.index_root.exists() and any(self.index_root.glob("*/CURRENT"))
            if snapshot and self._ask():
                return
            self._finished.wait(POLL_S)

    def _ask(self) -> bool:
        command = [sys.executable, "-m", "codeask", "search", "--no-daemon", "--json", "-k", "5"]
        done = subprocess.run(
            [*command, "--root", str(self.tree), self.query],
            env=self.env,
            cwd=self.tree,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            return False
        self.hits = len(json.loads(done.stdout).get("results", []))
        self.seconds = time.perf_counter() - self.started
        return self.hits > 0

    def stop(self) -> None:
        self._finished.set()
        self.join(timeout=120)

    def figure(self) -> str:
        if self.seconds is None:
            return "no partial answer before the pass ended"
        return f"first answer {self.seconds:.1f} s after the start ({self.hits} hits)"
