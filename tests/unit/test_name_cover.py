"""core/search/name_cover.py: among files whose names match the same question words, the one
whose whole name the question says ranks first (the others' unsaid name parts qualify it).

The end-to-end case is the real CLI as processes (`codeask index`, `codeask search --json`) on a
git repository the test makes: "the job queue" asked of `job_queue.py` and
`job_queue_metrics.py`, whose text says "job queue" more often; before the rule the metrics
file ranked first.
"""

from __future__ import annotations

from pathlib import Path

from codeask.core.search.name_cover import cover_factor, name_cover, name_parts, question_parts
from support.search_cli import ranked_files, search_hits

FILES = {
    "pkg/job_queue.py": "class JobQueue:\n"
    '    """Holds pending work in arrival order."""\n\n'
    "    def push(self, item):\n        self.items.append(item)\n",
    "pkg/job_queue_metrics.py": "class JobQueueMetrics:\n"
    '    """Counts each job the job queue takes and each job the job queue hands out."""\n\n'
    "    def record(self, job):\n        self.jobs_seen += 1\n",
    **{
        f"pkg/util{i}.py": f"def helper_{i}(value):\n"
        f'    """Formats a value for display number {i}."""\n    return str(value)\n'
        for i in range(1, 6)
    },
}


def test_a_file_name_splits_into_its_words() -> None:
    assert name_parts("Sources/Vapor/Application+Responder.swift") == ("application", "responder")
    assert name_parts("src/init-threads.ts") == ("init", "threads")
    assert name_parts("lang3/ReflectionToStringBuilder.java") == (
        "reflection",
        "string",
        "builder",
    )
    assert name_parts("lib/io.c") == ("io",)  # no word of three letters: the whole name
    assert name_parts("Builders.common.kt") == ("builders",)  # the name before its first dot


def test_words_inside_a_question_identifier_are_said() -> None:
    said = question_parts("how entry_manager stores results for SchemaUtils")
    assert {"entry", "manager", "schema", "utils", "entry_manager", "schemautils"} <= said
    assert "how" not in said and "for" not in said


def test_the_unsaid_share_of_a_name_scales_its_lift() -> None:
    said = question_parts("toString builder for human-readable object descriptions")
    assert name_cover(said, "ToStringBuilder.java") == 1.0
    assert name_cover(said, "ReflectionToStringBuilder.java") == 2 / 3
    assert cover_factor(said, "ToStringBuilder.java") == 1.0
    assert cover_factor(said, "ReflectionToStringBuilder.java") < 1.0
    # a whole-name match by stem counts as said: "Channel" names Channel.kt, not Channels.kt's rival
    assert name_cover(question_parts("Channel for sending values"), "channels/Channel.kt") == 1.0


def test_codeask_search_ranks_the_file_the_question_names_whole_first(tmp_path: Path) -> None:
    files = ranked_files(search_hits(tmp_path, FILES, "the job queue"))
    assert files[:2] == ["pkg/job_queue.py", "pkg/job_queue_metrics.py"]
