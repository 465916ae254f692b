"""`codeask health`: what the editors' health checks show, for the folders named (or this one).

The same report the language server answers `codeask/health` with (codeask.core.checks.health):
versions, the LLM endpoint (reachable within 2 s? does it offer `llm.model`?), the embedding
tiers and each folder's index. Exit 0 when the endpoint answers, knows the model and every tier
can load, else 1 (search works without the LLM; only `ask` needs it).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from codeask.cli.common import EXIT_OK, EXIT_USER, print_json, roots
from codeask.core.checks.health import HealthReport, check
from codeask.core.operations import read_statuses
from codeask.core.storage.postgres.health import TeamHealth


def run(args: argparse.Namespace) -> int:
    """Read each folder's index (without the writer lock), probe the endpoint, print."""
    statuses, settings = read_statuses(roots(args.root))  # `ask` uses the first's settings
    assert settings is not None  # roots() names at least one folder
    report = check(settings, statuses, timeout=args.timeout)
    if args.json:
        print_json(dataclasses.asdict(report))
    else:
        sys.stdout.write(render(report))
    return EXIT_OK if not problems(report) else EXIT_USER


def problems(report: HealthReport) -> list[str]:
    """What keeps a feature from working: the endpoint, the model, a tier's model."""
    llm = report.llm
    found = []
    if not llm.reachable:
        found.append(f"LLM endpoint not reachable: {llm.error}")
    elif not llm.model_present:
        found.append(f"model '{llm.model}' is not among the {llm.models} the endpoint offers")
    found += [f"{t.name} tier: {t.detail}" for t in report.embedding.tiers if not t.available]
    team = report.team
    if team is not None and (team.error or not team.reachable):
        found.append(f"team database: {team.error or 'not reachable'}")
    return found


def render(report: HealthReport) -> str:
    """The human-readable report: one block per part, `ok`/`!!` marking each check."""
    llm = report.llm
    where = "this machine" if llm.loopback else "remote"
    lines = [
        f"codeask {report.version} on Python {report.python}",
        f"LLM       {llm.provider} at {llm.endpoint} ({where}), model {llm.model}",
    ]
    if not llm.reachable:
        lines.append(f"  !! not reachable: {llm.error}")
    elif llm.model_present:
        lines.append(f"  ok reachable ({llm.models} models), '{llm.model}' is among them")
    else:
        lines.append(
            f"  !! reachable ({llm.models} models), but '{llm.model}' is not among them "
            f"(see {llm.models_url})"
        )
    lines.append(f"embedding {report.embedding.model}")
    for tier in report.embedding.tiers:
        mark = "ok" if tier.available else "!!"
        lines.append(f"  {mark} {tier.name} tier ({tier.model}): {tier.detail}")
    if report.team is not None:
        lines += team_lines(report.team)
    for row in report.folders:
        lines.append(f"index     {row.root}")
        if not row.chunks:
            lines.append(f"  !! no index yet in {row.index_dir}: run `codeask index`")
            continue
        lines.append(
            f"  ok {row.files} files, {row.chunks} chunks; vector tiers: {row.tier_summary()}"
        )
        if team := row.team.summary():
            ok = row.team.base and not row.team.query_error
            lines.append(f"  {'ok' if ok else '!!'} {team}")
    return "\n".join(lines) + "\n"


def team_lines(team: TeamHealth) -> list[str]:
    """The team database block (`index.backend = "postgres"`)."""
    lines = [f"team db   {team.where or '(no DSN)'} (DSN from ${team.dsn_env})"]
    if not team.reachable or team.error:
        return [*lines, f"  !! {team.error or 'not reachable'}"]
    role = "read-write" if team.writable else "read-only (editors need no more; publishing does)"
    model = f"{team.model_dim}-dim vectors of embed.model" if team.model_dim else "no vectors yet"
    lines.append(
        f"  ok schema {team.schema_version} (this codeask knows up to {team.schema_known}), "
        f"{model}, {role}, answered in {team.millis} ms"
    )
    return lines
