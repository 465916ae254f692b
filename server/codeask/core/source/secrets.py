"""Find high-confidence secrets in text and replace each value by `«redacted:<rule>»`.

Runs on a file's whole text before chunking (so a private key split across chunks is still seen
whole), on git commit messages and hunks, and on everything the prompt sends. Line count and
line numbers never change: a value becomes a placeholder on the same line, and each body line
of a private key block becomes one placeholder line between the kept BEGIN and END lines.

Provenance: the token formats and rule ids come from gitleaks' default config
(github.com/gitleaks/gitleaks, config/gitleaks.toml, MIT license, Copyright (c) 2019 Zachary
Rice); `azure-storage-key` and `discord-bot-token` come from detect-secrets' plugins
(github.com/Yelp/detect-secrets, Apache-2.0). `pgpass` and `htpasswd` follow the PostgreSQL and
Apache file formats (htpasswd also crypt(3) `$1$`/`$5$`/`$6$`); `curl-auth-user` is gitleaks';
`xml-password` (Maven settings.xml), `xml-key-value` (.NET app.config), `mysql-password` (the
mysql client's `-pPW`) and `netrc-password` (netrc(5)) follow those formats. A value filled in
elsewhere (`${env.PW}`, `$PASS`) or a documentation stand-in (`changeme`, `password`) stays.
As in gitleaks, each rule has lowercase keywords: a rule's regex only runs when one of them
occurs in the text. One pass of an RE2 set over the lowered text (`_Seen`, secret_gates.py)
answers every keyword and token prefix at once, so a file costs one lowering and that pass, not
a scan per keyword (kernel,mm,lib: 38 -> 23 ms/MB with a split into distinct words, 9.0 with
the set).
detect-secrets itself was measured at 0.03 MB/s here (200x too slow for indexing).

Every pattern is compiled when a text first needs it (`LazyRegex`): a search imports this
module but redacts nothing. A leaf: imports nothing of ours but
`lazy_regex` and `secret_gates`.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from codeask.core.source.lazy_regex import LazyRegex
from codeask.core.source.secret_gates import KeywordGate

PLACEHOLDER = "«redacted:{}»"
#: What every placeholder starts with: a value holding it was redacted already.
PLACEHOLDER_MARK = PLACEHOLDER.split("{")[0]
#: Characters a redacted value can never contain: whitespace, quotes, brackets, placeholders.
_STOP = r"\s\"'`;,()\[\]{}<>«»"


@dataclass(frozen=True)
class Rule:
    """One secret format: keywords (any, lowercase) gate the regex; group `v` is the value."""

    id: str
    keywords: tuple[str, ...]
    regex: LazyRegex
    """Compiled on first use: importing the table costs no compile (issue 29)."""
    entropy: float = 0.0
    """Minimum Shannon entropy (bits per character) of the value, as in gitleaks."""
    check: Callable[[re.Match[str]], bool] | None = None
    """Extra veto on a match (allowlists); True keeps it."""
    prefix: bool = False
    """Keywords are token prefixes: gate on words that start with one (cheaper than `in`)."""


def _rule(
    rule_id: str,
    keywords: str,
    pattern: str,
    entropy: float = 0.0,
    check: Callable[[re.Match[str]], bool] | None = None,
) -> Rule:
    prefix = rule_id not in _CONTEXT_RULES
    return Rule(rule_id, tuple(keywords.split()), LazyRegex(pattern), entropy, check, prefix)


#: Rules whose keywords may sit anywhere (a name before `=`, a header, a URL): gated by `in`.
_CONTEXT_RULES = (
    "aws-secret",
    "heroku-api-key",
    "mailgun-private-api-token",
    "telegram-bot-api-token",
    "discord-bot-token",
    "discord-api-token",
    "datadog-access-token",
    "azure-storage-key",
    "azure-ad-client-secret",
    "slack-webhook-url",
    "authorization-header",
    "url-password",
    "htpasswd",
    "pgpass",
    "generic-api-key",
    "xml-password",
    "xml-key-value",
    "curl-auth-user",
    "mysql-password",
    "netrc-password",
)


#: The end of a token in gitleaks' rules: a quote, space, `;`, an escaped newline or the end.
_END = r"(?=[`'\"\s;,)\]}]|\\[nr]|$)"
#: `name … = value` with the value's opening quote, as in gitleaks' keyword-context rules.
_ASSIGN = r"[\w.-]{0,20}[\s'\"]{0,3}(?:=|>|:{1,3}=|:|=>|\?=)[`'\"\s=]{0,5}"


def shannon_entropy(value: str) -> float:
    """Bits per character of `value` (0 for an empty string)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _not_example(m: re.Match[str]) -> bool:
    """gitleaks' aws-access-token allowlist: AWS's documented `...EXAMPLE` keys."""
    return not m.group("v").endswith("EXAMPLE")


