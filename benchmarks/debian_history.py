"""A git history from a Debian source package's patch series, for `codeask eval` on real code.

    python -m benchmarks.debian_history PACKAGE --out DIR [--suite bookworm]
    python -m benchmarks.debian_history --from-dir SRC --out DIR
    python -m benchmarks.debian_history PACKAGE --series-only

`codeask eval` asks a repository's recent commits; the repositories on this machine come without
their history. A Debian "3.0 (quilt)" source package is a real history in miniature: the upstream
orig tarball plus a series of patches, each with its own message (DEP-3 `Description:`/`Subject:`,
or a `git format-patch` mail), author and date. This builds a repository whose first commit is
the orig tree and whose next commits are the patches in series order. A patch that applies
neither with `git apply` nor with `patch -F0` (what dpkg-source uses) is skipped and reported.

The newest version in SUITE, SUITE-updates or SUITE-security (Sources indexes of
deb.debian.org) is fetched with httpx, sha256-checked, and cached in ~/.cache/codeask-debian/.
`--from-dir` takes local files instead (a .dsc, or just the .orig.tar.* and .debian.tar.*).
The debian/ directory itself is not committed (the patches in it would be the answers'
own text). What was applied is written to DIR/.git/codeask-debian-history.json.
"""

from __future__ import annotations

import argparse
import email.errors
import email.header
import email.utils
import functools
import itertools
import lzma
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import httpx
import msgspec

from codeask.core.embedding.base import file_sha256

CACHE = Path.home() / ".cache" / "codeask-debian"
MIRROR = "http://deb.debian.org/debian"
SECURITY = "http://deb.debian.org/debian-security"
#: A Sources index younger than this is reused from the cache.
INDEX_MAX_AGE_S = 24 * 3600
MANIFEST = "codeask-debian-history.json"

#: DEP-3 fields (and the git-format-patch mail headers) a patch header may carry; a line
#: `Name: value` in a header is a field only if Name is one of these (or Bug-*, X-*), so a
#: description line such as `Note: ...` stays text.
_FIELDS = {
    "description",
    "subject",
    "origin",
    "bug",
    "forwarded",
    "author",
    "from",
    "reviewed-by",
    "acked-by",
    "signed-off-by",
    "last-update",
    "applied-upstream",
    "date",
    "gbp-pq",
    "patch-name",
}
#: Fields that stay in a mail's body as git trailers (the header is the mail headers there).
_TRAILERS = {"signed-off-by", "reviewed-by", "acked-by", "from", "date", "subject"}
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):[ \t]*(.*)$")
_MBOX_FROM = re.compile(r"^From [0-9a-f]{7,40} ")
_PATCH_TAG = re.compile(r"^\s*(?:\[[^\]]*PATCH[^\]]*\]\s*)+", re.IGNORECASE)
_TARBALL = re.compile(r"\.tar\.(?:gz|xz|bz2)$")
_ORIG_COMPONENT = re.compile(r"\.orig-([A-Za-z0-9][A-Za-z0-9-]*)\.tar\.(?:gz|xz|bz2)$")
_CHANGELOG_TRAILER = re.compile(r"^ -- (.+?) <([^>]*)>  (.+)$", re.M)


class SourceFile(msgspec.Struct, frozen=True):
    """One file of a source package, as its Sources entry or .dsc lists it."""

    name: str
    sha256: str
    size: int


class SourcePackage(msgspec.Struct, frozen=True):
    """A source package version and where its files are."""

    package: str
    version: str
    files: tuple[SourceFile, ...]
    base_url: str = ""
    """The directory its files are downloaded from; empty for local files."""
    format: str = "3.0 (quilt)"
    maintainer: str = ""
    homepage: str = ""


class PatchResult(msgspec.Struct):
    """What became of one patch of the series."""

    name: str
    applied: bool
    how: str = ""
    """`git apply` or `patch`; the reason it was skipped otherwise."""
    commit: str = ""
    subject: str = ""
    author: str = ""
    date: str = ""
    files: list[str] = msgspec.field(default_factory=list)
    described: bool = True
    """False when the header had no description and the patch's name became the subject."""


