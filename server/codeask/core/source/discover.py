"""Walk a workspace folder and decide what gets indexed, and say why the rest is not.

Ignore rules follow git so nothing the user keeps out of git leaks into the index: every
`.gitignore` (nested ones relative to their folder, deeper and later lines win, `!` re-includes),
`.git/info/exclude`, and the `.gitignore` files between an enclosing repository's top and the root.
On top of those sit our own `.codeaskignore` files (same syntax; they beat `.gitignore`, so a `!`
line can re-include a default exclude or a generated folder) and `settings.index.exclude`.

Excluded by rules means silently absent. Everything else that is not indexed becomes a
`SkippedFile` with a one-line reason the user can act on.
"""

from __future__ import annotations

import logging
import operator
import os
import stat
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b, sha256
from pathlib import Path, PurePosixPath

import msgspec
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from codeask.config import IndexSettings
from codeask.core.source.globs import AnyOf, GlobError, Regex, check_length, encoded, linear
from codeask.core.source.names import display_path, is_utf8
from codeask.core.source.specialfs import SpecialMounts
from codeask.core.source.walk_cache import (
    FILE,
    FOLDER,
    IGNORE_FILES,
    LINK_KINDS,
    LINKS,
    NAMED,
    Listing,
    WalkCache,
    folder_key,
    folder_stat,
)

log = logging.getLogger(__name__)

#: Folders (or worktree `.git` files) never entered, whatever the rules say.
ALWAYS_IGNORED = frozenset({".git", ".hg", ".svn", ".codeask"})
#: Default excludes (gitignore syntax); the lowest layer, so any `!` line overrides them.
DEFAULT_EXCLUDES = (
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    ".tox/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    "*.egg-info/",
    "*.pyc",
    ".DS_Store",
)
#: Where a default exclude was "written", in messages (`default excludes:3`).
DEFAULTS_ORIGIN = "default excludes"
GITIGNORE = ".gitignore"
CODEASKIGNORE = ".codeaskignore"

#: Reason of a file that disappeared between listing and reading (the indexer drops its record).
GONE = "vanished before it was read"
LEAVES = "symlink leaves the workspace"
INTO_IGNORED = "symlink into an ignored path"
DUPLICATE_DIR = "symlink to a folder already walked (loop or duplicate)"
#: Shown with the name backslash-escaped: the name cannot be stored, searched or sent as is.
NOT_UTF8 = "name is not valid UTF-8; rename the file to index it"

LOCKFILES = frozenset(
    {
        "package-lock.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "cargo.lock",
        "poetry.lock",
        "uv.lock",
        "gemfile.lock",
        "composer.lock",
        "go.sum",
        "pipfile.lock",
    }
)
#: (exact names, name prefixes, name suffixes) → the label shown in the reason.
#: Sources: gitrob's filesignatures.json (github.com/michenriksen/gitrob, MIT) for the credential
#: stores and key files; the rest (.envrc, *.ppk, secrets.y*ml, terraform state) are the files
#: named in issue 11 (*.ppk is also in Skyscanner whispers' "file-known" rule).
SECRET_RULES: tuple[tuple[frozenset[str], tuple[str, ...], tuple[str, ...], str], ...] = (
    (frozenset({".env", ".envrc"}), (".env.",), (), ".env*"),
    (frozenset(), (), (".pem",), "*.pem"),
    (frozenset(), (), (".key", ".keypair"), "*.key"),
    (frozenset(), ("id_rsa",), ("_rsa",), "id_rsa*"),
    (frozenset(), ("id_ed25519",), ("_ed25519",), "id_ed25519*"),
    (frozenset(), ("id_ecdsa",), ("_ecdsa",), "id_ecdsa*"),
    (frozenset(), ("id_dsa",), ("_dsa",), "id_dsa*"),
    (frozenset(), (), (".ppk",), "*.ppk"),
    (frozenset(), (), (".p12", ".pkcs12"), "*.p12"),
    (frozenset(), (), (".pfx",), "*.pfx"),
    (frozenset(), (), (".jks", ".keystore", ".keyring", ".keychain"), "key store"),
    (frozenset(), (), (".kdb", ".kdbx", ".psafe3", ".agilekeychain"), "password database"),
    (frozenset({".netrc", "_netrc", "netrc"}), (), (), ".netrc"),
    (frozenset({".npmrc"}), (), (), ".npmrc"),
    (frozenset({".pypirc"}), (), (), ".pypirc"),
    (frozenset({".pgpass", "pgpass"}), (), (), ".pgpass"),
    (frozenset({".htpasswd", "htpasswd", "proftpdpasswd"}), (), (), ".htpasswd"),
    (frozenset({".git-credentials", "git-credentials"}), (), (), ".git-credentials"),
    (frozenset({".dockercfg", "dockercfg"}), (), (), ".dockercfg"),
    (frozenset({".s3cfg", "s3cfg", ".boto"}), (), (), ".s3cfg"),
    (frozenset({"credentials.json", "credentials.xml", "credentials.db"}), (), (), "credentials"),
    (frozenset({"secrets.yaml", "secrets.yml", "secret_token.rb"}), (), (), "secrets file"),
    (
        frozenset({"terraform.tfstate", "terraform.tfvars"}),
        ("terraform.tfstate.",),
        (),
        "terraform",
    ),
    (frozenset({"sftp-config.json", "otr.private_key"}), (), (), "credentials"),
    (
        frozenset(
            {".bash_history", ".zsh_history", ".sh_history", ".history", ".zhistory"}
            | {".mysql_history", ".psql_history", ".irb_history"}
        ),
        (),
        (),
        "shell history",
    ),
)
#: Credential files known by their folder too (gitrob path signatures; the issue's docker/kube).
SECRET_PATHS = (
    ".aws/credentials",
    "aws/credentials",
    ".gem/credentials",
    ".docker/config.json",
    ".kube/config",
    "doctl/config.yaml",
    "config/hub",
)


