"""A question answered by the model: the last stage.

- `answer`: the orchestrator (retrieve → editor context → git history → prompt → llm).
- `router`: whether a question is about git history.
- `prompt`: context assembly under a token budget.

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "answer",
    "prompt",
]