class Manifest(msgspec.Struct):
    """What the built repository holds: written into its .git for the report."""

    package: str
    version: str
    homepage: str
    base_commit: str
    patches: list[PatchResult]


@dataclass
class PatchMeta:
    """A patch's message and provenance, from its header."""

    subject: str
    body: str
    author: str | None
    date: str | None
    described: bool

    def message(self) -> str:
        """The commit message: subject, blank line, body."""
        return f"{self.subject}\n\n{self.body}\n" if self.body else f"{self.subject}\n"


# ---------------------------------------------------------------- Debian versions and indexes


def _order(c: str) -> int:
    if c == "~":
        return -1
    if c.isalpha():
        return ord(c)
    return ord(c) + 256 if c else 0


def _compare_part(a: str, b: str) -> int:
    """dpkg's comparison of an upstream version or revision: non-digits, then digits."""
    while a or b:
        na = re.match(r"\D*", a).group(0)  # type: ignore[union-attr]
        nb = re.match(r"\D*", b).group(0)  # type: ignore[union-attr]
        for i in range(max(len(na), len(nb))):
            ca = _order(na[i]) if i < len(na) else 0
            cb = _order(nb[i]) if i < len(nb) else 0
            if ca != cb:
                return -1 if ca < cb else 1
        a, b = a[len(na) :], b[len(nb) :]
        da = re.match(r"\d*", a).group(0)  # type: ignore[union-attr]
        db = re.match(r"\d*", b).group(0)  # type: ignore[union-attr]
        if int(da or 0) != int(db or 0):
            return -1 if int(da or 0) < int(db or 0) else 1
        a, b = a[len(da) :], b[len(db) :]
    return 0


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as Debian version `a` sorts before, equal to or after `b` (epoch:upstream-rev)."""

    def split(v: str) -> tuple[int, str, str]:
        epoch, _, rest = v.rpartition(":") if ":" in v else ("0", "", v)
        upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "")
        return int(epoch or 0), upstream, revision

    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _compare_part(ua, ub) or _compare_part(ra, rb)


def _paragraphs(text: str) -> Iterator[dict[str, str]]:
    """deb822 paragraphs as field → value (continuation lines joined with newlines)."""
    for block in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for line in block.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += "\n" + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
        if fields:
            yield fields


def _source_from(fields: dict[str, str], base_url: str) -> SourcePackage:
    files = []
    for line in fields.get("checksums-sha256", "").splitlines():
        parts = line.split()
        if len(parts) == 3:
            files.append(SourceFile(name=parts[2], sha256=parts[0], size=int(parts[1])))
    return SourcePackage(
        package=fields.get("package") or fields.get("source", ""),
        version=fields["version"],
        files=tuple(files),
        base_url=base_url,
        format=fields.get("format", ""),
        maintainer=fields.get("maintainer", ""),
        homepage=fields.get("homepage", ""),
    )


def _indexes(suite: str) -> list[tuple[str, str]]:
    """(Sources.xz URL, archive root) of the suite, its updates and its security archive."""
    return [
        (f"{MIRROR}/dists/{suite}/main/source/Sources.xz", MIRROR),
        (f"{MIRROR}/dists/{suite}-updates/main/source/Sources.xz", MIRROR),
        (f"{SECURITY}/dists/{suite}-security/main/source/Sources.xz", SECURITY),
    ]


def _cached_index(client: httpx.Client, url: str) -> str:
    """A Sources index's text, downloaded at most once a day (it changes with point releases)."""
    name = re.sub(r"[^A-Za-z0-9.-]+", "_", url.split("://", 1)[1])
    path = CACHE / "indexes" / name
    if not path.exists() or time.time() - path.stat().st_mtime > INDEX_MAX_AGE_S:
        response = client.get(url)
        if response.status_code == 404:
            return ""
        response.raise_for_status()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(response.content)
    return lzma.decompress(path.read_bytes()).decode("utf-8", "replace")