def _words(*groups: str) -> frozenset[str]:
    return frozenset(word for group in groups for word in group.split())


#: Extensions whose files are binary by construction: skipped by name, never opened.
BINARY_EXTENSIONS = _words(
    ".png .jpg .jpeg .gif .bmp .ico .icns .webp .tif .tiff .psd .heic .avif .xcf",  # images
    ".zip .tar .gz .tgz .bz2 .xz .7z .rar .zst .lz4 .jar .war .ear .whl .egg .nupkg",  # archives
    ".so .dll .exe .dylib .a .o .obj .lib .bin .class .pyc .pyo .pyd .wasm .elc .beam",  # native
    ".onnx .pt .pth .ckpt .safetensors .gguf .h5 .hdf5 .npy .npz .pkl .pickle .parquet",  # models
    ".feather .arrow .tflite .pb .joblib .sqlite .sqlite3 .db .mdb .dat .mo",  # data
    ".pdf .doc .docx .xls .xlsx .ppt .pptx .odt .ods .odp .epub",  # documents
    ".ttf .otf .woff .woff2 .eot",  # fonts
    ".mp3 .mp4 .m4a .wav .ogg .flac .aac .avi .mov .mkv .webm .wmv",  # media
    ".iso .img .dmg .deb .rpm .apk .msi",  # disk images, packages
)
MINIFIABLE = (".js", ".mjs", ".cjs", ".css")
#: A NUL byte in this many leading bytes marks a file as binary (git's own heuristic).
SNIFF_BYTES = 8192
#: Hand-written code averages well under 100 characters a line; bundles run to thousands.
MINIFIED_AVG_LINE = 200
MINIFIED_MIN_CHARS = 1024
UTF8_BOM = b"\xef\xbb\xbf"
#: discover() reports its progress (files found so far) every this many files.
FOUND_STEP = 250

# Layer ranks, lowest first: a higher layer's verdict on a path beats a lower one's.
_DEFAULTS, _INFO_EXCLUDE, _GITIGNORE, _CODEASKIGNORE, _SETTINGS = range(5)


class SourceFile(msgspec.Struct, frozen=True):
    """A file that passed every rule that can be checked without reading it (a Struct: a
    frozen dataclass's init cost ~0.05 s of a walk over the kernel's 78k files)."""

    root: Path
    rel: str
    size: int
    mtime_ns: int

    @property
    def path(self) -> str:
        """Where the walk found it, `root/rel` (a str: a Path per file cost a third of a pass
        over the kernel; made when asked: kept, the 78k strings were 10 MB of a kernel walk's
        memory, held through a one-file edit's pass in the daemon)."""
        return os.path.join(self.root, self.rel)


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A file (or folder) left out of the index, with the reason the user sees."""

    rel: str
    reason: str


@dataclass
class Discovery:
    """The outcome of walking one root, both lists sorted by `rel`."""

    files: list[SourceFile]
    skipped: list[SkippedFile]
    #: Folders listed from the disk (with a walk cache, the others were unchanged).
    listed: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class LoadedSource:
    """The decoded text of a file, with the hash and stat of exactly the bytes that were read."""

    text: str
    sha256: str
    size: int
    mtime_ns: int


@dataclass(frozen=True, slots=True)
class _Rule:
    """One compiled ignore line: pathspec's regex run by RE2 (linear time: a hostile line
    cannot stall a walk), whether it excludes (False: `!` line), and where it was written."""

    regex: Regex
    include: bool
    at_end: Regex | None
    """The regex anchored at the end of the path, when it has a folder marker (`ps_d`)."""
    pattern: str
    """The regex RE2 sets are built from."""
    origin: str
    """`file:line` (or `settings index.exclude`), and the line as written: for messages."""
    line: str

    @classmethod
    def of(cls, pattern: str, include: bool, origin: str, line: str) -> _Rule:
        """`pattern`: pathspec's regex for the line, compiled by RE2 alone (pathspec's own
        `re` compile of each line was ~0.1 s of an edit's walk of the kernel, for its symlinks'
        rules). Raises GlobError when RE2 refuses the line (too long or complex)."""
        at_end = None
        if "(?P<ps_d>" in pattern:  # the folder marker: also anchored at the end
            at_end = linear(f"(?:{pattern})$")  # RE2's `$`: the very end, as re's \Z
        return cls(linear(pattern), include, at_end, pattern, origin, line)

    def names(self, query: bytes, is_dir: bool) -> bool:
        """Whether the line matches the path itself, not merely one of its parent folders.

        pathspec's regexes also match everything below a matching folder (`ps_d` is the slash
        after it). Git prunes such folders instead, so a parent match must not decide here:
        without this, `!node_modules/` in one file would re-include `node_modules/x.log` that
        another file's `*.log` excludes. A direct match ends at the end of the path (a folder's
        query ends with its own slash); regexes without `ps_d` (`*`, `foo/**`) match whole
        subtrees, and name a folder when they match before its final slash.
        """
        if self.at_end is not None:
            return self.at_end.search(query) is not None
        match = self.regex.search(query)
        return match is not None and (not is_dir or match.end() < len(query))


@dataclass(frozen=True, slots=True)
class _Layer:
    """One compiled ignore file, placed where its patterns apply.

    A path `rel` (relative to the root) is matched as `outer + rel[len(inner):]`: `inner` is the
    layer's folder under the root ('' for the root), `outer` is the root's path inside a layer
    that sits above it (a `.gitignore` of an enclosing repository), else ''.
    """

    rank: int
    depth: int
    inner: str
    outer: str
    rules: tuple[_Rule, ...]
    """In file order: the last line naming the path decides."""
    matcher: AnyOf
    """Which rules' regexes match a path, in one pass (most paths match none)."""

    def verdict(self, rel: str, is_dir: bool) -> bool | None:
        """True: ignore, False: re-included, None: no line of this layer names the path."""
        rule = self.decider(rel, is_dir)
        return None if rule is None else rule.include

    def decider(self, rel: str, is_dir: bool) -> _Rule | None:
        """The line of this layer that decides on `rel`, or None."""
        path = self.outer + rel[len(self.inner) :]
        query = encoded(path + "/" if is_dir else path)
        hits = self.matcher.matching(query)
        if hits:
            for index in sorted(hits, reverse=True):
                rule = self.rules[index]
                if rule.names(query, is_dir):
                    return rule
        return None