def _not_a_word(m: re.Match[str]) -> bool:
    """A token is not one plain word: `Bearer authorization` in prose stays (a token has a
    digit, an upper-case letter or a symbol)."""
    return not m.group("v").isalpha() or not m.group("v").islower()


_PGPASS_HOST = LazyRegex(r"[+ -]?[\w.*-]+")


def _pgpass_host(m: re.Match[str]) -> bool:
    """The line starts with a host name right before the port (the regex starts at `:port`)."""
    text, end = m.string, m.start()
    return _PGPASS_HOST.fullmatch(text, text.rfind("\n", 0, end) + 1, end) is not None


#: Documentation stand-ins for a password (gitleaks curl-auth-user allowlist, extended):
#: `changeme`, `password`, `<password>`, `***`, `xxx`, `secret`, `yourpassword`...
_DOC_PASSWORD = LazyRegex(
    r"(?i)(?:your|my|the)?[_-]?(?:change(?:it|me)|pass(?:word|wd)?|pwd|pw|test|token|secret"
    r"|api[_-]?key|example|dummy|redacted|\*+|x+|\.+)"
)
#: A value filled in by a build tool or a shell, not written in the file: `${env.DB_PW}`,
#: `$PASSWORD`, `%PW%`, `{{ pw }}`, `#{pw}`, `@pw@`, `__PW__`.
_FILLED_IN = LazyRegex(
    r"\$\{|\$\(|\$[A-Za-z_]|%[A-Za-z_]+%|\{\{|#\{|@[A-Za-z_]+@|__[A-Z_]+__|^\{[\w.\s(),]*\}$"
)
#: Names of a password (any value is one) rather than of a token (random-looking values only).
_PASSWORD_NAME = LazyRegex(r"(?i)passw|pwd|passphrase")


def _plain_value(value: str) -> bool:
    """A value that is no secret whatever its name says: filled in elsewhere, a documentation
    stand-in, a boolean or null, or a placeholder already."""
    return (
        value.startswith("«")
        or _FILLED_IN.search(value) is not None
        or _DOC_PASSWORD.fullmatch(value) is not None
        or _TEMPLATE.search(value) is not None
    )


def _named_value(m: re.Match[str]) -> bool:
    """A value under a secret's name (`<password>`, `key="ApiKey"`): a password is any value
    that is not a stand-in; a key or token must also look random (not words, entropy >= 3)."""
    name, value = m.group("name"), m.group("v")
    if _plain_value(value) or _ALLOWED_NAME.search(name):
        return False
    if _PASSWORD_NAME.search(name):
        return True
    return not _wordy(value) and shannon_entropy(value) >= 3.0


def _command_password(m: re.Match[str]) -> bool:
    """A password on a command line that is written there, not a shell variable or a stand-in."""
    return not _plain_value(m.group("v").strip("\"'"))


#: The start of a curl command on the same line or on lines continued by `\`.
_CURL = LazyRegex(r"\bcurl\b")
_MYSQL = LazyRegex(r"(?i)\b(?:mysql|mariadb)\w*\b")
#: A netrc entry's head before its `password`: `machine host login bob` (or `default ...`).
_NETRC_HEAD = LazyRegex(
    r"(?:^|[^\w.-])(?:machine[ \t]+\S+|default)\s+(?:(?:login|account)[ \t]+\S+\s+){1,2}\Z"
)


def _command_start(text: str, at: int) -> int:
    """Where the command holding `at` starts: its line, or up to 5 lines above continued by
    a trailing backslash."""
    begin = text.rfind("\n", 0, at) + 1
    for _ in range(5):
        if begin < 2 or text[begin - 2] != "\\":
            break
        begin = text.rfind("\n", 0, begin - 1) + 1
    return begin


def _curl_password(m: re.Match[str]) -> bool:
    """`-u user:password` of a curl command (the regex starts at `-u`, so a file full of
    `curl` costs one scan; curl is looked for in the command before it)."""
    start = m.start()
    found = _CURL.search(m.string, _command_start(m.string, start), start) is not None
    return found and _command_password(m)