def sources(client: httpx.Client, package: str, suite: str) -> list[SourcePackage]:
    """Every version of `package` in the suite's indexes (point release, updates, security),
    newest first."""
    found: list[SourcePackage] = []
    for url, root in _indexes(suite):
        text = _cached_index(client, url)
        needle = f"Package: {package}\n"
        for block in text.split("\n\n"):
            if block.startswith(needle):
                for fields in _paragraphs(block):
                    found.append(_source_from(fields, f"{root}/{fields['directory']}"))
    if not found:
        raise SystemExit(f"{package}: no source package of that name in {suite}")

    def newer_first(a: SourcePackage, b: SourcePackage) -> int:
        return compare_versions(b.version, a.version)

    return sorted(found, key=functools.cmp_to_key(newer_first))


def fetch_newest(
    client: httpx.Client, candidates: list[SourcePackage], *, series_only: bool = False
) -> tuple[SourcePackage, dict[str, Path]]:
    """The newest version whose files the mirror serves (an index can name a file the mirror
    does not have yet, or no longer): its tarballs, downloaded or from the cache."""
    for source in candidates:
        wanted = [
            f
            for f in source.files
            if _TARBALL.search(f.name) and (".debian.tar." in f.name or not series_only)
        ]
        try:
            return source, {f.name: fetch(client, source, f) for f in wanted}
        except httpx.HTTPStatusError as error:
            print(
                f"{source.package} {source.version}: {error.request.url} answered "
                f"{error.response.status_code}; trying an older version",
                file=sys.stderr,
            )
    raise SystemExit(f"{candidates[0].package}: no version's files could be downloaded")


def fetch(client: httpx.Client, source: SourcePackage, wanted: SourceFile) -> Path:
    """The file from the cache, or downloaded into it; its sha256 must match the index."""
    path = CACHE / "pool" / wanted.name
    if path.exists() and file_sha256(path) == wanted.sha256:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    urls = [f"{base}/{wanted.name}" for base in _mirrors_of(source.base_url)]
    for i, url in enumerate(urls):
        with client.stream("GET", url) as response:
            if response.status_code == 404 and i + 1 < len(urls):
                continue
            response.raise_for_status()
            with partial.open("wb") as out:
                for block in response.iter_bytes():
                    out.write(block)
            break
    got = file_sha256(partial)
    if got != wanted.sha256:
        partial.unlink()
        raise SystemExit(f"{wanted.name}: sha256 {got} is not the index's {wanted.sha256}")
    partial.replace(path)
    return path


def _mirrors_of(base_url: str) -> list[str]:
    """The directory, then its twin in the other archive: a security upload's orig tarball is
    usually the one in the main archive (the sha256 check makes any copy safe to take)."""
    main_pool, security_pool = f"{MIRROR}/pool/", f"{SECURITY}/pool/updates/"
    if base_url.startswith(security_pool):
        return [base_url, main_pool + base_url[len(security_pool) :]]
    if base_url.startswith(main_pool):
        return [base_url, security_pool + base_url[len(main_pool) :]]
    return [base_url]


def local_source(folder: Path) -> tuple[SourcePackage, dict[str, Path]]:
    """A source package from local files: the .dsc's list (sha256 checked) when there is one,
    else every .orig.tar.* and .debian.tar.* in the folder."""
    dscs = sorted(folder.glob("*.dsc"))
    if dscs:
        text = dscs[0].read_text(encoding="utf-8", errors="replace")
        if text.startswith("-----BEGIN PGP SIGNED MESSAGE-----"):
            text = text.split("\n\n", 1)[1].split("\n-----BEGIN PGP SIGNATURE-----", 1)[0]
        source = _source_from(next(_paragraphs(text)), "")
        paths = {f.name: folder / f.name for f in source.files}
        for f in source.files:
            if file_sha256(paths[f.name]) != f.sha256:
                raise SystemExit(f"{f.name}: sha256 does not match {dscs[0].name}")
        return source, paths
    found = sorted(p for p in folder.iterdir() if _TARBALL.search(p.name))
    debian = [p for p in found if ".debian.tar." in p.name]
    if not debian or not any(".orig" in p.name for p in found):
        raise SystemExit(f"{folder}: needs a .dsc, or an .orig.tar.* and a .debian.tar.*")
    package, _, rest = debian[0].name.partition("_")
    version = rest.split(".debian.tar.", 1)[0]
    files = tuple(SourceFile(name=p.name, sha256="", size=p.stat().st_size) for p in found)
    return SourcePackage(package=package, version=version, files=files), {p.name: p for p in found}


