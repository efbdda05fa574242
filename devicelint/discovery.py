"""Which files to lint: walk directories, honour excludes and .gitignore files."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator, Optional

from devicelint.config import Settings
from devicelint.source import SkippedFile, read_regular

if TYPE_CHECKING:  # imported when a .gitignore or excludes file is read (issue 17: start-up)
    import pathspec

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
MAX_GITIGNORE_BYTES = 10_000_000


@dataclass
class Candidate:
    """A file to lint."""

    path: str  # the path to open
    display: str  # the path to report (as given, or relative to the working directory)
    explicit: bool  # named on the command line
    # The path relative to the project root, "/"-separated, whatever the working directory
    # and however the project was reached (a symlinked path): what excludes, per-file-ignores
    # and path-dependent rules (DL010's test exemption) see, and part of the cache key.
    # Starts with "../" for a file outside the project.
    relative: str = ""


class ProjectPaths:
    """Paths relative to the (resolved) project root. A path given through a symbolic link
    to the project (`/tmp` -> `/private/tmp`, a linked workspace) is mapped by resolving its
    directory once; a link inside the project keeps its own place, like git."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._prefix = self.root if self.root.endswith(os.sep) else self.root + os.sep
        self._real_dirs: dict[str, str] = {}

    def _inside(self, absolute: str) -> Optional[str]:
        if absolute == self.root:
            return ""
        if absolute.startswith(self._prefix):
            relative = absolute[len(self._prefix):]
            return relative.replace(os.sep, "/") if os.sep != "/" else relative
        return None

    def real_dir(self, directory: str) -> str:
        found = self._real_dirs.get(directory)
        if found is None:
            found = self._real_dirs[directory] = os.path.realpath(directory)
        return found

    def lexically_relative(self, path: "str | os.PathLike[str]") -> Optional[str]:
        """The path relative to the root when it is spelled inside it (no link resolved),
        else None."""
        return self._inside(os.path.abspath(path))

    def relative(self, path: "str | os.PathLike[str]") -> Optional[str]:
        """The path relative to the root, or None if it is outside."""
        absolute = os.path.abspath(path)
        found = self._inside(absolute)
        if found is not None:
            return found
        parent, name = os.path.split(absolute)
        if not name:
            return self._inside(self.real_dir(absolute))
        return self._inside(os.path.join(self.real_dir(parent), name))

    def canonical(self, path: "str | os.PathLike[str]") -> Path:
        """The absolute path in the root's spelling when inside the project, else abspath."""
        relative = self.relative(path)
        if relative is None:
            return Path(os.path.abspath(path))
        return Path(self.root, relative) if relative else Path(self.root)

    def display(self, key: str) -> str:
        """How a report names the file rules saw as `key` (its path from the root, `key`
        below): relative to the working directory, as a finding's own path is, so that the
        user can open it from where devicelint ran."""
        return _display(os.path.join(self.root, key), key)

    def key(self, path: "str | os.PathLike[str]") -> str:
        """`relative`, or for a file outside the project its path from the root (`../x.py`)."""
        relative = self.relative(path)
        if relative is not None:
            return relative
        parent, name = os.path.split(os.path.abspath(path))
        try:
            return Path(os.path.relpath(os.path.join(self.real_dir(parent), name), self.root)).as_posix()
        except ValueError:  # another drive on Windows
            return Path(os.path.abspath(path)).as_posix()


@dataclass
class Problem:
    """A path named on the command line or met while walking that cannot be linted."""

    display: str
    message: str