def _netrc_password(m: re.Match[str]) -> bool:
    """`password pw` right after a netrc entry's `machine host login bob` (same or previous
    lines); prose with the word password has no such head."""
    head = _NETRC_HEAD.search(m.string[max(0, m.start() - 300) : m.start()])
    return head is not None and _command_password(m)


#: Compiler options after `mysql_config`: `-pthread`, `-pedantic`, `-pipe`, `-pg`, `-pie`.
_CC_OPTION = LazyRegex(r"thread|edantic(?:-errors)?|ipe|g|ie|rint-\S*")


def _mysql_password(m: re.Match[str]) -> bool:
    """`-pPASSWORD` written on a mysql command line (not a compiler's `-p...` option)."""
    if _MYSQL.search(m.string, _command_start(m.string, m.start()), m.start()) is None:
        return False
    return _command_password(m) and _CC_OPTION.fullmatch(m.group("v")) is None


#: A secret's name inside an XML element or attribute (Maven settings.xml, .NET app.config).
_SECRET_NAME = (
    r"[\w:.-]{0,30}(?:passw|pwd|passphrase|secret|token|api[_.-]?key|access[_.-]?key)[\w.-]{0,30}"
)

# --------------------------------------------------------------------------- the table

#: Vendor token formats (gitleaks rule ids). Keyword gate → one regex → group `v`.
TOKEN_RULES: tuple[Rule, ...] = (
    _rule(
        "aws-access-token",
        "a3t akia asia abia acca",
        r"\b(?P<v>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\b",
        check=_not_example,
    ),
    # The AWS secret key rule of gitleaks' older default config ("AWS Secret Key").
    _rule(
        "aws-secret",
        "aws",
        r"(?i)aws[\w.-]{0,20}?secret" + _ASSIGN + r"(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
    ),
    _rule("github-pat", "ghp_ gho_ ghu_ ghs_ ghr_", r"\b(?P<v>gh[pousr]_[0-9a-zA-Z]{36})"),
    _rule("github-fine-grained-pat", "github_pat_", r"\b(?P<v>github_pat_\w{82})"),
    _rule(
        "gitlab-token",  # gitlab-pat(-routable), -deploy-, -runner-, -ptt, -rrt, -oauth-app ...
        "glpat- gldt- glrt- glptt- gloas- glcbt- glft- glimt- glagent- glsoat- glffct- gr1348941",
        r"(?P<v>(?:glpat|gldt|glrt|glft|glsoat|glffct)-[\w-]{20,300}(?:\.[0-9a-z]{9})?"
        r"|glimt-[\w-]{25}|glagent-[\w-]{50}|gloas-[\w-]{64}|glptt-[0-9a-f]{40}"
        r"|glcbt-[0-9a-zA-Z]{1,5}_[\w-]{20}|GR1348941[\w-]{20})",
    ),
    _rule(
        "slack-token",  # slack-bot-, -user-, -app-, -legacy-*, -config-* tokens
        "xoxb xoxp xoxe xoxa xoxr xoxo xoxs xapp",
        r"(?P<v>xoxb-[0-9]{8,14}-[0-9a-zA-Z-]{10,}|xox[pe](?:-[0-9]{10,13}){3}-[a-zA-Z0-9-]{28,34}"
        r"|xox[os]-\d+-\d+-\d+-[a-fA-F\d]+|xox[ar]-(?:\d-)?[0-9a-zA-Z]{8,48}"
        r"|xoxe\.xox[bp]-\d-[A-Za-z0-9]{163,166}|xoxe-\d-[A-Za-z0-9]{146}"
        r"|(?i:xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+))",
    ),
    _rule(
        "slack-webhook-url",
        "hooks.slack.com",
        r"(?P<v>(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56})",
    ),
    _rule(
        "stripe-access-token",
        "sk_test sk_live sk_prod rk_test rk_live rk_prod",
        r"\b(?P<v>(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99})" + _END,
    ),
    _rule("gcp-api-key", "aiza", r"\b(?P<v>AIza[\w-]{35})" + _END),
    # `\b` after the literal (a lookbehind), not before it: a pattern that starts with `SK`
    # is searched for at memchr speed; one that starts with `\b` is tried at every position,
    # 18 ms/MB on the kernel's files, whose `skb_...` words open this rule's gate.
    _rule("twilio-api-key", "sk", r"(?P<v>SK(?<=\bSK)[0-9a-fA-F]{32})\b"),
    _rule("sendgrid-api-token", "sg.", r"\b(?P<v>SG\.[a-zA-Z0-9=_\-.]{66})" + _END),
    _rule("npm-access-token", "npm_", r"\b(?P<v>npm_[a-zA-Z0-9]{36})" + _END),
    _rule(
        "pypi-upload-token", "pypi-ageichlwas5vcmc", r"(?P<v>pypi-AgEIcHlwaS5vcmc[\w-]{50,1000})"
    ),
    _rule("heroku-api-key-v2", "hrku-aa", r"\b(?P<v>HRKU-AA[0-9a-zA-Z_-]{58})" + _END),
    _rule(
        "heroku-api-key",
        "heroku",
        r"(?i)heroku" + _ASSIGN + r"(?P<v>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-"
        r"[0-9a-f]{12})" + _END,
    ),
    _rule(
        "shopify-token", "shpat_ shpca_ shppa_ shpss_", r"(?P<v>shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32})"
    ),
    _rule(
        "mailgun-private-api-token",
        "mailgun",
        r"(?i)mailgun" + _ASSIGN + r"(?P<v>key-[a-f0-9]{32})" + _END,
    ),
    _rule(
        "openai-api-key",
        "sk-",
        r"\b(?P<v>sk-(?:proj|svcacct|admin)-(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})T3BlbkFJ"
        r"(?:[A-Za-z0-9_-]{74}|[A-Za-z0-9_-]{58})|sk-[a-zA-Z0-9]{20}T3BlbkFJ[a-zA-Z0-9]{20})"
        + _END,
    ),
    _rule(
        "anthropic-api-key",
        "sk-ant-api03 sk-ant-admin01",
        r"\b(?P<v>sk-ant-(?:api03|admin01)-[a-zA-Z0-9_\-]{93}AA)" + _END,
    ),
    _rule(
        "huggingface-access-token",
        "hf_ api_org_",
        r"\b(?P<v>(?:hf_|api_org_)[a-zA-Z]{34})" + _END,
    ),
    _rule(
        "telegram-bot-api-token",
        "telegr",
        r"(?i)telegr" + _ASSIGN + r"(?P<v>[0-9]{5,16}:(?-i:A)[a-z0-9_\-]{34})" + _END,
    ),
    _rule(
        "discord-bot-token",  # detect-secrets DiscordBotTokenDetector
        "discord",
        r"(?P<v>[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}\.[a-zA-Z\d_-]{27})",
    ),
    _rule(
        "discord-api-token",
        "discord",
        r"(?i)discord" + _ASSIGN + r"(?P<v>[a-f0-9]{64})" + _END,
    ),
    _rule(
        "datadog-access-token",
        "datadog",
        r"(?i)datadog" + _ASSIGN + r"(?P<v>[a-z0-9]{40})" + _END,
    ),
    _rule(
        "azure-storage-key",  # detect-secrets AzureStorageKeyDetector
        "accountkey",
        r"(?i)AccountKey=(?P<v>[a-zA-Z0-9+/=]{88})",
    ),
    _rule("azure-ad-client-secret", "q~", r"(?P<v>[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})"),
    _rule(
        "digitalocean-token", "doo_v1_ dop_v1_ dor_v1_", r"\b(?P<v>do[opr]_v1_[a-f0-9]{64})" + _END
    ),
    _rule("databricks-api-token", "dapi", r"\b(?P<v>dapi[a-f0-9]{32}(?:-\d)?)" + _END),
    _rule("doppler-api-token", "dp.pt.", r"(?P<v>dp\.pt\.[a-zA-Z0-9]{43})"),
    _rule("linear-api-key", "lin_api_", r"(?P<v>lin_api_[a-zA-Z0-9]{40})"),
    _rule("postman-api-token", "pmak-", r"\b(?P<v>PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34})" + _END),
    _rule("pulumi-api-token", "pul-", r"\b(?P<v>pul-[a-f0-9]{40})" + _END),
    _rule("rubygems-api-token", "rubygems_", r"\b(?P<v>rubygems_[a-f0-9]{48})" + _END),
    _rule("sentry-user-token", "sntryu_", r"\b(?P<v>sntryu_[a-f0-9]{64})" + _END),
    _rule(
        "grafana-token",
        "glc_ glsa_",
        r"\b(?P<v>glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8})" + _END,
    ),
    _rule(
        "planetscale-token",
        "pscale_",
        r"\b(?P<v>pscale_(?:tkn|oauth|pw)_[\w=.-]{32,64})" + _END,
    ),
    _rule("vault-service-token", "hvs. hvb.", r"\b(?P<v>hvs\.[\w-]{90,120}|hvb\.[\w-]{138,300})"),
    _rule(
        "age-secret-key",
        "age-secret-key-1",
        r"(?P<v>AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})",
    ),
    _rule("perplexity-api-key", "pplx-", r"\b(?P<v>pplx-[a-zA-Z0-9]{48})\b"),
    _rule("sendinblue-api-token", "xkeysib-", r"\b(?P<v>xkeysib-[a-f0-9]{64}-[a-zA-Z0-9]{16})"),
    _rule("square-access-token", "sq0atp- sq0csp-", r"\b(?P<v>sq0(?:atp|csp)-[\w-]{22,60})"),
    _rule("notion-api-token", "ntn_", r"\b(?P<v>ntn_[0-9]{11}[A-Za-z0-9]{35})" + _END),
    _rule("artifactory-api-key", "akcp", r"\b(?P<v>AKCp[A-Za-z0-9]{69})\b"),
    _rule("dynatrace-api-token", "dt0c01.", r"(?P<v>dt0c01\.[a-zA-Z0-9]{24}\.[a-zA-Z0-9]{64})"),
    _rule("easypost-api-token", "ezak eztk", r"\b(?P<v>EZ[AT]K[a-zA-Z0-9]{54})\b"),
    _rule("flyio-access-token", "fo1_", r"\b(?P<v>fo1_[\w-]{43})" + _END),
    _rule(
        "jwt",
        "eyj",
        r"\b(?P<v>ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9/\\_-]{17,}\.(?:[a-zA-Z0-9/\\_-]{10,}={0,2})?)"
        + _END,
        entropy=3.0,
    ),
    # gitleaks curl-auth-header, without requiring curl: any Authorization header value.
    _rule(
        "authorization-header",
        "bearer authorization",
        r"(?i)(?:\bbearer[ \t]+|\bauthorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:basic|token)[ \t]+)"
        r"(?P<v>[\w=~@.+/-]{12,})",
        entropy=3.0,
        check=_not_a_word,
    ),
    _rule(
        # Apache MD5 and bcrypt; crypt(3) $1$ MD5, $5$ SHA-256, $6$ SHA-512 (htpasswd -2/-5,
        # /etc/shadow); {SHA}. Gated by `$` alone: one early hit in most files, where the
        # keywords `$1$`, `$5$`... each cost a scan of the whole text when absent.
        "htpasswd",
        "$",
        r"(?P<v>\$(?:(?:apr1|2[aby])\$[./0-9A-Za-z$]{20,}"
        r"|[156]\$(?:rounds=\d{1,9}\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{22,86}))",
    ),
    _rule("htpasswd", "{sha}", r"(?P<v>\{SHA\}[A-Za-z0-9+/]{27}=)"),
    # Maven settings.xml `<password>pw</password>`, `<passphrase>`, `<apiToken>` elements.
    _rule(
        "xml-password",
        "</",  # one scan (7 keywords cost 12 ms/MB); the regex runs on ~6 % of files
        r"(?i)<(?P<name>"
        + _SECRET_NAME
        + r")>[ \t]*(?P<v>[^<>\s][^<>\n]{0,200}?)[ \t]*</(?P=name)>",
        check=_named_value,
    ),
    # .NET app.config / web.config: `<add key="ApiKey" value="..."/>`.
    _rule(
        "xml-key-value",
        "value=",
        r"(?i)\bkey[ \t]*=[ \t]*[\"'](?P<name>" + _SECRET_NAME + r")[\"'][ \t]+value[ \t]*=[ \t]*"
        r"[\"'](?P<v>[^\"'\s][^\"'\n]{0,200}?)[\"']",
        check=_named_value,
    ),
    # gitleaks curl-auth-user: `curl -u user:password`, `--user=user:password` (any order of
    # options, up to 5 continued lines).
    _rule(
        "curl-auth-user",
        "curl",
        r"[ \t](?:-u|--user)(?:=|[ \t]{0,5})[\"']?[^\s:\"'`]{0,100}:(?P<v>[^\s\"'`]{3,200})",
        check=_curl_password,
    ),
    # mysql, mysqldump, mysqladmin, mariadb: `-pPASSWORD` (no space) or `--password=PASSWORD`.
    _rule(
        "mysql-password",
        "mysql mariadb",
        r"[ \t](?:-p|--password=)[\"']?(?P<v>[^\s\"'-][^\s\"']{2,200})",
        check=_mysql_password,
    ),
    # netrc: `machine host login bob password pw` (one line or one token a line).
    _rule(
        "netrc-password",
        "machine",
        r"password[ \t]+[\"']?(?P<v>[^\s`\"']+)",  # the head (checked) ends in a space
        check=_netrc_password,
    ),
    # PostgreSQL password file line: hostname:port:database:username:password.
    _rule(
        "pgpass",
        ":",
        r"(?m):(?:\d{2,5}|\*):[\w.*-]+:[\w.*@-]+:(?P<v>[^\s:][^\s]{5,})$",
        check=_pgpass_host,
    ),
)

