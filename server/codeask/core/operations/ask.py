"""Ask: the question answered by a model over the retrieved code (`codeask ask`,
`workspace/askCode`). Not imported by the package: the language server loads the ask
orchestrator (and its LLM client) on the first askCode only, as before."""

from codeask.core.ask.answer import (
    AskRequest,
    AskResult,
    ask,
    check_question,
    index_note,
    source_path,
)
from codeask.core.ask.prompt import EditorContext

__all__ = [
    "AskRequest",
    "AskResult",
    "EditorContext",
    "ask",
    "check_question",
    "index_note",
    "source_path",
]