# ---------------------------------------------------------------- unpacking


def unpack(tarball: Path, dest: Path, *, strip_top: bool = True) -> None:
    """Extract a tarball into `dest`, its single top directory stripped (as dpkg-source does
    for orig tarballs; `strip_top=False` for the debian tarball, whose top is debian/); members
    the `data` filter refuses (absolute or escaping links, devices) are left out."""
    with tarfile.open(tarball, "r:*") as tar:
        members = tar.getmembers()
        tops = {m.name.lstrip("./").split("/", 1)[0] for m in members if m.name.strip("./")}
        strip = ""
        if strip_top and len(tops) == 1:
            top = next(iter(tops))
            if any(m.isdir() and m.name.strip("./") == top for m in members) or all(
                "/" in m.name.lstrip("./") for m in members if m.name.strip("./") != top
            ):
                strip = top + "/"

        def rename(name: str) -> str | None:
            name = name.lstrip("./") if name.startswith("./") else name
            if strip:
                if not name.startswith(strip):
                    return None
                name = name[len(strip) :]
            return name or None

        def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
            name = rename(member.name)
            if name is None:
                return None
            changes: dict[str, str] = {"name": name}
            if member.islnk():
                link = rename(member.linkname)
                if link is None:
                    return None
                changes["linkname"] = link
            try:
                return tarfile.data_filter(member.replace(**changes, deep=False), path)  # type: ignore[arg-type]
            except tarfile.FilterError as error:
                print(f"  left out of {tarball.name}: {member.name} ({error})", file=sys.stderr)
                return None

        tar.extractall(dest, filter=keep)


# ---------------------------------------------------------------- patches


def read_series(patches: Path) -> list[tuple[str, int]]:
    """(patch file, -p level) in series order; comments and blank lines dropped."""
    series = patches / "series"
    if not series.exists():
        return []
    entries = []
    for line in series.read_text(encoding="utf-8", errors="replace").splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        level = 1
        for option in words[1:]:
            if re.fullmatch(r"-p\d+", option):
                level = int(option[2:])
        entries.append((words[0], level))
    return entries