#: Tokens are at least this long; shorter words are never checked against the prefixes.
MIN_TOKEN = 12
_CONTEXT_TABLE = tuple(r for r in TOKEN_RULES if not r.prefix)
_BY_PREFIX: dict[str, list[Rule]] = {}
for _r in TOKEN_RULES:
    for _k in _r.keywords if _r.prefix else ():
        _BY_PREFIX.setdefault(_k, []).append(_r)
_PREFIXES = tuple(_BY_PREFIX)
_PREFIX_BYTES = tuple(p.encode() for p in _PREFIXES)
#: bytes.translate table (runs at memory speed, unlike str.translate): ASCII letters lowercased,
#: token characters kept, other ASCII made a space; non-ASCII bytes stay and lengthen words.
_WORD_BYTES = bytes(
    ord(chr(i).lower()) if chr(i).isalnum() or chr(i) in "_.-~" or i > 127 else 32
    for i in range(256)
)


#: gitleaks generic-api-key: a keyword in a name, an assignment, a value of entropy >= 3.5.
#: Matched on the lowercased text, anchored at each keyword found by `str.find` (a regex
#: alternation of the keywords scans ~5x slower); the value is read from the original text.
GENERIC_ID = "generic-api-key"
GENERIC_ENTROPY = 3.5
GENERIC_KEYWORDS = ("access", "api", "auth", "key", "cred", "passw", "pwd", "secret", "token")
_GENERIC_AT = LazyRegex(
    r"[a-z]{0,10}(?P<tail>[\w.-]{0,20})[\s'\"]{0,3}(?:=|:{1,3}=|:|=>|\?=)[`'\"\s=]{0,5}"
    r"(?P<v>[^" + _STOP + r"]{10,150})"
)
#: gitleaks curl-auth-user / detect-secrets BasicAuthDetector: `scheme://user:password@host`,
#: matched right after each `://`.
_URL_CREDENTIALS = LazyRegex(r"[^\s:/@'\"`]{0,100}:(?P<v>[^\s/@'\"`$%{<][^\s/@'\"`]{2,200})@")
#: gitleaks curl-auth-user allowlist: documentation passwords.
_URL_ALLOWED = LazyRegex(r"(?i)change(?:it|me)|pass(?:word)?|pwd|test|token|\*+|x+")
#: gitleaks' generic-api-key allowlist, reduced to what applies to a name: identifiers that
#: contain a keyword but name something that is not a secret.
_ALLOWED_NAME = LazyRegex(
    r"(?i)(?:access(?:ibility|or)|access[_.-]?id|random[_.-]?access|api[_.-]?(?:id|name|version)"
    r"|rapid|capital|author|credentials?[_.-]?id|withCredentials|(?:bucket|foreign|hot|idx|natural"
    r"|primary|pub(?:lic)?|schema|sequence)[_.-]?key|turkey|key[_.-]?(?:alias|board|code|frame|id"
    r"|length|mesh|name|pair|press(?:ed)?|ring|selector|signature|size|stone|storetype|word|up"
    r"|down|left|right)|keying|monkey|secret[_.-]?(?:length|name|size)|csrf[_.-]?token"
    r"|(?:api|credentials|token)[_.-]?(?:endpoint|ur[il])|public[_.-]?token|(?:key|token)[_.-]?file"
    r"|tokeni[sz]er|max[_.-]?tokens?|tokens?[_.-]?(?:count|type|id|len|length|limit))"
)
_NAME_CHARS = LazyRegex(r"[\w.-]{0,50}$")
#: A value made of words (`settings.API_KEY`, `get_token_from_env`): code, not a secret.
_WORDY_PART = LazyRegex(r"[A-Za-z][a-z]*(?:[A-Z][a-z]+)*\d{0,4}|[A-Z]+\d{0,4}|\d{1,4}")
#: gitleaks' global allowlist: template and format placeholders, booleans, null.
_TEMPLATE = LazyRegex(
    r"^(?:\$(?:\d+|[A-Z_]+|[a-z_]+)|%(?:[A-Z_]+|[a-z_]+)%|%[+\-# 0]?[a-zA-Z]|@(?:[A-Z_]+|[a-z_]+)@"
    r"|(?i:true|false|null|none))$"
)


