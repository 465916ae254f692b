"""Settings from the editor: initializationOptions, pushed and pulled configuration."""

from __future__ import annotations

import asyncio
import logging

from lsprotocol import types

from codeask.config import build_settings, read_env
from codeask.lsp.base import CLIENT_TIMEOUT, CodeaskServer
from codeask.lsp.features.common import file_uri
from codeask.lsp.settings import SECTION, EditorSettings

log = logging.getLogger("codeask.lsp")
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def set_log_level(level: str) -> None:
    """stderr and window/logMessage follow `server.logLevel`."""
    logging.getLogger("codeask").setLevel(LEVELS.get(level, logging.INFO))


def apply_settings(ls: CodeaskServer) -> None:
    """Global settings (log level, debounce) and every folder's; warnings are shown."""
    editor = ls.editor_settings()
    ls.settings, warnings = build_settings(editor.global_, read_env())
    for warning in warnings:
        ls.warn(f"codeask: {warning}")
    set_log_level(ls.settings.server.log_level)
    for root in list(ls.folders.workers):
        for warning in ls.folders.reconfigure(root, editor.for_folder(root)):
            ls.warn(f"codeask: {warning}")


async def fetch_configuration(ls: CodeaskServer) -> EditorSettings | None:
    """Pull `codeask` settings (global + per folder) when the client supports it."""
    if not ls.capability("workspace.configuration", False):
        return None
    roots = list(ls.folders.workers)
    items = [types.ConfigurationItem(section=SECTION)] + [
        types.ConfigurationItem(scope_uri=file_uri(root), section=SECTION) for root in roots
    ]
    try:
        answer = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=items)),
            CLIENT_TIMEOUT,
        )
    except Exception as exc:
        log.info("workspace/configuration failed (%s); keeping current settings", exc)
        return None
    answer = list(answer or [])
    pulled = EditorSettings.parse(answer[0] if answer else None, "workspace/configuration")
    for root, value in zip(roots, answer[1:], strict=False):
        scoped = EditorSettings.parse(value, f"workspace/configuration ({root.name})")
        pulled.warnings += scoped.warnings
        if scoped.global_:
            pulled.scoped[root] = scoped.global_
    for warning in pulled.warnings:
        ls.warn(f"codeask: {warning}")
    return pulled


async def on_did_change_configuration(
    ls: CodeaskServer, params: types.DidChangeConfigurationParams
) -> None:
    """Pushed settings, then (when supported) the pulled ones on top."""
    ls.forget_warnings()
    pushed = EditorSettings.parse(params.settings, "didChangeConfiguration")
    for warning in pushed.warnings:
        ls.warn(f"codeask: {warning}")
    pulled = await fetch_configuration(ls)
    ls.pulled = pushed.layered(pulled) if pulled is not None else pushed
    apply_settings(ls)


def register(ls: CodeaskServer) -> None:
    """`workspace/didChangeConfiguration`."""
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(on_did_change_configuration)
