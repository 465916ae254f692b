"""`codeask ask --prompt-only`'s output, rendered from its answer as plain data (`prompt_data`
in cli/ask.py): the one renderer, whether the prompt was assembled in this process or the
daemon sent it. Imports nothing of the engine (`codeask ask`'s entry stays light)."""

from __future__ import annotations

import sys
from typing import Any

from codeask.cli.common import EXIT_INCOMPLETE, EXIT_OK, EXIT_USER, print_json


def show_prompt(data: dict[str, Any], as_json: bool) -> int:
    """The chat messages as the model would get them and the sources (`--json`: one object
    with the messages); the exit code."""
    payload = data["payload"]
    if as_json:
        print_json(payload)
    else:
        out = sys.stdout
        for message in payload["messages"]:
            out.write(f"----- {message['role']} -----\n{message['content']}\n")
        out.write(
            f"----- end (~{payload['prompt_tokens']} tokens, model {payload['model']}) -----\n"
        )
        print_sources(data["sources"])
    if payload["incomplete"]:
        sys.stderr.write(f"codeask: incomplete answer: {payload['error']}\n")
        return EXIT_INCOMPLETE
    if payload["error"]:
        sys.stderr.write(f"codeask: {payload['error']}\n")
        return EXIT_USER
    return EXIT_OK


def print_sources(lines: list[str]) -> None:
    """`Sources:` then one `path:line symbol` line per source."""
    if not lines:
        sys.stdout.write("\nSources: none (nothing relevant was found in the index)\n")
        return
    sys.stdout.write("\nSources:\n")
    for line in lines:
        sys.stdout.write(f"  {line}\n")
    sys.stdout.flush()