def _header_lines(text: str) -> list[str]:
    """The lines before the diff: up to a `---` line or the first diff header."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            line.rstrip() == "---"
            or line.startswith(("diff ", "Index: ", "=== "))
            or (line.startswith("--- ") and following.startswith("+++ "))
            or (line.startswith("*** ") and following.startswith("--- "))
        ):
            return lines[:i]
    return lines


def _decode(value: str) -> str:
    """A mail header value with RFC 2047 words (`=?UTF-8?q?...?=`) decoded."""
    try:
        return str(email.header.make_header(email.header.decode_header(value)))
    except (UnicodeDecodeError, LookupError, email.errors.HeaderParseError):
        return value


def _is_mail(lines: list[str]) -> bool:
    """Whether the header is a mail (`git format-patch`, `gbp pq`): a first block of headers
    with a Subject: and a From: or Date: (folded lines joined by a space; DEP-3 fields may sit
    among them), the body after a blank line."""
    block = list(itertools.takewhile(lambda line: line.strip() != "", lines))
    names = {m.group(1).lower() for line in block if (m := _FIELD.match(line))}
    return (
        bool(block)
        and "subject" in names
        and bool(names & {"from", "date"})
        and all(_FIELD.match(line) or line[:1] in (" ", "\t") for line in block)
    )


def _is_field(name: str) -> bool:
    lower = name.lower()
    return lower in _FIELDS or lower.startswith(("bug-", "x-"))


def parse_header(text: str, name: str) -> PatchMeta:
    """The message, author and date a patch's header gives (DEP-3 fields, or a git-format-patch
    mail whose body follows the first blank line); the patch's name is the subject when there is
    no Description/Subject, so every commit still says which patch it is."""
    lines = _header_lines(text)
    fields: dict[str, list[str]] = {}
    free: list[str] = []
    # A note before an embedded mail ("Backport of" + a format-patch) goes after its body.
    preamble: list[str] = []
    mbox = next((i for i, line in enumerate(lines) if _MBOX_FROM.match(line)), None)
    if mbox is not None:
        preamble, lines = lines[:mbox], lines[mbox + 1 :]
    # A combined backport stacks several mails' headers: each further one adds its message.
    stacked: list[str] = []
    more = next((i for i, line in enumerate(lines) if _MBOX_FROM.match(line)), None)
    if more is not None:
        extra = parse_header("\n".join(lines[more:]), name)
        stacked, lines = [extra.message().strip()], lines[:more]
    in_headers = mail = _is_mail(lines)
    current: str | None = None
    for line in lines:
        if in_headers:
            if not line.strip():
                in_headers, current = False, None
                continue
            match = _FIELD.match(line)
            if match:
                current = match.group(1).lower()
                fields.setdefault(current, []).append(match.group(2))
            elif current and line[:1] in (" ", "\t"):
                fields[current][-1] += " " + line.strip()
            continue
        match = _FIELD.match(line)
        if (
            match
            and _is_field(match.group(1))
            and not (mail and match.group(1).lower() in _TRAILERS)
        ):
            current = match.group(1).lower()
            fields.setdefault(current, []).append(match.group(2))
        elif current and line[:1] in (" ", "\t") and line.strip():
            # A DEP-3 continuation line; " ." is an empty line of a long description.
            fields[current][-1] += "\n" + ("" if line.strip() == "." else line[1:].rstrip())
        else:
            current = None
            free.append(line.rstrip())
    description = (fields.get("description") or fields.get("subject") or [""])[0]
    first, _, long_text = description.partition("\n")
    subject = _PATCH_TAG.sub("", _decode(first)).strip()
    body_parts = [long_text.strip("\n"), "\n".join(free).strip("\n")]
    body_parts += stacked
    if any(line.strip() for line in preamble):
        body_parts.append("\n".join(preamble).strip("\n"))
    described = bool(subject)
    if not subject:
        # No Description: the free text's first line is the subject, as git would read it.
        rest = body_parts[1].lstrip("\n").splitlines()
        if rest:
            subject, body_parts[1] = rest[0].strip(), "\n".join(rest[1:]).strip("\n")
            described = bool(subject)
    if not subject:
        subject = Path(name).stem.replace("_", " ").replace("-", " ")
    body = "\n\n".join(p for p in body_parts if p.strip())
    body = re.sub(r"\n{3,}", "\n\n", body).strip()
    authors = fields.get("author") or fields.get("from") or [""]
    author = _decode(authors[0].strip().splitlines()[0]) if authors[0].strip() else None
    dates = fields.get("date") or fields.get("last-update") or [""]
    return PatchMeta(subject, body, author, _git_date(dates[0]), described)


def _git_date(value: str | None) -> str | None:
    """An RFC 2822 or ISO date as git's ISO 8601 form; None when it is neither."""
    if not value:
        return None
    value = value.strip().splitlines()[0].strip()
    try:
        return email.utils.parsedate_to_datetime(value).isoformat()
    except (TypeError, ValueError, IndexError):
        pass
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).isoformat()


def _ident(value: str | None) -> tuple[str, str] | None:
    """(name, email) from `Name <email>`; the first of several authors."""
    if not value:
        return None
    first = re.split(r">\s*,\s*", value, maxsplit=1)[0]
    if "<" in first and not first.rstrip().endswith(">"):
        first += ">"
    name, address = email.utils.parseaddr(first)
    name = name or (first if "@" not in first else address.split("@")[0])
    name = name.strip().strip('"')
    return (name, address) if name else None


# ---------------------------------------------------------------- the repository


