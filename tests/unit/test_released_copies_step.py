"""A released library copied inside the project ranks below the project's own code
(core/search/steps/releases.py): the real `codeask index` and `codeask search` on git
repositories the test makes, identical but for the copy's `__version__` line."""

from __future__ import annotations

from pathlib import Path

from support.search_cli import first_file

OWN = (
    "from shop.packages.retry import errors\n\n\n"
    "def send(request):\n"
    '    """Send the request, wrapping a timeout of the connection pool."""\n'
    "    try:\n"
    "        return request.go()\n"
    "    except errors.PoolTimeout as exc:\n"
    "        raise ConnectionError(exc)\n"
)
COPY = "".join(
    f"class {name}(Exception):\n"
    f'    """The connection pool timed out: {doc} of the pool connection timeout."""\n\n\n'
    for name, doc in (
        ("PoolTimeout", "a pool timeout"),
        ("ReadPoolTimeout", "a read timeout"),
        ("ConnectPoolTimeout", "a connect timeout"),
    )
)
REPORT = """PoolTimeout raised from the connection pool instead of a ConnectionError

When the connection pool times out, the timeout escapes as the pool's PoolTimeout:
a connection pool timeout should raise ConnectionError.
"""


def files(copy_init: str) -> dict[str, str]:
    """The project `shop` with a copy of `retry` under `shop/packages/`."""
    return {
        "shop/__init__.py": '__version__ = "2.0"\n',
        "shop/adapters.py": OWN,
        "shop/packages/__init__.py": "",
        "shop/packages/retry/__init__.py": copy_init,
        "shop/packages/retry/errors.py": COPY,
    }


def test_a_nested_package_with_its_own_version_ranks_below_the_project(tmp_path: Path) -> None:
    """Without `__version__` the copy is the project's own subpackage: its errors win."""
    plain = first_file(tmp_path / "plain", files('"""Retries."""\n'), REPORT)
    assert plain == "shop/packages/retry/errors.py"
    released = files('"""Retries."""\n\n__version__ = "1.26.4"\n')
    assert first_file(tmp_path / "released", released, REPORT) == "shop/adapters.py"