class Excluder:
    """Exclude patterns work like ruff's: a pattern without `/` matches a file or directory
    name anywhere (`build`, `*.egg-info`); a pattern with `/` matches the path relative to
    the project root (`tests/data`, `src/*/generated`). Walking prunes excluded directories,
    so a directory named on the command line is linted even if its name is excluded."""

    def __init__(self, settings: Settings, paths: Optional[ProjectPaths] = None) -> None:
        self.paths = paths or ProjectPaths(settings.root)
        self.root = Path(self.paths.root)
        patterns = [p.rstrip("/") for p in list(settings.exclude) + list(settings.extend_exclude) if p]
        self.name_patterns = [p for p in patterns if "/" not in p]
        self.path_patterns = [p.lstrip("./") if p.startswith("./") else p for p in patterns if "/" in p]
        # Each list as one expression (fnmatchcase pattern by pattern was most of a walk's time),
        # compiled on the first match: a run over the files named on the command line may
        # never ask (the defaults' ~30 patterns cost ~5M instructions to compile).
        self._name_re: Optional[re.Pattern] = None
        self._path_re: Optional[re.Pattern] = None
        self._compiled = False
        self.respect_gitignore = settings.respect_gitignore
        self._gitignores: dict[Path, Optional[pathspec.GitIgnoreSpec]] = {}
        # (a directory relative to the root, floor) -> the .gitignore files that apply to
        # its entries, nearest first, each with where the entry's path below it starts, and
        # whether the walk up stopped at the floor.
        self._chains: dict[tuple[str, Optional[Path]], tuple[list, bool]] = {}
        # Set while walking a directory named on the command line that is itself ignored:
        # .gitignore files above it do not apply to what is inside.
        self.floor: Optional[Path] = None
        # (git work tree, its .git/info/exclude and global patterns), found on first use.
        self._repository: Optional[tuple[Optional[Path], list]] = None

    def _relative(self, path: Path) -> Optional[str]:
        return self.paths.relative(path)

    def matches(self, path: "Path | str") -> bool:
        return self._matches(path, self._relative(path))

    def _matches(self, path: "Path | str", relative: Optional[str]) -> bool:
        """`relative`: the path relative to the root, None when it is outside."""
        name = path.name if isinstance(path, Path) else os.path.basename(path)
        if not self._compiled:
            self._name_re, self._path_re = _any_of(self.name_patterns), _any_of(self.path_patterns)
            self._compiled = True
        if self._name_re is not None and self._name_re.match(name):
            return True
        return relative is not None and self._path_re is not None and self._path_re.match(relative) is not None

    def excluded(self, path: "Path | str", is_dir: bool, relative: Optional[str] = None) -> bool:
        """`relative`: the path relative to the root, when the caller knows it."""
        if relative is None:
            relative = self._relative(path)
        if self._matches(path, relative):
            return True
        return self.respect_gitignore and self._gitignored(path, is_dir, relative)

    def excluded_with_parents(self, path: Path) -> bool:
        """For --force-exclude: the path or any directory above it (up to the root)."""
        path = self.paths.canonical(path)
        if self.excluded(path, path.is_dir()):
            return True
        for parent in path.parents:
            if parent == self.root or self.root not in parent.parents:
                break
            if self.matches(parent):
                return True
        return False

    def _gitignore(self, directory: Path) -> Optional[pathspec.GitIgnoreSpec]:
        if directory not in self._gitignores:
            self._gitignores[directory] = _read_spec(directory / ".gitignore")
        return self._gitignores[directory]

    def _gitignored(self, path: "Path | str", is_dir: bool, relative: Optional[str] = None) -> bool:
        """As git decides: the nearest .gitignore with a pattern matching the path (the
        last such pattern in it, `!` re-including) wins, from the path's directory up to
        the project root; then the repository's .git/info/exclude, then the user's global
        excludes file."""
        if relative is None:
            relative = self._relative(path)
        if not relative:  # outside the project, or its root
            return self._gitignored_path(self.paths.canonical(path), is_dir)
        suffix = "/" if is_dir else ""
        chain, at_floor = self._chain(relative.rpartition("/")[0])
        for start, spec in chain:
            verdict = spec.check_file(relative[start:] + suffix).include
            if verdict is not None:
                return verdict
        if at_floor:
            return False  # inside a directory named on the command line that is ignored
        top, specs = self._repository_specs()
        if top is None or not specs:
            return False
        below = self._root_below_top
        return self._repository_verdict(specs, f"{below}/{relative}{suffix}" if below else relative + suffix)

    def _chain(self, folder: str) -> tuple[list, bool]:
        """The .gitignore files from `folder` (relative to the root) up to the root or the
        floor, nearest first, as `_gitignored_path` climbs them."""
        key = (folder, self.floor)
        found = self._chains.get(key)
        if found is None:
            chain = []
            at_floor = False
            prefix: Optional[str] = folder
            while prefix is not None:
                directory = Path(self.root, prefix) if prefix else self.root
                spec = self._gitignore(directory)
                if spec is not None:
                    chain.append((len(prefix) + 1 if prefix else 0, spec))
                if directory == self.floor:
                    at_floor = True
                    break
                prefix = prefix.rpartition("/")[0] if prefix else None
            found = self._chains[key] = (chain, at_floor)
        return found

    def _gitignored_path(self, path: Path, is_dir: bool) -> bool:
        """`_gitignored` for the project root or a path outside it (canonical)."""
        directory = path.parent
        while True:
            spec = self._gitignore(directory)
            if spec is not None:
                relative = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
                verdict = spec.check_file(relative).include
                if verdict is not None:
                    return verdict
            if directory == self.floor:
                return False  # inside a directory named on the command line that is ignored
            if directory == self.root or directory.parent == directory or self.root not in directory.parents:
                break
            directory = directory.parent
        return self._repository_ignored(path, is_dir)

    def _repository_specs(self) -> tuple[Optional[Path], list]:
        if self._repository is None:
            self._repository = _repository_excludes(self.root)
            top = self._repository[0]
            # The root's path below the work tree ("" when it is the work tree).
            self._root_below_top = self.root.relative_to(top).as_posix() if top and top != self.root else ""
        return self._repository

    def _repository_ignored(self, path: Path, is_dir: bool) -> bool:
        top, specs = self._repository_specs()
        if top is None or (path != top and top not in path.parents):
            return False
        return self._repository_verdict(specs, path.relative_to(top).as_posix() + ("/" if is_dir else ""))

    @staticmethod
    def _repository_verdict(specs: list, relative: str) -> bool:
        for spec in specs:
            verdict = spec.check_file(relative).include
            if verdict is not None:
                return verdict
        return False


