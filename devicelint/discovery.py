"""Which files to lint: walk directories, honour excludes and .gitignore files."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pathspec

from devicelint.config import Settings
from devicelint.source import SkippedFile, read_regular

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")
MAX_GITIGNORE_BYTES = 10_000_000


@dataclass
class Candidate:
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
        self.respect_gitignore = settings.respect_gitignore
        self._gitignores: dict[Path, Optional[pathspec.GitIgnoreSpec]] = {}
        # Set while walking a directory named on the command line that is itself ignored:
        # .gitignore files above it do not apply to what is inside.
        self.floor: Optional[Path] = None
        # (git work tree, its .git/info/exclude and global patterns), found on first use.
        self._repository: Optional[tuple[Optional[Path], list]] = None

    def _relative(self, path: Path) -> Optional[str]:
        return self.paths.relative(path)

    def matches(self, path: Path) -> bool:
        name = path.name
        if any(fnmatch.fnmatchcase(name, p) for p in self.name_patterns):
            return True
        relative = self._relative(path)
        return relative is not None and any(fnmatch.fnmatchcase(relative, p) for p in self.path_patterns)

    def excluded(self, path: Path, is_dir: bool) -> bool:
        if self.matches(path):
            return True
        return self.respect_gitignore and self._gitignored(path, is_dir)

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

    def _gitignored(self, path: Path, is_dir: bool) -> bool:
        """As git decides: the nearest .gitignore with a pattern matching the path (the
        last such pattern in it, `!` re-including) wins, from the path's directory up to
        the project root; then the repository's .git/info/exclude, then the user's global
        excludes file."""
        path = self.paths.canonical(path)
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

    def _repository_ignored(self, path: Path, is_dir: bool) -> bool:
        if self._repository is None:
            self._repository = _repository_excludes(self.root)
        top, specs = self._repository
        if top is None or (path != top and top not in path.parents):
            return False
        relative = path.relative_to(top).as_posix() + ("/" if is_dir else "")
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
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines()) if text is not None else None


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


def _display(path: Path, given: str) -> str:
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
    stack = [top]
    while stack:
        directory = stack.pop()
        try:
            stat = directory.stat()
        except OSError as error:
            problems.append(Problem(_display(directory, str(directory)), f"Cannot read directory: {error.strerror}"))
            continue
        key = (stat.st_dev, stat.st_ino)
        if key in seen_dirs:  # a symlink loop, or two links to one directory
            continue
        seen_dirs.add(key)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as error:
            problems.append(Problem(_display(directory, str(directory)), f"Cannot read directory: {error.strerror}"))
            continue
        subdirs = []
        for entry in entries:
            entry_path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
                is_file = entry.is_file()
            except OSError as error:  # a symlink loop (ELOOP): report it, do not skip it silently
                if entry.name.endswith(SOURCE_SUFFIXES) and not excluder.excluded(entry_path, False):
                    problems.append(Problem(_display(entry_path, entry.path),
                                            f"Cannot read: {error.strerror or error}"))
                continue
            if is_dir:
                if not excluder.excluded(entry_path, True):
                    subdirs.append(entry_path)
            elif is_file and entry.name.endswith(SOURCE_SUFFIXES):
                if not excluder.excluded(entry_path, False):
                    yield Candidate(str(entry_path), _display(entry_path, entry.path), False)
            elif not is_file and not is_dir and entry.name.endswith(SOURCE_SUFFIXES):
                if not os.path.exists(entry_path):
                    problems.append(Problem(_display(entry_path, entry.path), "Broken symbolic link (or a link loop)"))
                elif not excluder.excluded(entry_path, False):
                    # A FIFO, device or socket: the reader reports it (DL902) without opening it.
                    yield Candidate(str(entry_path), _display(entry_path, entry.path), False)
        stack.extend(reversed(subdirs))