def _wordy(value: str) -> bool:
    parts = [p for p in re.split(r"[_.\-/:]", value) if p]
    return all(_WORDY_PART.fullmatch(p) for p in parts)


def _generic_ok(text: str, at: int, name_end: int, value: str) -> bool:
    """The allowlists of gitleaks' generic rule, plus code-shaped values."""
    head = _NAME_CHARS.search(text, max(0, at - 50), at)
    name = (head.group(0) if head else "") + text[at:name_end]
    if _ALLOWED_NAME.search(name) or _TEMPLATE.search(value) or "://" in value:
        return False
    letters = re.fullmatch(r"[a-zA-Z_.-]+", value) is not None
    if (letters and (value.islower() or value.isupper())) or _wordy(value) or len(set(value)) < 6:
        return False
    return shannon_entropy(value) >= GENERIC_ENTROPY


def _generic_spans(text: str, seen: _Seen) -> list[tuple[int, int, str]]:
    spans = []
    words = tuple(k for k in GENERIC_KEYWORDS if seen.has(k))
    for at in sorted(set(_positions(seen.lower, words))):
        m = _GENERIC_AT.match(seen.lower, at)
        if m is None:
            continue
        start, end = m.span("v")
        if _generic_ok(text, at, m.end("tail"), text[start:end]):
            spans.append((start, end, GENERIC_ID))
    return spans


