"""No secret value is ever stored, embedded, logged or sent (issue 11, item 4).

A real git repository holds 42 token and config-line formats, 4 private key kinds inside a
function long enough to be split into chunks, a GCP service-account file and the 12 well-known
credential files; a tracked `.env`, a credentials-laden settings module and a token pasted into
a commit message live only in history (deleted in a later commit). The real `codeask` CLI
indexes it with history on (`-vv`), searches it and asks a real loopback OpenAI-compatible
endpoint about it. Then every byte of the index folder (SQLite and its -wal included), the
cache folder, every log and output, and every request body the endpoint recorded must be free
of every value.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import zstandard
from _fake_llm import Recorder, fake_llm

from support import CODEASK_SCRIPT, private_env
from support import codeask as run_codeask
from support.secret_formats import (
    CREDENTIAL_FILES,
    HEX,
    Maker,
    Secret,
    key_blocks,
    long_function_with_keys,
    service_account_json,
    token_formats,
)

#: Every test here runs the real `codeask` CLI on a corpus of planted secrets.
pytestmark = pytest.mark.slow

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Alice",
    "GIT_AUTHOR_EMAIL": "alice@example.com",
    "GIT_COMMITTER_NAME": "Alice",
    "GIT_COMMITTER_EMAIL": "alice@example.com",
}
#: Ordinary code that must come through untouched (the false-positive side).
ORDINARY = {
    "app/forms.py": (
        "import getpass\n\n\ndef login(request):\n"
        "    password = getpass.getpass()\n"
        '    token = request.headers["x-token"]\n'
        "    api_key = settings.API_KEY_2\n"
        '    secret_name = "db-password"\n'
        '    tokenizer = "bert-base-uncased"\n'
        '    REQUEST_ID = "{uuid}"\n'
        "    return password, token\n"
    ),
    "tests/test_login.py": (
        'def test_login():\n    assert login(user="bob", password="test") is None\n'
        '    assert check(token="dummy-token", api_key="changeme")\n'
    ),
    "requirements.lock": "requests==2.32.3 \\\n    --hash=sha256:{sha}\n",
    "docs/auth.md": "# Auth\n\nThe API accepts Bearer authorization on every route.\n",
    "docs/deploy.md": (  # round 3, item 10: the new rules' look-alikes stay as written
        '<add key="ApiBaseUrl" value="https://api.example.com/v2" />\n'
        "<password>${{env.DEPLOY_PASSWORD}}</password>\n"
        'curl -u "$CI_USER:$CI_TOKEN" https://ci.example.com\n'
        "cc $(mysql_config --cflags) -pthread -o app app.c\n"
        "The machine keeps its password in the vault.\n"
    ),
}


@dataclass
class Workspace:
    base: Path
    root: Path
    values: list[str]
    ordinary: list[str]
    markers: dict[str, str]
    env: dict[str, str]


def git(root: Path, *args: str) -> None:
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def cli_env(base: Path, port: int = 0) -> dict[str, str]:
    """Private XDG folders (the embedding cache lives there), no inherited CODEASK_ settings."""
    env = private_env(base)
    if port:
        env.update(
            CODEASK_LLM__PROVIDER="openai",
            CODEASK_LLM__BASE_URL=f"http://127.0.0.1:{port}",
            CODEASK_LLM__MODEL="stand-in",
        )
    return env


def codeask(ws: Workspace, *args: str, env: dict[str, str] | None = None) -> tuple[str, str]:
    """Run the installed `codeask` script at -vv; (stdout, stderr). Fails the test on a
    non-zero exit."""
    proc = run_codeask(
        "-vv",
        *args,
        cwd=ws.root,
        env=env or ws.env,
        timeout=600,
        check=True,
        launcher=CODEASK_SCRIPT,
    )
    return proc.stdout, proc.stderr


def build(base: Path, seed: int) -> Workspace:
    """The repository: history first (secrets committed, then deleted), then the working tree."""
    m = Maker(seed)
    root = base / "proj"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    formats = token_formats(m)
    history, tree = formats[: len(formats) // 3], formats[len(formats) // 3 :]
    values = [s.value for s in formats]
    pasted = "ghp_" + m.s(HEX + "ABCDEF", 36)
    values.append(pasted)
    # Plain markers no content rule can see: only the file-name rules keep them out of history.
    plain = [m.s(HEX, 32), m.s(HEX, 32)]
    values += plain
    env_text = "".join(s.line.format(v=s.value) + "\n" for s in history)
    write(root, ".env", env_text + f"NOTE={plain[0]}\n")
    write(root, "src/settings.py", _module(history))
    write(root, "terraform.tfstate", f'{{"note": "{plain[1]}"}}\n')
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"Add settings\n\nTemporary token {pasted} for the demo")
    (root / ".env").unlink()
    (root / "terraform.tfstate").unlink()
    write(root, "src/settings.py", 'import os\n\nTOKEN = os.environ["TOKEN"]\n')
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Read settings from the environment")
    blocks = key_blocks(m)
    values += [line for _, body in blocks for line in body]
    write(root, "src/keys.py", long_function_with_keys(blocks))
    sa_text, sa_body = service_account_json(m)
    values += sa_body
    write(root, "deploy/service-account-prod.json", sa_text)
    write(root, "src/config.py", _module(tree))
    git(root, "add", "src/keys.py")
    git(root, "commit", "-q", "-m", "Signing fixtures")
    markers = {rel: m.s(HEX, 32) for rel in CREDENTIAL_FILES}
    for rel, marker in markers.items():
        write(root, rel, f"note {marker}\n")
    ordinary = {"uuid": "5f0c3d4e-8a2b-4c1d-9e7f-0a1b2c3d4e5f", "sha": m.s(HEX, 64)}
    for rel, text in ORDINARY.items():
        write(root, rel, text.format(**ordinary))
    kept = [
        "getpass.getpass()",
        'password="test"',
        "bert-base-uncased",
        "Bearer authorization",
        'value="https://api.example.com/v2"',
        "<password>${env.DEPLOY_PASSWORD}</password>",
        'curl -u "$CI_USER:$CI_TOKEN"',
        "-pthread -o app",
        "keeps its password in the vault",
        *ordinary.values(),
    ]
    return Workspace(base, root, values, kept, markers, cli_env(base))


def _module(secrets: list[Secret]) -> str:
    """A Python-ish module: one assignment or config line per format."""
    return "".join(s.line.format(v=s.value) + "\n" for s in secrets)


def every_byte(folder: Path) -> bytes:
    """All files under a folder, concatenated (msgpack, vectors, segments...); a chunk record
    file's records as they decode (each is stored zstd-compressed), so a value in a chunk's
    text is found as it would be in a plain file."""
    return b"\n".join(
        p.read_bytes() + _plain_records(p) for p in sorted(folder.rglob("*")) if p.is_file()
    )


def _plain_records(path: Path) -> bytes:
    if path.name != "chunks.rec":
        return b""
    from codeask.core.storage.chunk_file import ChunkFile
    from codeask.core.storage.record_codec import ZSTD_MAGIC

    records = ChunkFile(path)
    unpack = zstandard.ZstdDecompressor()
    raw = (bytes(records.raw(row)) for row in range(len(records)))
    return b"\n".join(unpack.decompress(r) if r[:4] == ZSTD_MAGIC else r for r in raw)


def pieces(value: str) -> list[str]:
    """The value and its long alphanumeric runs (a tokenizer may store those, lowercased)."""
    return [value, *(r.lower() for r in re.findall(r"[A-Za-z0-9]{12,}", value))]


def leaks(values: list[str], haystack: str) -> list[str]:
    low = haystack.lower()
    return [v for v in values if v in haystack or any(p in low for p in pieces(v)[1:])]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Workspace, str]]:
    ws = build(tmp_path_factory.mktemp("secrets"), seed=int.from_bytes(os.urandom(4), "big"))
    _, log = codeask(ws, "index", "--lexical-only", str(ws.root))
    yield ws, log


def test_corpus_is_big_enough(indexed: tuple[Workspace, str]) -> None:
    ws, _ = indexed
    assert len({s.name for s in token_formats(Maker(0))}) + 4 + 1 >= 30  # tokens, keys, SA
    assert len(ws.values) > 60


def test_no_value_in_the_index_folder_the_cache_or_the_index_log(
    indexed: tuple[Workspace, str],
) -> None:
    ws, log = indexed
    stored = every_byte(ws.root / ".codeask") + every_byte(ws.base / "cache")
    text = stored.decode("utf-8", errors="replace")
    assert "«redacted:" in text  # the chunks are there, with placeholders
    assert leaks(ws.values, text) == []
    assert leaks(ws.values, log) == []
    for kept in ws.ordinary:  # ordinary code is stored as written
        assert kept in text, kept


def test_history_was_indexed_and_is_clean(indexed: tuple[Workspace, str]) -> None:
    ws, _ = indexed
    out, log = codeask(ws, "search", "settings token temporary", "--scope", "history", "-k", "20")
    assert "Add settings" in out and "«redacted:" in out
    assert leaks(ws.values, out + log) == []
    assert ".env" not in re.sub(r"not diffed: [^\n]*", "", out)  # only named as skipped


def test_search_output_is_clean(indexed: tuple[Workspace, str]) -> None:
    ws, _ = indexed
    for query in ("aws secret access key", "private key", "token password", "auth docker"):
        out, log = codeask(ws, "search", query, "--scope", "all", "-k", "30")
        assert leaks(ws.values, out + log) == [], query


def test_credential_files_exist_and_are_skipped(indexed: tuple[Workspace, str]) -> None:
    ws, log = indexed
    stored = every_byte(ws.root / ".codeask").decode("utf-8", errors="replace")
    for rel, marker in ws.markers.items():
        assert (ws.root / rel).is_file()
        assert marker not in stored and marker not in log, rel
        assert f"skipped {rel}: secret-like name" in log, rel
    out, _ = codeask(ws, "search", " ".join(ws.markers.values()), "--scope", "all")
    assert not any(marker in out for marker in ws.markers.values())


def test_prompt_sent_to_the_llm_is_clean(indexed: tuple[Workspace, str]) -> None:
    ws, _ = indexed
    with fake_llm() as recorder:
        question = "where are the aws secret access key, the private keys and the tokens set?"
        out, log = codeask(ws, "ask", question, env=cli_env(ws.base, recorder.port))
    sent = _sent(recorder)
    assert "«redacted:" in sent  # the secrets' places reached the model, not their values
    assert leaks(ws.values, sent + out + log) == []


def _sent(recorder: Recorder) -> str:
    assert recorder.bodies, "the endpoint got no request"
    return recorder.text()


def test_real_embedder_never_sees_a_value(tmp_path: Path) -> None:
    """End to end with the packaged model: vectors are keyed by hash, the text is redacted."""
    m = Maker(7)
    formats = token_formats(m)[:6]
    root = tmp_path / "small"
    root.mkdir()
    write(root, "settings.py", _module(formats))
    ws = Workspace(tmp_path, root, [s.value for s in formats], [], {}, cli_env(tmp_path))
    _, log = codeask(ws, "index", "--full", str(root))
    cache = every_byte(tmp_path / "cache").decode("utf-8", errors="replace")
    stored = every_byte(root / ".codeask").decode("utf-8", errors="replace")
    computed = re.search(r"100% embedded \((\d+) computed\)", log)
    assert computed and int(computed.group(1)) > 0, log[-500:]  # the real model ran
    assert leaks(ws.values, cache + stored + log) == []
    out, _ = codeask(ws, "search", "stripe github token", "--mode", "dense", "-k", "5")
    assert "settings.py" in out and leaks(ws.values, out) == []
    print(json.dumps({"formats": len(formats), "cache_bytes": len(cache)}))