def _priority(layer: _Layer) -> tuple[int, int]:
    """Highest first: rank, then depth (a deeper file beats a shallower one of the same kind)."""
    return (-layer.rank, -layer.depth)


def _compile(lines: Sequence[str], origin: str, numbered: bool = True) -> tuple[_Rule, ...]:
    """Compile ignore lines with pathspec; a bad line is dropped with a warning, not the file.

    `origin` is the file (rules say `file:line`) or, when not `numbered`, the setting's name.
    """
    rules: list[_Rule] = []
    for number, line in enumerate(lines, 1):
        where = f"{origin}:{number}" if numbered else origin
        try:
            check_length(line)
            regex, include = GitIgnoreSpecPattern.pattern_to_regex(line)
            if include is not None and isinstance(regex, str):
                rules.append(_Rule.of(regex, include, where, line))
        except GlobError as exc:
            log.warning("%s: ignoring pattern %.80r: %s", where, line, exc)
        except ValueError:
            log.warning("%s: ignoring invalid pattern %.80r", where, line)
    return tuple(rules)


def _read_rules(path: Path) -> tuple[_Rule, ...]:
    """The compiled ignore file at `path`; empty when it is missing or unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    return _compile(text.removeprefix("\ufeff").splitlines(), str(path))


def _layer(
    rank: int, rules: tuple[_Rule, ...], inner: str = "", outer: str = "", depth: int = 0
) -> list[_Layer]:
    if not rules:
        return []
    matcher = AnyOf([rule.pattern for rule in rules])
    return [_Layer(rank, depth, inner, outer, rules, matcher)]


def _read_gitfile(dot_git: Path) -> Path | None:
    """The git dir named by a worktree's or submodule's `.git` file (`gitdir: <path>`)."""
    try:
        first = dot_git.read_text(encoding="utf-8").splitlines()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    if not first.startswith("gitdir:"):
        return None
    return dot_git.parent / first[len("gitdir:") :].strip()


def _common_dir(git_dir: Path) -> Path:
    """Linked worktrees keep `info/exclude` in the main repository's git dir."""
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    return git_dir / common


def _find_repo(root: Path) -> tuple[Path, Path | None] | None:
    """(top, git dir) of the repository holding `root`, or None outside any repository."""
    for folder in (root, *root.parents):
        dot_git = folder / ".git"
        if dot_git.is_dir():
            return folder, dot_git
        if dot_git.is_file():
            git_dir = _read_gitfile(dot_git)
            return folder, None if git_dir is None else _common_dir(git_dir)
    return None


def _git_layers(root: Path) -> list[_Layer]:
    """`.git/info/exclude` and the `.gitignore` files above the root, up to the repository top.

    A layer above the root gets depth `j - n` (`j`: its folder's level under the top, `n`: the
    root's), so it ranks below the root's own `.gitignore` (depth 0). Only direct matches count
    (see `_Rule.names`), so opening a folder the repository ignores (`build/`) still indexes it.
    """
    repo = _find_repo(root)
    if repo is None:
        return []
    top, git_dir = repo
    parts = root.relative_to(top).parts
    n = len(parts)
    exclude = _read_rules(git_dir / "info" / "exclude") if git_dir else ()
    layers = _layer(_INFO_EXCLUDE, exclude, outer=_slashed(parts), depth=-n)
    for j in range(n):
        rules = _read_rules(top.joinpath(*parts[:j]) / GITIGNORE)
        layers += _layer(_GITIGNORE, rules, outer=_slashed(parts[j:]), depth=j - n)
    return layers


