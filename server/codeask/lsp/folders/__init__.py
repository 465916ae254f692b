"""The language server's side of background indexing: `Folders`, every workspace folder of the
editor window, each held by the engine's one index driver (core/driver: `FolderWorker`).

The server is the driver's listener (`Listener`): its bars are `$/progress` sessions
(lsp/progress.py), its warnings `window/showMessage`; `codeask/indexStatus` reads the workers'
state. Tunables live in core/driver/common.py.
"""

from codeask.core.driver import FolderWorker, Listener
from codeask.lsp.folders.collection import Folders

__all__ = ["FolderWorker", "Folders", "Listener"]
