# ruff: noqa: E501  (the format table reads best one format a line)
"""Real secret formats, generated at test time (no secret-looking literal lives in the repo).

Each `Secret` is one format: the line a developer would write, and the value that must never
reach the index, the logs or a prompt. Values are random in the vendor's documented shape, so
they are as detectable (and as unique) as real ones.
"""

from __future__ import annotations

import base64
import json
import random
import string
import uuid
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "_-"


@dataclass(frozen=True)
class Secret:
    """One format: where it sits (a line of text) and the value that must vanish."""

    name: str
    line: str
    value: str


class Maker:
    """Random values in a format's alphabet and length."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def s(self, alphabet: str, n: int) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def password(self, n: int = 22) -> str:
        return self.s(ALNUM + "!#%^*-_", n - 2) + self.s(string.digits, 1) + self.s("!#%", 1)

    def shell_password(self, n: int = 20) -> str:
        """A password a shell or XML takes as written (no quote, `$`, `%`, `&`, `<`)."""
        return self.s(ALNUM, 1) + self.s(ALNUM + "!#^*", n - 3) + self.s(string.digits, 2)

    def key_body(self, lines: int = 8) -> list[str]:
        return [self.s(B64, 64) for _ in range(lines)]

    def jwt(self) -> str:
        def part(obj: dict[str, str]) -> str:
            raw = json.dumps(obj, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        head = part({"alg": "HS256", "typ": "JWT"})
        body = part({"sub": self.s(LOWER_ALNUM, 16), "name": self.s(string.ascii_letters, 12)})
        return f"{head}.{body}.{self.s(URLSAFE, 43)}"


def token_formats(m: Maker) -> list[Secret]:
    """Single-line formats: vendor tokens, assignments, headers, URLs, config lines."""
    docker_auth = base64.b64encode(f"deploy:{m.s(ALNUM, 24)}".encode()).decode()
    azure = m.s(B64, 86) + "=="
    return [
        Secret("aws-access-key-id", "aws_access_key_id = {v}", "AKIA" + m.s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
        Secret("aws-secret-unquoted", "aws_secret_access_key = {v}", m.s(B64, 40)),
        Secret("github-pat-classic", 'GITHUB_TOKEN = "{v}"', "ghp_" + m.s(ALNUM, 36)),
        Secret("github-pat-fine-grained", 'GH_PAT = "{v}"', "github_pat_" + m.s(ALNUM + "_", 82)),
        Secret("gitlab-pat", "gitlab: {v}", "glpat-" + m.s(URLSAFE, 20)),
        Secret("slack-bot", 'SLACK_BOT = "{v}"', f"xoxb-{m.s('0123456789', 10)}-{m.s('0123456789', 12)}-{m.s(ALNUM, 24)}"),
        Secret("slack-user", 'SLACK_USER = "{v}"', "xoxp-" + "-".join(m.s("0123456789", 10) for _ in range(3)) + "-" + m.s(LOWER_ALNUM, 32)),
        Secret("slack-webhook", 'HOOK = "{v}"', f"https://hooks.slack.com/services/T{m.s(ALNUM, 8)}/B{m.s(ALNUM, 8)}/{m.s(ALNUM, 24)}"),
        Secret("stripe-live", 'stripe.api_key = "{v}"', "sk_live_" + m.s(ALNUM, 24)),
        Secret("stripe-restricted", 'STRIPE_RK = "{v}"', "rk_live_" + m.s(ALNUM, 24)),
        Secret("google-api-key", 'MAPS = "{v}"', "AIza" + m.s(URLSAFE, 35)),
        Secret("azure-storage-key", "conn = DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={v};EndpointSuffix=core.windows.net", azure),
        Secret("twilio-api-key", 'TWILIO_KEY_SID = "{v}"', "SK" + m.s(HEX, 32)),
        Secret("sendgrid", 'SENDGRID = "{v}"', f"SG.{m.s(URLSAFE, 22)}.{m.s(URLSAFE, 43)}"),
        Secret("npm-token", "//registry.npmjs.org/:_authToken={v}", "npm_" + m.s(ALNUM, 36)),
        Secret("pypi-token", "password = {v}", "pypi-AgEIcHlwaS5vcmc" + m.s(URLSAFE, 60)),
        Secret("docker-auth", '{{"auths": {{"registry.example.com": {{"auth": "{v}"}}}}}}', docker_auth),
        Secret("pgpass-line", "{v}", f"db.internal:5432:app:app_user:{m.s(ALNUM, 18)}"),
        Secret("htpasswd-line", "alice:{v}", f"$apr1${m.s(ALNUM, 8)}${m.s(ALNUM + './', 22)}"),
        Secret("jwt", 'SESSION = "{v}"', m.jwt()),
        Secret("bearer", 'headers = {{"Authorization": "Bearer {v}"}}', m.s(ALNUM + "._-", 40)),
        Secret("basic-auth-url", 'REMOTE = "https://deploy:{v}@git.example.com/repo.git"', m.s(ALNUM, 18)),
        Secret("password-assignment", 'DB_PASSWORD = "{v}"', m.password()),
        Secret("secret-yaml", "client_secret: {v}", m.s(ALNUM, 32)),
        Secret("token-env", "api_token={v}", m.s(ALNUM, 32)),
        Secret("heroku", 'HEROKU_API_KEY = "{v}"', str(uuid.UUID(int=m.rng.getrandbits(128), version=4))),
        Secret("shopify", 'SHOPIFY = "{v}"', "shpat_" + m.s(HEX, 32)),
        Secret("mailgun", 'MAILGUN_API_KEY = "{v}"', "key-" + m.s(HEX, 32)),
        Secret("openai", 'OPENAI = "{v}"', "sk-proj-" + m.s(URLSAFE, 74) + "T3BlbkFJ" + m.s(URLSAFE, 74)),
        Secret("anthropic", 'ANTHROPIC = "{v}"', "sk-ant-api03-" + m.s(URLSAFE, 93) + "AA"),
        Secret("huggingface", 'HF = "{v}"', "hf_" + m.s(string.ascii_letters, 34)),
        Secret("telegram", 'TELEGRAM_BOT_TOKEN = "{v}"', f"{m.s('0123456789', 9)}:A{m.s(URLSAFE, 34)}"),
        Secret("discord", 'DISCORD_BOT_TOKEN = "{v}"', f"M{m.s(ALNUM, 23)}.{m.s(URLSAFE, 6)}.{m.s(URLSAFE, 27)}"),
        Secret("datadog", 'DATADOG_API_KEY = "{v}"', m.s(LOWER_ALNUM, 40)),
        Secret("digitalocean", 'DO = "{v}"', "dop_v1_" + m.s(HEX, 64)),
        # Round 3, item 10: config and command-line forms.
        Secret("redis-url-empty-user", 'CACHE_URL = "redis://:{v}@cache.internal:6379/0"', m.s(ALNUM, 20)),
        Secret("maven-settings-password", "    <server><id>central</id><username>deploy</username><password>{v}</password></server>", m.shell_password()),
        Secret("dotnet-app-setting", '    <add key="ApiKey" value="{v}" />', m.s(ALNUM, 32)),
        Secret("curl-basic-auth", "curl -fsS -u admin:{v} https://ci.example.com/api/build", m.shell_password()),
        Secret("mysql-command-line", "mysql -h db.internal -u app -p{v} app_production", m.shell_password()),
        Secret("netrc-line", "machine api.example.com login deploy password {v}", m.shell_password()),
        Secret("shadow-sha512", "alice:{v}:19700:0:99999:7:::", f"$6${m.s(ALNUM + './', 16)}${m.s(ALNUM + './', 86)}"),
    ]  # fmt: skip


KEY_KINDS = ("RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "PGP PRIVATE KEY BLOCK")


def key_blocks(m: Maker) -> list[tuple[str, list[str]]]:
    """(kind, body lines) of each private key format."""
    return [(kind, m.key_body()) for kind in KEY_KINDS]


def long_function_with_keys(blocks: list[tuple[str, list[str]]], filler: int = 90) -> str:
    """A Python function long enough to be split into several chunks, the keys inside it."""
    lines = [
        "def load_fixture_keys():",
        '    """Keys used by the signing tests."""',
        "    keys = {}",
    ]
    for i, (kind, body) in enumerate(blocks):
        lines += [f"    total_{i} = 0"] * 0
        lines += [f"    step_{i}_{j} = compute({i}, {j})" for j in range(filler // 4)]
        lines.append(f'    keys["{kind}"] = """-----BEGIN {kind}-----')
        lines += body
        lines.append(f'-----END {kind}-----"""')
    lines.append("    return keys")
    return "\n".join(lines) + "\n"


def service_account_json(m: Maker) -> tuple[str, list[str]]:
    """A GCP service-account key file's text, and the key body lines inside it."""
    body = m.key_body(6)
    pem = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END PRIVATE KEY-----\n"
    doc = {
        "type": "service_account",
        "project_id": "acme-prod",
        "private_key_id": m.s(HEX, 40),
        "private_key": pem,
        "client_email": "ci@acme-prod.iam.gserviceaccount.com",
    }
    return json.dumps(doc, indent=2), body


#: Files known by name to hold credentials: each must exist and never be indexed.
CREDENTIAL_FILES = (
    ".aws/credentials",
    ".git-credentials",
    ".envrc",
    ".pgpass",
    ".docker/config.json",
    ".kube/config",
    "credentials.json",
    "secrets.yaml",
    "id_dsa",
    "putty/deploy.ppk",
    ".htpasswd",
    "terraform.tfstate",
)
