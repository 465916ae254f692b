"""A long pasted report is matched by its head: the statement a report opens with wins over
the log it ends with (core/search/report_head.py). The real `codeask index` and `codeask
search` on a git repository the test makes."""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.query import query_signals
from codeask.core.search.report_head import REPORT_HEAD_CHARS, lexical_text
from support.search_cli import ranked_files, search_hits

FILES = {
    "gizmo/header.py": (
        "def read_header(blob):\n"
        '    """Split a gizmo blob into its header fields: magic, width, checksum."""\n'
        "    magic, width, checksum = blob.split(b',')\n"
        "    return magic, int(width), checksum\n"
    ),
    "transport/session.py": (
        "def reconnect(session):\n"
        '    """Retry handshake following socket timeout; keepalive, backoff, jitter,\n'
        '    proxy tunnel, certificate pinning, cipher negotiation, heartbeat."""\n'
        "    session.handshake(backoff=session.jitter, proxy=session.tunnel)\n"
    ),
}
FILLER = "We saw this on several laptops and one desktop, every single run behaved alike. "
LOG = (
    "socket timeout during handshake, retry with backoff and jitter; keepalive heartbeat "
    "lost; proxy tunnel closed; certificate pinning and cipher negotiation restarted.\n"
)


def report() -> str:
    """A title that names nothing, the statement, filler up to the head's end, then a log
    whose words all belong to the other file."""
    statement = "The gizmo header checksum is wrong when the width field is empty.\n"
    head = "Unexpected behaviour after upgrading\n\n" + statement
    head += FILLER * ((REPORT_HEAD_CHARS - len(head)) // len(FILLER) + 1)
    return head + "\n" + LOG * 12


def test_a_long_report_is_matched_by_its_head(tmp_path: Path) -> None:
    files = ranked_files(search_hits(tmp_path, FILES, report()))
    assert files[0] == "gizmo/header.py", files


def test_lexical_text_cuts_a_long_report_at_a_space_only() -> None:
    long_report = query_signals(report())
    cut = lexical_text(long_report)
    assert len(cut) <= REPORT_HEAD_CHARS and long_report.text.startswith(cut)
    assert long_report.text[len(cut)] in " \n" and "socket" not in cut
    short_report = query_signals("Checksum wrong\n\n" + LOG * 3)
    assert short_report.report and lexical_text(short_report) == short_report.text
    typed = query_signals("where is the gizmo header checksum read")
    assert lexical_text(typed) == typed.text