class Git:
    """The git CLI in one repository, with no user or system configuration leaking in."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            **os.environ,
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        check: bool = True,
        stdin: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-c", "core.autocrlf=false", "-c", "commit.gpgsign=false", *args],
            cwd=self.root,
            env={**self.env, **(env or {})},
            input=stdin,
            capture_output=True,
            text=True,
            check=check,
        )

    def commit(
        self, message: str, author: tuple[str, str], date: str, committer: tuple[str, str, str]
    ) -> str:
        """Stage everything (ignored files too: the tarball is the tree) and commit it."""
        self("add", "-A", "-f", ".")
        env = {
            "GIT_AUTHOR_NAME": author[0],
            "GIT_AUTHOR_EMAIL": author[1],
            "GIT_AUTHOR_DATE": date,
            "GIT_COMMITTER_NAME": committer[0],
            "GIT_COMMITTER_EMAIL": committer[1],
            "GIT_COMMITTER_DATE": committer[2],
        }
        self(
            "commit",
            "-q",
            "--no-verify",
            "--allow-empty",
            "--cleanup=whitespace",
            "-F",
            "-",
            env=env,
            stdin=message,
        )
        return self("rev-parse", "HEAD").stdout.strip()

    def changed_files(self) -> list[str]:
        """The files HEAD changed, against its parent."""
        out = self("diff-tree", "--no-commit-id", "--name-only", "-r", "HEAD").stdout
        return out.splitlines()


def apply_patch(git: Git, patch: Path, level: int) -> tuple[bool, str]:
    """Apply with `git apply`, else `patch -F0` (a dry run first, so a failure leaves nothing
    behind); (applied, how or why not)."""
    tried = git("apply", f"-p{level}", "--whitespace=nowarn", str(patch), check=False)
    if tried.returncode == 0:
        return True, "git apply"
    why_git = (tried.stderr.strip().splitlines() or ["failed"])[0]
    command = ["patch", f"-p{level}", "--batch", "--forward", "--fuzz=0", "-E", "-i", str(patch)]
    dry = subprocess.run(
        [*command, "--dry-run"], cwd=git.root, capture_output=True, text=True, check=False
    )
    if dry.returncode != 0:
        lines = [x for x in (dry.stdout + dry.stderr).splitlines() if "FAILED" in x or "can't" in x]
        why_patch = (lines or (dry.stdout + dry.stderr).strip().splitlines() or ["failed"])[0]
        return False, f"git apply: {why_git}; patch: {why_patch}"
    subprocess.run(
        [*command, "--no-backup-if-mismatch", "--reject-file=-"],
        cwd=git.root,
        capture_output=True,
        text=True,
        check=True,
    )
    return True, "patch"


def _changelog_trailer(debian: Path) -> tuple[str, str, str] | None:
    """(name, email, date) of debian/changelog's newest entry: who published this series."""
    changelog = debian / "changelog"
    if not changelog.exists():
        return None
    match = _CHANGELOG_TRAILER.search(changelog.read_text(encoding="utf-8", errors="replace"))
    if not match:
        return None
    return match.group(1), match.group(2), _git_date(match.group(3)) or ""


def _newest_mtime(root: Path) -> float:
    newest = 0.0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                newest = max(newest, os.lstat(os.path.join(dirpath, name)).st_mtime)
            except OSError:
                continue
    return newest or time.time()


def build(source: SourcePackage, paths: dict[str, Path], out: Path) -> Manifest:
    """Unpack the orig tarball(s) into `out`, commit them, then commit each patch of the series."""
    if source.format and source.format != "3.0 (quilt)":
        raise SystemExit(f"{source.package}: format {source.format!r} has no patch series")
    names = list(paths)
    origs = [n for n in names if ".orig." in n and _TARBALL.search(n)]
    components = [n for n in names if _ORIG_COMPONENT.search(n)]
    debian_tars = [n for n in names if ".debian.tar." in n]
    if len(origs) != 1 or len(debian_tars) != 1:
        raise SystemExit(f"{source.package}: expected one .orig.tar.* and one .debian.tar.*")
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise SystemExit(f"{out} is not empty")
    unpack(paths[origs[0]], out)
    for name in components:
        component = _ORIG_COMPONENT.search(name).group(1)  # type: ignore[union-attr]
        (out / component).mkdir(exist_ok=True)
        unpack(paths[name], out / component)
    with tempfile.TemporaryDirectory(prefix="codeask-debian-") as scratch:
        unpack(paths[debian_tars[0]], Path(scratch), strip_top=False)
        debian = Path(scratch) / "debian"
        if not debian.is_dir():
            debian = Path(scratch)
        return _commit_series(source, debian, out)


