"""Issue 27: no secret in any tool result.

The repository of the secret-handling attack tests (tests/hostile/test_secrets.py: ~35 real
token formats in code and config, private key blocks, a service-account file, credential
files, secrets committed and deleted, a token pasted into a commit message) is served by a
real `codeask mcp`; every tool is called the way an agent hunting for them would, and no
value (nor a long run of one) appears in any answer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_secrets import build, git, leaks

from support.mcp_harness import call, complete, mcp_session
from support.secret_formats import ALNUM, Maker, token_formats

pytestmark = pytest.mark.slow

QUESTIONS = (
    "where are the API tokens, passwords and keys configured?",
    "what are the SMTP mail relay credentials?",
    "show the private signing keys",
    "which credentials does the settings module read?",
)


#: Plain words assigned to secret-looking names: no format rule sees them (low entropy); only
#: the redaction for a remote endpoint does, and an agent's model is one.
PLAIN_SECRETS = {
    "SMTP_PASSWORD": "correcthorsebattery",
    "db_passphrase": "mellonfriendenter",
    "admin_token": "opensesamenow",
}


async def test_no_secret_in_any_tool_result(tmp_path: Path) -> None:
    ws = build(tmp_path, seed=1234)
    mail = "".join(f'{name} = "{value}"\n' for name, value in PLAIN_SECRETS.items())
    (ws.root / "src" / "mail.py").write_text(
        '"""Outgoing mail: the SMTP relay and its credentials."""\n\n' + mail, encoding="utf-8"
    )
    ws.values.extend(PLAIN_SECRETS.values())
    answers: list[str] = []

    async def keep(tool: str, **arguments: object) -> dict:
        result = await client.call_tool(tool, arguments)
        answers.append(result.content[0].text)  # type: ignore[union-attr]
        return await call(client, tool, **arguments) if not result.is_error else {}

    async with mcp_session(ws.root) as client:
        await complete(client, timeout=240)
        for secret in token_formats(Maker(1234)):
            await keep("search_code", query=secret.line.replace("{v}", "").strip() or secret.name)
            await keep("search_code", query=secret.name.replace("-", " "), k=50, max_tokens=30_000)
        for question in QUESTIONS:
            await keep("search_code", query=question, k=50, max_tokens=30_000)
            await keep("get_context", question=question, k=50)
        await keep("search_code", query="SMTP_PASSWORD db_passphrase admin_token")
        for rel in ("src/config.py", "src/keys.py", "src/settings.py", "src/mail.py"):
            for line in (1, 5, 20, 40):
                await keep("find_related", path=rel, line=line)
        for query in ("settings token", "temporary token demo", "add settings", "env"):
            await keep("search_history", query=query, k=50, max_tokens=30_000)
        await keep("search_history", path="src/settings.py", line=3)
        await keep("search_history", query="token", path="src/settings.py")
        await keep("index_status")
    text = "\n".join(answers)
    assert len(text) > 20_000, "the calls found little: the check would prove nothing"
    assert "redacted" in text.lower()  # the values were there to be found
    assert leaks(ws.values, text) == []


async def test_a_token_used_as_a_file_name_is_redacted_in_paths_and_still_usable(
    tmp_path: Path,
) -> None:
    """Round 3, item 10: `keys/ghp_….py` (a token pasted as a file name) is shown as
    `keys/«redacted:github-pat».py` by search_code, get_context and find_related, and that
    shown path, passed back to find_related and search_history, names the file."""
    m = Maker(99)
    token = "ghp_" + m.s(ALNUM, 36)
    root = tmp_path / "proj"
    (root / "keys").mkdir(parents=True)
    text = '"""Deploy key rotation for the release robot."""\n\n\ndef rotate_release_key():\n'
    (root / "keys" / f"{token}.py").write_text(text + "    return 'rotated'\n")
    (root / "app.py").write_text("def main():\n    return rotate_release_key()\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Add the release robot")
    shown = str(root / "keys" / "«redacted:github-pat».py")
    answers: list[str] = []
    async with mcp_session(root) as client:
        await complete(client, timeout=240)
        found = await call(client, "search_code", query="rotate release key robot", k=5)
        context = await call(client, "get_context", question="how is the release key rotated?")
        related = await call(client, "find_related", path=shown, line=4)
        history = await call(client, "search_history", query="release robot", path=shown)
        answers += [json.dumps(a, ensure_ascii=False) for a in (found, context, related, history)]
    text_out = "\n".join(answers)
    assert token not in text_out and token[4:].lower() not in text_out.lower()
    assert shown in [hit["path"] for hit in found["results"]]
    assert shown in [source["path"] for source in context["sources"]]
    assert related["path"] == shown and related["at"]["symbol"] == "rotate_release_key"
    assert "Add the release robot" in text_out  # the history of the shown path was found
