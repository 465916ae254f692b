"""How well codeask works here: the health report (`health`: versions, the LLM
endpoint, the embedding tiers, the folders' indexes) and `codeask eval` (`selfcheck`, with
questions from the repository's own history: `selfcheck_questions`).

`__all__` lists the modules other rooms (and the faces) may import (tests/test_architecture.py
checks it); the others are this room's own.
"""

__all__ = [
    "health",
    "selfcheck",
    "selfcheck_questions",
]
