"""`codeask/health`: the engine's health report (codeask.core.checks.health) plus the live index
state.

The editors' `:checkhealth codeask` and status bar render this answer; they no longer resolve
settings or probe the LLM endpoint themselves. The report uses the settings askCode uses (the
first open folder's), and the probe runs on a request thread, bounded by 2 s.
"""

from __future__ import annotations

from typing import Any

import msgspec

from codeask.core.checks.health import HealthReport, check
from codeask.lsp.base import CodeaskServer
from codeask.lsp.features.common import custom_request
from codeask.lsp.features.index import index_state
from codeask.lsp.messages import (
    HEALTH,
    EmbeddingHealth,
    HealthParams,
    HealthResult,
    IndexState,
    LlmHealth,
    TeamHealth,
    to_json,
)


def health_result(report: HealthReport, state: IndexState) -> HealthResult:
    """The engine's report as the wire type."""
    return HealthResult(
        version=report.version,
        python=report.python,
        llm=msgspec.convert(report.llm, LlmHealth, from_attributes=True),
        embedding=msgspec.convert(report.embedding, EmbeddingHealth, from_attributes=True),
        index_state=state,
        team=None
        if report.team is None
        else msgspec.convert(report.team, TeamHealth, from_attributes=True),
    )


def server_health(ls: CodeaskServer) -> HealthResult:
    """Off the event loop: probe the endpoint askCode would call, read the index counts."""
    opened = ls.folders.opened()
    # askCode's settings: the first open folder's; while folders still load, the editor's + env
    report = check(opened[0].settings if opened else ls.settings)
    return health_result(report, index_state(ls.folders))


@custom_request(HEALTH)
async def on_health(ls: CodeaskServer, params: HealthParams) -> Any:
    """`codeask/health` → HealthResult."""
    return to_json(await ls.in_thread(server_health, ls))


def register(ls: CodeaskServer) -> None:
    """`codeask/health`."""
    ls.feature(HEALTH)(on_health)
