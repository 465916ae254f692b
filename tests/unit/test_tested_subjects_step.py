"""A pasted report's best-matching test file points at the module it tests
(core/search/steps/tested.py): the real `codeask index` and `codeask search` on a git
repository the test makes, once with the step (the default) and once with
`retrieve.tested_weight = 0`."""

from __future__ import annotations

from pathlib import Path

from support.search_cli import first_file

CORE = "\n\n".join(
    f'def {name}(app, request):\n    """{doc}"""\n    return app.handlers[request.path](request)\n'
    for name, doc in (
        ("dispatch", "Dispatch a request to its handler; the output is the handler's."),
        ("handle", "Handle one request of the app and write its output."),
        ("show_output", "Show the app's output for a request, every route's handler."),
    )
)
TESTS = "\n\n".join(
    f"def test_{name}(client):\n"
    f'    """Listing routes shows the subdomain of {what}."""\n'
    f"    out = client.invoke(['routes', '--subdomain'])\n"
    f"    assert 'subdomain' in out and 'routes' in out\n"
    for name, what in (
        ("routes_subdomain", "every route"),
        ("routes_subdomain_sorted", "routes sorted by subdomain"),
        ("routes_subdomain_default", "routes on the default server name"),
    )
)
FILES = {
    "app/core.py": CORE,
    "app/listing.py": (
        "def list_rules(rules):\n"
        '    """Rows of a table: endpoint, methods, rule."""\n'
        "    return [(r.endpoint, r.methods, r.rule) for r in rules]\n"
    ),
    "tests/test_listing.py": TESTS,
}
REPORT = """Listing routes does not show the subdomain

When I list the routes of an app whose blueprints are registered with a subdomain, the output
shows every route but there is no way to see which subdomain each route is assigned to. The
request is handled fine; only the output of the listing lacks the subdomain.

Expected: a column with the subdomain (or the default server name) for every route.
"""


def test_the_module_a_matching_test_file_tests_ranks_first(tmp_path: Path) -> None:
    """Without the step the module matching more of the report's words wins."""
    assert first_file(tmp_path / "on", FILES, REPORT) == "app/listing.py"
    off = {"CODEASK_RETRIEVE__TESTED_WEIGHT": "0"}
    assert first_file(tmp_path / "off", FILES, REPORT, **off) == "app/core.py"
