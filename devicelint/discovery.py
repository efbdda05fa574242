"""Which files to lint: walk directories, honour excludes and .gitignore files."""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

import pathspec

from devicelint.config import Settings

SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclass
class Candidate:
    path: str  # the path to open
    display: str  # the path to report (as given, or relative to the working directory)
    explicit: bool  # named on the command line


@dataclass
class Problem:
    display: str
    message: str


class Excluder:
    """Exclude patterns work like ruff's: a pattern without `/` matches a file or directory
    name anywhere (`build`, `*.egg-info`); a pattern with `/` matches the path relative to
    the project root (`tests/data`, `src/*/generated`). Walking prunes excluded directories,
    so a directory named on the command line is linted even if its name is excluded."""

    def __init__(self, settings: Settings) -> None:
        self.root = Path(settings.root).resolve()
        patterns = [p.rstrip("/") for p in list(settings.exclude) + list(settings.extend_exclude) if p]
        self.name_patterns = [p for p in patterns if "/" not in p]
        self.path_patterns = [p.lstrip("./") if p.startswith("./") else p for p in patterns if "/" in p]
        self.respect_gitignore = settings.respect_gitignore
        self._gitignores: dict[Path, Optional[pathspec.GitIgnoreSpec]] = {}
        # Set while walking a directory named on the command line that is itself ignored:
        # .gitignore files above it do not apply to what is inside.
        self.floor: Optional[Path] = None

    def _relative(self, path: Path) -> Optional[str]:
        try:
            return Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            return None

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
        path = Path(os.path.abspath(path))
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
            spec = None
            file = directory / ".gitignore"
            try:
                if file.is_file():
                    spec = pathspec.GitIgnoreSpec.from_lines(
                        file.read_text(encoding="utf-8", errors="replace").splitlines()
                    )
            except OSError:
                spec = None
            self._gitignores[directory] = spec
        return self._gitignores[directory]

    def _gitignored(self, path: Path, is_dir: bool) -> bool:
        """Check every .gitignore from the path's directory up to the project root."""
        path = Path(os.path.abspath(path))
        directory = path.parent
        while True:
            spec = self._gitignore(directory)
            if spec is not None:
                relative = path.relative_to(directory).as_posix() + ("/" if is_dir else "")
                if spec.match_file(relative):
                    return True
            if directory in (self.root, self.floor) or directory.parent == directory:
                return False
            if self.root not in directory.parents:
                return False
            directory = directory.parent


def _display(path: Path, given: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return given


def discover(paths: list[str], settings: Settings, force_exclude: bool = False
             ) -> tuple[list[Candidate], list[Problem]]:
    """Files to lint (sorted, unique) and problems with the given paths."""
    excluder = Excluder(settings)
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
            top = Path(os.path.abspath(path))
            excluder.floor = top if excluder.respect_gitignore and excluder._gitignored(top, True) else None
            for candidate in _walk(path, excluder, problems):
                found.setdefault(os.path.abspath(candidate.path), candidate)
            excluder.floor = None
        elif path.is_symlink() and not path.exists():
            problems.append(Problem(given, "Broken symbolic link (or a link loop)"))
        else:
            if force_exclude and excluder.excluded_with_parents(path):
                continue
            found.setdefault(os.path.abspath(path), Candidate(str(path), _display(path, given), True))
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
            elif not is_file and not is_dir and entry.is_symlink():
                if entry.name.endswith(SOURCE_SUFFIXES):
                    problems.append(Problem(_display(entry_path, entry.path), "Broken symbolic link (or a link loop)"))
        stack.extend(reversed(subdirs))