def work_tree(root: Path) -> Optional[Path]:
    """The git work tree holding `root`: the nearest directory with a `.git`, or None."""
    for top in (root, *root.parents):
        if (top / ".git").exists():
            return top
    return None


def _repository_excludes(root: Path) -> tuple[Optional[Path], list[pathspec.GitIgnoreSpec]]:
    """The git work tree holding `root` and its patterns besides the .gitignore files:
    .git/info/exclude, then the global excludes file (git's order)."""
    top = work_tree(root)
    if top is None:
        return None, []
    specs = []
    for file in (top / ".git" / "info" / "exclude", global_excludes_file()):
        spec = _read_spec(file) if file is not None else None
        if spec is not None:
            specs.append(spec)
    return top, specs


def _read_spec(file: Path) -> Optional[pathspec.GitIgnoreSpec]:
    """Git ignore patterns from `file`; None if there is no such file."""
    text = _read_text(file)
    if text is None:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def _any_of(patterns: list[str]) -> Optional[re.Pattern]:
    """One expression that matches what any of the glob `patterns` matches (fnmatchcase)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


def global_excludes_file() -> Optional[Path]:
    """git's `core.excludesFile` from the user's configuration (~/.gitconfig wins over
    $XDG_CONFIG_HOME/git/config, as git reads them), else git's default
    $XDG_CONFIG_HOME/git/ignore. Read from the files: git itself is never run."""
    try:
        home = Path.home()
    except (RuntimeError, KeyError):  # no home directory to find
        return None
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    user_config = os.environ.get("GIT_CONFIG_GLOBAL")
    for config in (Path(user_config) if user_config else home / ".gitconfig", xdg / "git" / "config"):
        value = _excludes_file_setting(config)
        if value:
            return Path(os.path.expanduser(value))
    return xdg / "git" / "ignore"


def _excludes_file_setting(config: Path) -> Optional[str]:
    """`excludesfile` of the `[core]` section of a git config file (the last one set)."""
    text = _read_text(config)
    if text is None:
        return None
    section, value = "", None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            section = line.strip("[]").strip().lower()
            continue
        key, sep, rest = line.partition("=")
        if sep and section == "core" and key.strip().lower() == "excludesfile":
            rest = rest.strip()
            if len(rest) >= 2 and rest[0] == rest[-1] == '"':
                rest = rest[1:-1]
            value = rest or None
    return value


def _read_text(file: Path) -> Optional[str]:
    """A small file of the user's or the project's, read as a regular file only, bounded."""
    try:
        if not file.is_file():
            return None
        return read_regular(str(file), MAX_GITIGNORE_BYTES).decode("utf-8", errors="replace")
    except (OSError, SkippedFile):
        return None


def _display(path: "Path | str", given: Optional[str]) -> Optional[str]:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return given


def discover(paths: list[str], settings: Settings, force_exclude: bool = False
             ) -> tuple[list[Candidate], list[Problem]]:
    """Files to lint (sorted, unique) and problems with the given paths."""
    excluder = Excluder(settings)
    project = excluder.paths
    found: dict[str, Candidate] = {}
    problems: list[Problem] = []
    for given in paths:
        path = Path(given)
        if not os.path.lexists(path):
            problems.append(Problem(given, "No such file or directory"))
            continue
        if path.is_dir():
            if force_exclude and given not in (".", "./") and excluder.excluded_with_parents(path):
                continue
            top = project.canonical(path)
            excluder.floor = top if excluder.respect_gitignore and excluder._gitignored(top, True) else None
            for candidate in _walk(path, excluder, problems):
                if candidate.relative:  # the walk knew it (lexically inside the root)
                    found.setdefault(os.path.join(project.root, *candidate.relative.split("/")), candidate)
                    continue
                candidate.relative = project.key(candidate.path)
                found.setdefault(str(project.canonical(candidate.path)), candidate)
            excluder.floor = None
        elif path.is_symlink() and not path.exists():
            problems.append(Problem(given, "Broken symbolic link (or a link loop)"))
        else:
            if force_exclude and excluder.excluded_with_parents(path):
                continue
            found.setdefault(str(project.canonical(path)),
                             Candidate(str(path), _display(path, given), True, project.key(path)))
    return sorted(found.values(), key=lambda c: c.display), problems


def _walk(top: Path, excluder: Excluder, problems: list[Problem]) -> Iterator[Candidate]:
    seen_dirs: set[tuple[int, int]] = set()
    stack = [str(top)]
    while stack:
        directory = stack.pop()
        try:
            stat = os.stat(directory)
        except OSError as error:
            problems.append(Problem(_display(directory, directory), f"Cannot read directory: {error.strerror}"))
            continue
        key = (stat.st_dev, stat.st_ino)
        if key in seen_dirs:  # a symlink loop, or two links to one directory
            continue
        seen_dirs.add(key)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as error:
            problems.append(Problem(_display(directory, directory), f"Cannot read directory: {error.strerror}"))
            continue
        # Worked out once for the directory, not for each entry: how it is shown and where
        # it is in the project (each entry's are these and its name).
        shown = _display(directory, None)
        inside = excluder.paths.lexically_relative(directory)
        subdirs = []
        for entry in entries:
            name = entry.name
            # As str(Path(entry.path)) spells it.
            entry_path = name if directory == "." else entry.path
            display = entry.path if shown is None else name if shown == "." else os.path.join(shown, name)
            relative = None if inside is None else f"{inside}/{name}" if inside else name
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError as error:  # a symlink loop (ELOOP): report it, do not skip it silently
                if name.endswith(SOURCE_SUFFIXES) and not excluder.excluded(entry_path, False, relative):
                    problems.append(Problem(display, f"Cannot read: {error.strerror or error}"))
                continue
            if is_dir:
                if not excluder.excluded(entry_path, True, relative):
                    subdirs.append(entry_path)
            elif is_file and name.endswith(SOURCE_SUFFIXES):
                if not excluder.excluded(entry_path, False, relative):
                    # `relative` is ProjectPaths.key's answer when the directory is spelled
                    # inside the root (its abspath and the name); None: discover asks key.
                    yield Candidate(entry_path, display, False, relative or "")
            elif not is_file and not is_dir and name.endswith(SOURCE_SUFFIXES):
                if not os.path.exists(entry_path):
                    problems.append(Problem(display, "Broken symbolic link (or a link loop)"))
                elif not excluder.excluded(entry_path, False, relative):
                    # A FIFO, device or socket: the reader reports it (DL902) without opening it.
                    yield Candidate(entry_path, display, False)
        stack.extend(reversed(subdirs))