def _commit_series(source: SourcePackage, debian: Path, out: Path) -> Manifest:
    base_time = datetime.fromtimestamp(int(_newest_mtime(out)), UTC)
    trailer = _changelog_trailer(debian)
    maintainer = _ident(source.maintainer) or ("Debian", "")
    publisher = (trailer[0], trailer[1]) if trailer else maintainer
    published = datetime.fromisoformat(trailer[2]) if trailer and trailer[2] else base_time
    start = max(published, base_time)

    git = Git(out)
    git("init", "-q", "-b", "main")
    base = git.commit(
        f"{source.package} {source.version}: the upstream orig tarball\n",
        ("upstream", ""),
        base_time.isoformat(),
        (publisher[0], publisher[1], base_time.isoformat()),
    )
    results: list[PatchResult] = []
    series = read_series(debian / "patches")
    for i, (name, level) in enumerate(series, start=1):
        path = debian / "patches" / name
        if not path.is_file():
            results.append(PatchResult(name=name, applied=False, how="listed in series, missing"))
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        meta = parse_header(text, name)
        applied, how = apply_patch(git, path, level)
        result = PatchResult(name=name, applied=applied, how=how, subject=meta.subject)
        result.described = meta.described
        if applied:
            author = _ident(meta.author) or publisher
            date = meta.date or start.isoformat()
            # Committer dates rise one second per patch: `codeask eval` walks by time.
            committed = datetime.fromtimestamp(start.timestamp() + i, UTC).isoformat()
            result.commit = git.commit(
                meta.message(), author, date, (publisher[0], publisher[1], committed)
            )
            result.author = f"{author[0]} <{author[1]}>"
            result.date = date
            result.files = git.changed_files()
        results.append(result)
    manifest = Manifest(
        package=source.package,
        version=source.version,
        homepage=source.homepage,
        base_commit=base,
        patches=results,
    )
    (out / ".git" / MANIFEST).write_bytes(msgspec.json.format(msgspec.json.encode(manifest)))
    return manifest


def report(manifest: Manifest, out: TextIO | None = None) -> None:
    """One line per patch, then the totals; skipped patches with the reason."""
    stream = out or sys.stdout
    applied = [p for p in manifest.patches if p.applied]
    print(f"{manifest.package} {manifest.version}: base {manifest.base_commit[:12]}", file=stream)
    for p in manifest.patches:
        if p.applied:
            note = "" if p.described else " (no description: named after the patch)"
            print(f"  {p.commit[:12]} {p.name} [{p.how}, {len(p.files)} files]{note}", file=stream)
        else:
            print(f"  skipped {p.name}: {p.how}", file=stream)
    skipped = len(manifest.patches) - len(applied)
    print(
        f"{len(manifest.patches)} patches in the series: {len(applied)} applied, {skipped} skipped",
        file=stream,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.debian_history")
    parser.add_argument("package", nargs="?", help="source package name (bookworm)")
    parser.add_argument("--out", type=Path, help="the repository to build (new or empty)")
    parser.add_argument("--suite", default="bookworm")
    parser.add_argument("--from-dir", type=Path, help="local .dsc / .orig.tar.* / .debian.tar.*")
    parser.add_argument(
        "--series-only", action="store_true", help="print the version and its series; build none"
    )
    args = parser.parse_args(argv)
    if bool(args.package) == bool(args.from_dir):
        parser.error("give a PACKAGE or --from-dir, not both")
    if not args.out and not args.series_only:
        parser.error("--out is required")
    if args.from_dir:
        source, paths = local_source(args.from_dir)
    else:
        with httpx.Client(timeout=60, follow_redirects=True) as client:
            candidates = sources(client, args.package, args.suite)
            source, paths = fetch_newest(client, candidates, series_only=args.series_only)
    if args.series_only:
        debian_tar = next(p for n, p in paths.items() if ".debian.tar." in n)
        with tempfile.TemporaryDirectory(prefix="codeask-debian-") as scratch:
            unpack(debian_tar, Path(scratch), strip_top=False)
            series = read_series(Path(scratch) / "debian" / "patches")
        print(f"{source.package} {source.version}: {len(series)} patches")
        for name, _level in series:
            print(f"  {name}")
        return 0
    manifest = build(source, paths, args.out)
    report(manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