def _positions(lower: str, words: tuple[str, ...]) -> list[int]:
    """Start of every occurrence of each word (str.find runs at memchr speed)."""
    found = []
    for word in words:
        at = lower.find(word)
        while at != -1:
            found.append(at)
            at = lower.find(word, at + 1)
    return found


def _url_spans(text: str) -> list[tuple[int, int, str]]:
    spans = []
    for at in _positions(text, ("://",)):
        m = _URL_CREDENTIALS.match(text, at + 3)
        if m and not _URL_ALLOWED.fullmatch(m.group("v")) and not m.group("v").startswith("«"):
            spans.append((*m.span("v"), "url-password"))
    return spans


# --------------------------------------------------------------------------- private keys

_KEY_BEGIN = LazyRegex(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = LazyRegex(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
#: Body segments of a key: runs between newlines (or between escaped `\n` in a JSON string).
_KEY_SEGMENT = LazyRegex(r"(?<!\\)(?:(?!\\n)[^\n])+")
#: What a key body line holds once quotes are stripped: base64, or a PEM header line.
_KEY_LINE = LazyRegex(r"[A-Za-z0-9+/=]{4,}|(?:Proc-Type|DEK-Info|Version|Comment):.*")


def _key_spans(text: str) -> list[tuple[int, int, str]]:
    """gitleaks private-key: the base64 body lines after each BEGIN marker, up to its END.

    The body ends at the END marker or at the first line that is not key material, so code
    that merely mentions a BEGIN marker (a PEM parser) loses nothing.
    """
    spans: list[tuple[int, int, str]] = []
    pos = 0
    for begin in _KEY_BEGIN.finditer(text):
        if begin.start() >= pos:
            pos = _key_body(text, begin.end(), spans)
    return spans


def _key_body(text: str, start: int, spans: list[tuple[int, int, str]]) -> int:
    """Add the body's spans to `spans`; return where the body ends."""
    for seg in _KEY_SEGMENT.finditer(text, start):
        body = seg.group(0)
        if _KEY_END.search(body):
            return seg.end()
        core = _key_core(body)
        if not core:
            continue
        if not _KEY_LINE.fullmatch(core):
            return seg.start()
        at = seg.start() + body.find(core)
        spans.append((at, at + len(core), "private-key"))
    return len(text)


def _key_core(line: str) -> str:
    """A body line without indentation, quotes, concatenation and trailing escaped newlines."""
    core = line.strip()
    while core.endswith("\\n"):
        core = core[:-2]
    return core.strip(" \t\r\"',+;")


# --------------------------------------------------------------------------- keyword gates

_KEY_KEYWORD = "-----begin"


#: Every keyword a gate asks about (ASCII, lowercase): `_GATE` looks for all of them at once.
_GATE_KEYWORDS = tuple(
    dict.fromkeys(
        (_KEY_KEYWORD, *GENERIC_KEYWORDS, *(k for r in _CONTEXT_TABLE for k in r.keywords))
    )
)
_GATE = KeywordGate([k.encode() for k in _GATE_KEYWORDS], _PREFIX_BYTES, MIN_TOKEN, _WORD_BYTES)
_GATED = frozenset(_GATE_KEYWORDS)
_PREFIX_OF = dict(zip(_PREFIX_BYTES, _PREFIXES, strict=True))


@dataclass(frozen=True)
class _Seen:
    """A text as the keyword gates read it: lowered, and which gate keywords and token prefixes
    occur in it (one pass of `_GATE` over its bytes); `has` answers `keyword in lower`."""

    lower: str
    found: frozenset[bytes]
    """The gate keywords (`_GATE_KEYWORDS`) that occur in `lower`."""
    heads: frozenset[bytes]
    """Token prefixes that start a word of MIN_TOKEN bytes or more."""

    @classmethod
    def of(cls, text: str) -> _Seen:
        lower = text.lower()
        if len(lower) != len(text):  # a few non-ASCII letters change length when lowered
            lower = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
        return cls(lower, *_GATE.scan(lower.encode("utf-8", "replace")))

    def has(self, keyword: str) -> bool:
        """`keyword in lower` (ASCII keywords: the same in the UTF-8 bytes the gate read)."""
        if keyword in _GATED:
            return keyword.encode() in self.found
        return keyword in self.lower


# --------------------------------------------------------------------------- redaction


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, rule id) of every secret value, sorted, not overlapping."""
    seen = _Seen.of(text)
    spans = _key_spans(text) if seen.has(_KEY_KEYWORD) else []
    for rule in _candidate_rules(seen):
        spans += _rule_spans(rule, text)
    spans += _generic_spans(text, seen)
    if "://" in text:
        spans += _url_spans(text)
    return _disjoint(spans)


def _candidate_rules(seen: _Seen) -> list[Rule]:
    """Rules whose keywords occur: context keywords anywhere, token prefixes at a word start."""
    rules = [r for r in _CONTEXT_TABLE if any(seen.has(k) for k in r.keywords)]
    heads = sorted(_PREFIX_OF[b] for b in seen.heads)
    found = {id(r): r for p in heads for r in _BY_PREFIX[p]}
    return rules + list(found.values())


def _rule_spans(rule: Rule, text: str) -> list[tuple[int, int, str]]:
    out = []
    for m in rule.regex.finditer(text):
        if m.group("v").startswith("«") or (rule.check is not None and not rule.check(m)):
            continue  # a placeholder already (redacting twice must change nothing)
        if rule.entropy and shannon_entropy(m.group("v")) < rule.entropy:
            continue
        out.append((m.start("v"), m.end("v"), rule.id))
    return out


def _disjoint(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Sorted spans with overlaps merged (the earlier, then longer, span names the rule)."""
    out: list[tuple[int, int, str]] = []
    for start, end, rule in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and start < out[-1][1]:
            last = out[-1]
            out[-1] = (last[0], max(last[1], end), last[2])
        else:
            out.append((start, end, rule))
    return out


def redact(text: str) -> tuple[str, int]:
    """The text with every secret value replaced by `«redacted:<rule>»`, and how many."""
    spans = find_secrets(text)
    if not spans:
        return text, 0
    parts: list[str] = []
    pos = 0
    for start, end, rule in spans:
        parts += [text[pos:start], _placeholder(text[start:end], rule)]
        pos = end
    parts.append(text[pos:])
    return "".join(parts), len(spans)


def _placeholder(value: str, rule: str) -> str:
    """One placeholder per line the value spans, so line numbers never shift."""
    return "\n".join(PLACEHOLDER.format(rule) for _ in range(value.count("\n") + 1))


def redact_text(text: str) -> str:
    """`redact` without the count."""
    return redact(text)[0]
