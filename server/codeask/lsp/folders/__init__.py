"""The language server's side of background indexing: `Folders`, every workspace folder of the
editor window, each subscribed to the engine's one index driver of it (core/driver:
`FolderWorker`, through the process's one registry `SharedDrivers`: in the daemon, shared with
every other session on the folder).

The server is the driver's listener (`Listener`): its bars are `$/progress` sessions
(lsp/progress.py), its warnings `window/showMessage`; `codeask/indexStatus` reads the workers'
state. Tunables live in core/driver/common.py.
"""

from codeask.core.driver import FolderWorker, Listener
from codeask.lsp.folders.collection import Folders

__all__ = ["FolderWorker", "Folders", "Listener"]