def _slashed(parts: Sequence[str]) -> str:
    return "".join(part + "/" for part in parts)


def _absolute(root: Path) -> Path:
    return Path(os.path.abspath(root))


class IgnoreRules:
    """Compiled ignore rules of one root.

    Nested ignore files are read lazily, once per folder, so a walk reads each file it meets
    exactly once and a single-file check reads only the files on that file's path.
    """

    def __init__(self, root: Path, base: Sequence[_Layer], gitignore: bool = True) -> None:
        self.root = root
        self._base = tuple(sorted(base, key=_priority))
        self._files = (
            ((_GITIGNORE, GITIGNORE), (_CODEASKIGNORE, CODEASKIGNORE))
            if gitignore
            else ((_CODEASKIGNORE, CODEASKIGNORE),)
        )
        self._layers: dict[str, tuple[_Layer, ...]] = {}
        self._dir_ignored: dict[str, bool] = {}

    @classmethod
    def for_root(cls, root: Path, settings: IndexSettings) -> IgnoreRules:
        """Defaults, git's excludes above the root and the settings patterns; nested files later."""
        root = _absolute(root)
        base = _layer(_DEFAULTS, _compile(DEFAULT_EXCLUDES, DEFAULTS_ORIGIN))
        base += _layer(
            _SETTINGS, _compile(settings.exclude, "settings index.exclude", numbered=False)
        )
        if not settings.gitignore:  # the user's override: git's rules are not read at all
            return cls(root, base, gitignore=False)
        return cls(root, base + _git_layers(root))

    def fingerprint(self) -> bytes:
        """A key of the root's own rules (defaults, settings, git's above the root) and of
        which ignore files count: a walk cache made under other rules is not used."""
        digest = blake2b(repr(self._files).encode(), digest_size=16)
        for layer in self._base:
            rules = [(rule.pattern, rule.include) for rule in layer.rules]
            digest.update(repr((layer.rank, layer.depth, layer.inner, layer.outer, rules)).encode())
        return digest.digest()

    def is_ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether rules exclude `rel` (POSIX, root-relative) or one of its parent folders."""
        rel = rel.strip("/")
        if not rel or rel == ".":
            return False
        parent, _, name = rel.rpartition("/")
        if parent and self._folder_ignored(parent):
            return True
        return self._matches(rel, name, is_dir, self._layers_for(parent))

    def _folder_ignored(self, rel: str) -> bool:
        """Cached verdict on a folder: excluded itself or through one of its parents."""
        cached = self._dir_ignored.get(rel)
        if cached is None:
            cached = self.is_ignored(rel, True)
            self._dir_ignored[rel] = cached
        return cached

    def excluder(self, rel: str, is_dir: bool) -> tuple[str, str] | None:
        """(where, line) of the ignore line that excludes `rel` itself, or None (not excluded,
        excluded through a parent folder, or one of ALWAYS_IGNORED): for messages."""
        rel = rel.strip("/")
        parent = rel.rpartition("/")[0]
        for layer in self._layers_for(parent):
            rule = layer.decider(rel, is_dir)
            if rule is not None:
                return (rule.origin, rule.line) if rule.include else None
        return None

    def _matches(self, rel: str, name: str, is_dir: bool, layers: Sequence[_Layer]) -> bool:
        """Verdict on `rel` alone (its parents are known not to be excluded)."""
        if name in ALWAYS_IGNORED:
            return True
        for layer in layers:
            verdict = layer.verdict(rel, is_dir)
            if verdict is not None:
                return verdict
        return False

    def _layers_for(self, folder: str, names: Collection[str] | None = None) -> tuple[_Layer, ...]:
        """Layers that judge the entries of `folder` ('' = root), highest priority first.

        `names` (the folder's listing, when the walker has it) saves trying to open absent files.
        """
        cached = self._layers.get(folder)
        if cached is not None:
            return cached
        inherited = self._layers_for(folder.rpartition("/")[0]) if folder else self._base
        own = self._own_layers(folder, names)
        layers = tuple(sorted((*inherited, *own), key=_priority)) if own else inherited
        self._layers[folder] = layers
        return layers

    def _own_layers(self, folder: str, names: Collection[str] | None) -> list[_Layer]:
        """The `.gitignore` and `.codeaskignore` files in `folder` itself."""
        inner = folder + "/" if folder else ""
        depth = folder.count("/") + 1 if folder else 0
        layers: list[_Layer] = []
        for rank, file_name in self._files:
            if names is None or file_name in names:
                rules = _read_rules(self.root / inner / file_name)
                layers += _layer(rank, rules, inner, "", depth)
        return layers


#: Every rule's names, prefixes and suffixes at once: most files match none, and say so in three
#: calls instead of ~35 (a pass stats every file; 78k on the Linux kernel, issue 42).
_ANY_EXACT = frozenset().union(*(rule[0] for rule in SECRET_RULES))
_ANY_PREFIX = tuple(prefix for rule in SECRET_RULES for prefix in rule[1])
_ANY_SUFFIX = tuple(suffix for rule in SECRET_RULES for suffix in rule[2])


def _secret_label(lower_rel: str) -> str | None:
    label = _name_label(lower_rel.rpartition("/")[2])
    if label is None and lower_rel.endswith(SECRET_PATHS):
        for path in SECRET_PATHS:
            if lower_rel == path or lower_rel.endswith("/" + path):
                return path
    return label


def _name_label(lower: str) -> str | None:
    """The label of the first rule matching a (lower-case) file name."""
    if not (lower in _ANY_EXACT or lower.startswith(_ANY_PREFIX) or lower.endswith(_ANY_SUFFIX)):
        return None
    for exact, prefixes, suffixes, label in SECRET_RULES:
        # str.startswith(()) is False, so an empty tuple simply never matches.
        if lower in exact or lower.startswith(prefixes) or lower.endswith(suffixes):
            return label
    return None


def _name_policy(rel: str, settings: IndexSettings) -> str | None:
    """Reason to skip a file by its name (or, for credential paths, its folder) alone."""
    lower = rel.lower().rpartition("/")[2]
    if settings.skip_secrets and (label := _secret_label(rel.lower())):
        return f"secret-like name ({label})"
    if lower in LOCKFILES:
        return "lockfile"
    for suffix in (".min.js", ".min.css"):
        if lower.endswith(suffix):
            return f"minified bundle (*{suffix})"
    if lower.endswith(".map"):
        return "source map (*.map)"
    ext = os.path.splitext(lower)[1]
    if ext in BINARY_EXTENSIONS:
        return f"binary ({ext} file)"
    return None


#: `path_policy` verdict on a path the ignore rules exclude (silently absent, like in a walk).
IGNORED = "excluded by ignore rules"


def path_policy(rules: IgnoreRules, rel: str, settings: IndexSettings) -> str | None:
    """discover()'s verdict on a path without touching the disk: `IGNORED`, a skip reason or None.

    For paths that are not (or no longer) in the working tree, such as files in git history, so
    they obey the same ignore, secret-name, lockfile and binary rules as the walk.
    """
    if rules.is_ignored(rel, False):
        return IGNORED
    if not is_utf8(rel):
        return NOT_UTF8
    return _name_policy(rel, settings)


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _posix_rel(real: str, real_root: str) -> str:
    return os.path.relpath(real, real_root).replace(os.sep, "/")


def _too_large(size: int, cap: int) -> str:
    return f"too large ({size} bytes > {cap})"


class _Files:
    """Per-file checks shared by the walker and `check_file`: one place, so both agree."""

    def __init__(self, root: Path, settings: IndexSettings, rules: IgnoreRules) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.settings = settings
        self.rules = rules
        self.special = SpecialMounts.read()

    def link_problem(self, real: str, is_dir: bool) -> str | None:
        """Why a symlink (to `real`) must not be followed, or None."""
        if not _inside(real, self.real_root):
            return LEAVES
        target = _posix_rel(real, self.real_root)
        if target != "." and self.rules.is_ignored(target, is_dir):
            return INTO_IGNORED
        return None

    def judge(self, path: str, rel: str, link_target: str | None) -> SourceFile | SkippedFile:
        """Name policies, then one stat for the type and the size cap; never reads the file."""
        reason = _name_policy(rel, self.settings)
        if reason is None and link_target is not None:
            reason = _name_policy(os.path.basename(link_target), self.settings)
        if reason is not None:
            return SkippedFile(rel, reason)
        return self.stat_file(path, rel)

    def stat_file(self, path: str, rel: str) -> SourceFile | SkippedFile:
        """`judge` after the name policies: one stat for the type and the size cap."""
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return SkippedFile(rel, "broken symlink" if os.path.islink(path) else GONE)
        except OSError as exc:
            return SkippedFile(rel, f"unreadable: {exc.strerror or exc}")
        if not stat.S_ISREG(st.st_mode):
            return SkippedFile(rel, "not a regular file")
        if st.st_size > self.settings.max_file_bytes:
            return SkippedFile(rel, _too_large(st.st_size, self.settings.max_file_bytes))
        return SourceFile(self.root, rel, st.st_size, st.st_mtime_ns)


#: An entry whose folder's listing the walk cache must not keep (a bad name).
_UNKEPT = "x"
_REL = operator.attrgetter("rel")


@dataclass(frozen=True, slots=True)
class _Folder:
    path: str
    rel: str
    real: str
    key: bytes | None = None
    """Its parent's rules key (walk_cache.py); None: the walk cache is not used below here."""


class _Walker:
    """One discover() run: an iterative depth-first walk with pruning at every folder."""

    def __init__(
        self,
        root: Path,
        settings: IndexSettings,
        ignored_dirs: Sequence[Path],
        on_found: Callable[[int], None] | None = None,
        cache: Path | None = None,
        on_folder: Callable[[str, str], None] | None = None,
    ) -> None:
        self.checks = _Files(root, settings, IgnoreRules.for_root(root, settings))
        self.on_found = on_found
        self.on_folder = on_folder
        self.rules = self.checks.rules
        if cache is not None:  # names are judged by `skip_secrets` too
            key = self.rules.fingerprint() + bytes([settings.skip_secrets])
        self.cache = None if cache is None else WalkCache(cache, key)
        self.blocked = {os.path.realpath(d) for d in ignored_dirs}
        self.visited: set[str] = set()
        self.deferred: list[tuple[str, str, str]] = []
        self.files: list[SourceFile] = []
        self.skipped: list[SkippedFile] = []

    def run(self) -> Discovery:
        """Walk real folders first and symlinked ones after, so a file's real path wins."""
        root_key = None if self.cache is None else self.cache.root_key
        self._walk(self._enter([], str(self.checks.root), "", self.checks.real_root, root_key))
        while self.deferred:
            links, self.deferred = sorted(self.deferred), []
            for rel, path, real in links:
                self._walk(self._enter([], path, rel, real))
        self.files.sort(key=_REL)
        self.skipped.sort(key=_REL)
        listed = len(self.visited)
        if self.cache is not None:
            self.cache.save()
            listed = self.cache.listed
        return Discovery(self.files, self.skipped, listed)

    def _walk(self, stack: list[_Folder]) -> None:
        while stack:
            self._scan(stack.pop(), stack)

    def _enter(
        self, stack: list[_Folder], path: str, rel: str, real: str, key: bytes | None = None
    ) -> list[_Folder]:
        """Queue a folder unless it is blocked (relocated index), already walked (a loop) or on
        a special filesystem (/proc, /sys, ...: see specialfs)."""
        if real in self.blocked:
            return stack
        special = self.checks.special.reason(real)
        if special is not None:
            log.info("not walking %s: %s", display_path(path), special)
            self.skipped.append(SkippedFile(rel or ".", special))
            return stack
        if real in self.visited:
            self.skipped.append(SkippedFile(rel, DUPLICATE_DIR))
            return stack
        self.visited.add(real)
        stack.append(_Folder(path, rel, real, key))
        return stack

    def _scan(self, folder: _Folder, stack: list[_Folder]) -> None:
        """List a folder and judge its entries, or replay the walk cache's unchanged listing."""
        if self.on_folder is not None:  # a file watch's, set before the folder is looked at
            self.on_folder(folder.path, folder.rel)
        cache = self.cache if folder.key is not None else None
        listed_ns = 0 if cache is None else time.time_ns()  # walk_cache.py: the racy rule
        seen = None if cache is None else folder_stat(folder.path)  # before the listing
        kept = None if cache is None else cache.kept(folder.rel, seen)
        own = None
        if folder.key is not None:
            own = folder_key(folder.key, folder.path, kept is None or kept.ignores)
        if kept is not None and own is not None and own == kept.key:
            self._replay(folder, kept, own, stack)
            return
        try:
            with os.scandir(folder.path) as listing:
                entries = list(listing)
        except FileNotFoundError:
            if not folder.rel:  # a subfolder deleted mid-walk is simply not there
                self.skipped.append(SkippedFile(".", "folder not found"))
            return
        except OSError as exc:
            reason = f"unreadable folder: {exc.strerror or exc}"
            self.skipped.append(SkippedFile(folder.rel or ".", reason))
            return
        layers = self.rules._layers_for(folder.rel, {e.name for e in entries})
        prefix = folder.rel + "/" if folder.rel else ""
        kinds: list[tuple[str, str]] | None = []
        for entry in entries:
            kind = self._entry(entry, prefix + entry.name, folder, layers, stack, own)
            if kind == _UNKEPT:
                kinds = None
            elif kind is not None and kinds is not None:
                kinds.append((entry.name, kind))
        if cache is not None and own is not None:
            ignores = any(e.name in IGNORE_FILES for e in entries)
            cache.store(
                folder.rel,
                seen,
                own,
                kinds,
                ignores,
                listed_ns=listed_ns,
                path=folder.path,
                raw=entries,
            )

    def _replay(self, folder: _Folder, kept: Listing, key: bytes, stack: list[_Folder]) -> None:
        """The entries of an unchanged folder under unchanged rules, as the last walk kept
        them: folders entered, files stat'ed and judged again (an edit moves no folder)."""
        assert self.cache is not None
        self.cache.reuse(folder.rel, kept)
        prefix = folder.rel + "/" if folder.rel else ""
        base, real = os.path.join(folder.path, ""), os.path.join(folder.real, "")
        files: list[str] = []
        for name, kind in zip(kept.names, kept.kinds, strict=True):
            if kind == FILE:  # its name passed under the same settings (the cache's key)
                files.append(name)
                continue
            path = base + name  # os.path.join per file cost a tenth of a kernel walk
            if kind == FOLDER:
                self._enter(stack, path, prefix + name, real + name, key)
            elif kind in LINK_KINDS:  # its target may have changed: judged again
                self._kept_link(path, prefix + name, LINK_KINDS[kind], folder.rel)
            else:
                self._file(path, prefix + name)
        self._stat_kept(base, prefix, files)

    def _stat_kept(self, base: str, prefix: str, names: list[str]) -> None:
        """The kept files of an unchanged folder: a stat each, the usual verdict (a regular
        file under the size cap) made here, any other by `stat_file` (a call per file cost
        ~0.05 s of a walk of the kernel)."""
        files, root = self.files, self.checks.root
        cap, is_regular, before = self.checks.settings.max_file_bytes, stat.S_ISREG, len(files)
        for name in names:
            path = base + name
            try:
                st = os.stat(path)
            except OSError:
                st = None
            if st is not None and is_regular(st.st_mode) and st.st_size <= cap:
                files.append(SourceFile(root, prefix + name, st.st_size, st.st_mtime_ns))
            else:  # why not (or gone), as a listing's walk says it
                self._add(self.checks.stat_file(path, prefix + name))
        if self.on_found is not None and len(files) // FOUND_STEP > before // FOUND_STEP:
            self.on_found(len(files))

    def _entry(
        self,
        entry: os.DirEntry[str],
        rel: str,
        folder: _Folder,
        layers: Sequence[_Layer],
        stack: list[_Folder],
        key: bytes | None,
    ) -> str | None:
        """Judge one listed entry; its kind for the walk cache (None: ignored by the rules,
        `_UNKEPT`: the folder's listing must not be kept)."""
        typed = True
        try:
            is_link, is_dir = entry.is_symlink(), entry.is_dir()
        except OSError:
            is_link, is_dir, typed = False, False, False
        if is_link and typed and is_utf8(entry.name):
            left_out = self.rules._matches(rel, entry.name, is_dir, layers)
            if not left_out:
                self._link(entry.path, rel, is_dir)
            return LINKS[(is_dir, left_out)]
        if self.rules._matches(rel, entry.name, is_dir, layers):
            return None if typed else _UNKEPT
        if not is_utf8(entry.name):
            self.skipped.append(_bad_name(rel))
        elif is_link:
            self._link(entry.path, rel, is_dir)
        elif is_dir:
            self._enter(stack, entry.path, rel, os.path.join(folder.real, entry.name), key)
            return FOLDER
        else:
            kind = self._file(entry.path, rel)
            return kind if typed else _UNKEPT
        return _UNKEPT

    def _file(self, path: str, rel: str) -> str:
        """Judge a plain file; its kind for the walk cache (whether its name passed)."""
        reason = _name_policy(rel, self.checks.settings)
        if reason is not None:
            self.skipped.append(SkippedFile(rel, reason))
            return NAMED
        self._add(self.checks.stat_file(path, rel))
        return FILE

    def _kept_link(self, path: str, rel: str, was: tuple[bool, bool], folder: str) -> None:
        """A symlink of a kept listing, with (whether it led to a folder, whether the rules left
        it out) then: the rules judge it again only when its target changed kind (the rules'
        layers of a folder cost the ignore files above it compiled), the link checks always."""
        is_dir, left_out = os.path.isdir(path), was[1]
        if is_dir != was[0]:
            name = rel.rpartition("/")[2]
            left_out = self.rules._matches(rel, name, is_dir, self.rules._layers_for(folder))
        if not left_out:
            self._link(path, rel, is_dir)

    def _link(self, path: str, rel: str, is_dir: bool) -> None:
        try:
            real = os.path.realpath(path)
        except OSError as exc:  # e.g. a link that loops or whose target vanished mid-resolve
            self.skipped.append(SkippedFile(rel, f"unreadable symlink: {exc.strerror or exc}"))
            return
        problem = self.checks.link_problem(real, is_dir)
        if problem is not None:
            self.skipped.append(SkippedFile(rel, problem))
        elif is_dir:
            self.deferred.append((rel, path, real))
        else:
            self._add(self.checks.judge(path, rel, real))

    def _add(self, verdict: SourceFile | SkippedFile) -> None:
        if isinstance(verdict, SourceFile):
            self.files.append(verdict)
            if self.on_found is not None and len(self.files) % FOUND_STEP == 0:
                self.on_found(len(self.files))
        elif verdict.reason != GONE:  # deleted mid-walk: simply not there
            self.skipped.append(verdict)


def _bad_name(rel: str) -> SkippedFile:
    """A name that is not UTF-8, logged and reported escaped (it would crash every encoder)."""
    shown = display_path(rel)
    log.warning("skipped %s: %s", shown, NOT_UTF8)
    return SkippedFile(shown, NOT_UTF8)


def discover(
    root: Path,
    settings: IndexSettings,
    *,
    ignored_dirs: Sequence[Path] = (),
    on_found: Callable[[int], None] | None = None,
    cache: Path | None = None,
    on_folder: Callable[[str, str], None] | None = None,
) -> Discovery:
    """Every indexable file under `root`, and every non-ignored file left out with its reason.

    `ignored_dirs` are absolute folders never entered (e.g. a relocated index folder).
    `on_found(n)` is told the number of files found so far, every FOUND_STEP files (progress).
    `cache`: a walk cache file (walk_cache.py): unchanged folders are not listed again.
    `on_folder(path, rel)` is told each folder entered, before it is stat'ed or listed (a file
    watch sets its watches there: tree_watch.py).
    """
    return _Walker(_absolute(root), settings, ignored_dirs, on_found, cache, on_folder).run()


def _normalise_rel(root: Path, rel: str) -> str | None:
    """POSIX, root-relative, without `.`; None when the path leaves the root."""
    if os.sep != "/":
        rel = rel.replace(os.sep, "/")
    if os.path.isabs(rel):
        rel = os.path.relpath(rel, root).replace(os.sep, "/")
    parts = [p for p in PurePosixPath(rel).parts if p not in (".", "/")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def check_file(root: Path, rel: str, settings: IndexSettings) -> SourceFile | SkippedFile | None:
    """The verdict of discover() on one file (an editor save, a file-watcher event).

    None when ignore rules exclude it (not an error); a SkippedFile for a policy skip, a missing
    file (reason `GONE`) or a folder; a SourceFile otherwise.
    """
    root = _absolute(root)
    clean = _normalise_rel(root, rel)
    if clean is None:
        return SkippedFile(display_path(rel), "outside the workspace")
    if not is_utf8(clean):
        return _bad_name(clean)
    files = _Files(root, settings, IgnoreRules.for_root(root, settings))
    path = os.path.join(root, *clean.split("/"))
    special = files.special.reason(os.path.realpath(os.path.dirname(path)))
    if special is not None:
        return SkippedFile(clean, special)
    is_dir = os.path.isdir(path)
    if files.rules.is_ignored(clean, is_dir):
        return None
    if not os.path.lexists(path):
        return SkippedFile(clean, GONE)
    problem, link_target = _path_links(files, path, clean, is_dir)
    if problem is not None:
        return SkippedFile(clean, problem)
    if is_dir:
        return SkippedFile(clean, "a folder, not a file")
    return files.judge(path, clean, link_target)


def _path_links(files: _Files, path: str, rel: str, is_dir: bool) -> tuple[str | None, str | None]:
    """(problem, link target) for symlinks on the way to `path`, as discover() would see them.

    A symlinked parent folder inside the root duplicates a real folder that discover() walks
    instead, so files under it are reported as such.
    """
    real = os.path.realpath(path)
    expected = os.path.join(files.real_root, *rel.split("/"))
    if real == expected:
        return None, None
    problem = files.link_problem(real, is_dir)
    if problem is not None:
        return problem, None
    parent_real = os.path.realpath(os.path.dirname(path))
    if parent_real != os.path.dirname(expected):
        return DUPLICATE_DIR, None
    return None, real


def load_source(file: SourceFile, settings: IndexSettings) -> LoadedSource | SkippedFile:
    """Read the file once and decide on its content; never raises for a bad file."""
    cap = settings.max_file_bytes
    try:
        data, st = _read_capped(file.path, cap)
    except FileNotFoundError:
        return SkippedFile(file.rel, GONE)
    except OSError as exc:
        return SkippedFile(file.rel, f"unreadable: {exc.strerror or exc}")
    size = max(st.st_size, len(data))  # the file may have grown since discover() saw it
    if size > cap:
        return SkippedFile(file.rel, _too_large(size, cap))
    text, reason = _decode(data)
    if reason is None and file.rel.lower().endswith(MINIFIABLE):
        reason = _minified(text)
    if reason is not None:
        return SkippedFile(file.rel, reason)
    return LoadedSource(text, sha256(data).hexdigest(), len(data), st.st_mtime_ns)


def _read_capped(path: str | Path, cap: int) -> tuple[bytes, os.stat_result]:
    """At most cap + 1 bytes (none if the open file is already too large), and its stat.

    O_NONBLOCK keeps a FIFO that replaced the file from hanging the open; a non-regular file is
    refused before any read. Read with `os.read` sized by the stat, not a buffered `read(cap +
    1)`: that one allocated cap + 1 bytes per file and shrank them (a fourth of the reading's
    CPU at 1 MB: 0.34 -> 0.09 CPU-s over 8,770 kernel files, issue 42).
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > cap:
            return b"", st
        return _read_up_to(fd, cap + 1, st.st_size + 1), st
    finally:
        os.close(fd)


def _read_up_to(fd: int, limit: int, expected: int) -> bytes:
    """The file's bytes up to `limit`, read until end of file: first `expected` (its stat size
    and one more), then on while it grew meanwhile or a read came back short."""
    parts = [os.read(fd, min(limit, expected))]
    got = len(parts[0])
    while got < limit:
        part = os.read(fd, min(limit - got, 1 << 20))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _decode(data: bytes) -> tuple[str, str | None]:
    """(text, None) for UTF-8 text (BOM stripped), else ('', reason)."""
    if b"\x00" in data[:SNIFF_BYTES]:
        return "", "binary (NUL byte)"
    skip = len(UTF8_BOM) if data.startswith(UTF8_BOM) else 0
    try:
        return data[skip:].decode("utf-8"), None
    except UnicodeDecodeError as exc:
        offset = exc.start + skip
        return "", f"not UTF-8 (byte 0x{data[offset]:02x} at offset {offset})"


def _minified(text: str) -> str | None:
    """Bundles are a few enormous lines: useless to chunk, and they drown real hits."""
    if len(text) < MINIFIED_MIN_CHARS:
        return None
    average = len(text) // (text.count("\n") + 1)
    if average <= MINIFIED_AVG_LINE:
        return None
    return f"minified bundle (average line {average} chars)"
