"""`codeask search`'s output, rendered from a search's answer as plain data
(core/operations/search_answer.py's `SearchAnswer` as builtins): the one renderer, whether the
search ran in this process or the daemon sent its answer. Standard library only, and no `json`
(the writer is daemon/protocol.py's): a forwarded search imports it before any CLI module.

Exit code 1 when nothing is found, so scripts can tell.
"""

from __future__ import annotations

import sys

from codeask.core.source.names import display_path, display_text
from codeask.daemon.protocol import encode

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (the forwarded search stays small)
    from typing import Any

EXIT_OK, EXIT_USER = 0, 1  # cli/common.py's: importing it would import the CLI
#: The hit fields `--json` prints, in its order.
JSON_HIT_FIELDS = (
    "path",
    "relative_path",
    "start_line",
    "end_line",
    "symbol",
    "parent",
    "kind",
    "language",
    "score",
    "retrievers",
    "preview",
    "meta",
    "uncommitted",
)


def show(notes: str, answer: dict[str, Any] | None, error: str, code: int, as_json: bool) -> int:
    """Print one search's outcome and return its exit code: the notes (stderr lines written
    before the answer), then the user error's line (`error`, exit `code`) or the answer."""
    sys.stderr.write(notes)
    if answer is None:
        sys.stderr.write(f"codeask: {error}\n")
        return code
    return render(answer, as_json)


def render(answer: dict[str, Any], as_json: bool) -> int:
    """The hits on stdout (`--json`: one indented document); on stderr how many, and which
    tiers answered when one is incomplete or did not answer."""
    if as_json:
        payload = {
            "query": answer["query"],
            "warming": answer["warming"],
            "tiers_answered": answer["tiers_answered"],
            "vectors": answer["vectors"],
            "seconds": round(answer["seconds"], 4),
            "results": [{name: hit[name] for name in JSON_HIT_FIELDS} for hit in answer["results"]],
        }
        sys.stdout.write(encode(payload, indent=2).decode("ascii") + "\n")
    else:
        _print_hits(answer)
    return EXIT_OK if answer["results"] else EXIT_USER


def _print_hits(answer: dict[str, Any]) -> None:
    out = sys.stdout
    note = f"  ({answer['tiers']})" if answer["tiers"] else ""
    hits = answer["results"]
    if not hits:
        sys.stderr.write(f"no results{note}\n")
        return
    for hit in hits:
        name = f"{hit['parent']}.{hit['symbol']}" if hit["parent"] else hit["symbol"]
        path = display_path(hit["relative_path"])  # a newline in a name must not split a hit
        out.write(
            f"{path}:{hit['start_line']}-{hit['end_line']}  {hit['kind']} {display_text(name)}  "
            f"[{hit['exact_score']:.4f} {'+'.join(hit['retrievers'])}]\n"
        )
        for line in hit["preview"].splitlines()[:2]:  # bidi overrides and controls escaped
            out.write(f"    {display_text(line[:120])}\n")
    if answer["warming"]:
        note += "; `codeask index --full` or an editor's codeask server completes the vectors"
    sys.stderr.write(f"{len(hits)} results in {answer['seconds'] * 1000:.0f} ms{note}\n")
