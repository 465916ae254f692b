"""What a one-shot search pays for before it answers (issue 29: a hybrid `codeask search` with no
daemon should cost at most 0.4 CPU-s). Each test runs a fresh interpreter: its `sys.modules`
and its calls to `re.compile` say exactly what the step paid for."""

from __future__ import annotations

from pathlib import Path

import pytest
from fresh import last_json, plain_env, write_demo_project

from support import codeask

#: Records the file of every `re.compile` caller, then imports what every search imports.
COMPILES_AT_IMPORT = """
import json, re, sys
callers = []
real = re.compile
def counting(pattern, flags=0):
    callers.append(sys._getframe(1).f_code.co_filename)
    return real(pattern, flags)
re.compile = counting
import codeask.core.operations
print(json.dumps(callers))
"""


def test_importing_the_operations_compiles_no_redaction_pattern() -> None:
    callers = last_json(["-c", COMPILES_AT_IMPORT])
    redaction = [c for c in callers if c.endswith(("secrets.py", "redact_outbound.py"))]
    assert callers, "the recorder saw no compile at all: it recorded nothing"
    assert redaction == [], f"{len(redaction)} patterns compiled at import"


REDACTS = """
import json
from codeask.core.source import secrets
from codeask.core.source.redact_outbound import redact_secrets
key = "AKIA" + "QYLPMN5HHHFPZAM2"
text = f'aws = "{key}"\\npassword = "hunter2-hunter2"\\n'
clean, count = redact_secrets(text)
compiled = sum(rule.regex.is_compiled for rule in secrets.TOKEN_RULES)
print(json.dumps({"clean": clean, "count": count, "compiled": compiled}))
"""


def test_a_lazily_compiled_table_still_redacts() -> None:
    seen = last_json(["-c", REDACTS])
    assert "AKIA" not in seen["clean"] and "hunter2" not in seen["clean"], seen
    assert seen["count"] == 2, seen
    assert "«redacted:aws-access-token»" in seen["clean"], seen
    assert seen["compiled"] >= 1, seen  # only the rules whose keywords occurred


SEARCH = """
import json, sys
from pathlib import Path
from codeask.core import operations
from codeask.core.source import secrets
folder = operations.open_for_reading(Path(sys.argv[1]))
result = operations.search_folders([folder], sys.argv[2], mode="hybrid", k=5)
print(json.dumps({
    "hits": [hit.path for hit in result.hits],
    "retrievers": sorted({r for hit in result.hits for r in hit.retrievers}),
    "loaded": sorted(name for name in ("pathspec", "numpy.ma") if name in sys.modules),
    "secrets_compiled": sum(rule.regex.is_compiled for rule in secrets.TOKEN_RULES),
}))
"""


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A small project indexed with both the lexical and the static tier."""
    root = tmp_path_factory.mktemp("load_path")
    project = write_demo_project(root / "demo")
    env = {**plain_env(), "XDG_CACHE_HOME": str(root / "xdg")}
    codeask("index", str(project), env=env, check=True)
    return project, env


def _search(indexed: tuple[Path, dict[str, str]], query: str, *extra: str) -> dict[str, object]:
    project, env = indexed
    seen: dict[str, object] = last_json(["-c", SEARCH, str(project), query, *extra], env)
    return seen


def test_a_hybrid_search_compiles_no_secret_rule_and_loads_no_glob_or_masked_arrays(
    indexed: tuple[Path, dict[str, str]],
) -> None:
    seen = _search(indexed, "least recently used cache")
    hits = seen["hits"]
    assert isinstance(hits, list) and hits and str(hits[0]).endswith("cache.py"), seen
    assert "static" in seen["retrievers"], seen  # the static tier answered: vectors loaded
    assert seen["loaded"] == [], seen
    assert seen["secrets_compiled"] == 0, seen
