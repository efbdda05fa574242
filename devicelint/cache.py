"""Result cache: per (devicelint version and rules, enabled codes, settings) one JSON file in
the project's cache directory, mapping each file's key (its content hash and its path relative
to the project root) to its findings. Unchanged files cost a read and a hash; a run in which
nothing changed since the last one was served whole costs a stat of each path the results
depend on (the run's record, `Cache.last_run`).

The cache is data, never code (no pickle): a file that is truncated, mutated, planted or from
another version is dropped, never fatal; every entry is checked field by field before it is
served. It is written only inside the project root, through no symbolic link (see
`devicelint.datafile`), and pruned by age and size.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Optional

from devicelint.datafile import SafeDir, UnsafePath, blake2b, decode, encode, sha256

CACHE_DIR_NAME = ".devicelint_cache"
FORMAT = "devicelint-results-3"  # bump when the layout of an entry changes
MAX_AGE_DAYS = 30  # an entry (or another settings' cache file) unused this long is dropped
MAX_BYTES = 64 * 1024 * 1024  # one cache file; beyond it the least recently used entries go
MAX_READ = 2 * MAX_BYTES
GITIGNORE = b"# Created by devicelint\n*\n"
CACHEDIR_TAG = b"Signature: 8a477f597d28d172789f06886806bc55\n# devicelint cache (https://bford.info/cachedir/)\n"

_KEY_RE = re.compile(r"^[0-9a-f]{32}$")
_CODE_RE = re.compile(r"^[A-Z]+[0-9]+$")
_STALE_NAME = re.compile(r"^((results|run)-[0-9a-f]+\.(json|pickle)|\.tmp-[0-9]+-[0-9a-f]+)$")
RUN_FORMAT = "devicelint-run-1"
# A path changed this recently when a run is recorded could change again within the same
# timestamp tick (1-4 ms on Linux, 2 s on FAT) and keep its stat: such a run is not recorded.
RACY_NS = 3_000_000_000
_INT_MAX = 1 << 31


def content_key(data: bytes) -> str:
    # SHA-256 (hardware-assisted where the CPU has it) hashes source about twice as fast as
    # BLAKE2b here: every file of a warm run is hashed.
    return sha256(data).hexdigest()


def entry_key(data: bytes, relative: str, in_package: bool = False) -> str:
    """What a file's result depends on besides the settings: its bytes, its path relative
    to the project root (DL010 exempts tests/, a notebook is linted as one by its suffix),
    and whether its directory is a package (DL010: library code)."""
    suffix = os.path.splitext(relative)[1]
    hasher = blake2b(digest_size=16)
    parts = (content_key(data), relative, suffix, "package" if in_package else "")
    for part in (text.encode("utf-8", "surrogateescape") for text in parts):
        hasher.update(len(part).to_bytes(8, "little"))
        hasher.update(part)
    return hasher.hexdigest()


def path_state(path: str) -> Optional[list[int]]:
    """What a stat of `path` (links followed) says of its content and place: changed
    content, a rename, a new or removed entry of a directory change one of these. None when
    there is nothing there (or it cannot be looked at)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return [info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino, info.st_dev]


def _state(value: Any) -> bool:
    return type(value) is list and len(value) == 5 and all(type(n) is int for n in value)


def _today() -> int:
    return int(time.time() // 86400)


class Cache:
    """Open with `Cache(root, directory, fingerprint)`; `problem` says why it is off, if it is.
    `lazy`: the results file is read by `load()`, not now (a run served whole by its
    record, `last_run`, never reads it)."""

    def __init__(self, root: Path, directory: Path, fingerprint: str, lazy: bool = False) -> None:
        self.fingerprint = fingerprint
        self.file = f"results-{fingerprint}.json"
        self.run_file = f"run-{fingerprint}.json"
        self._unread = lazy
        # key -> [day last used, findings] or [day last used, findings, what they used of
        # other files: the numbers of their rows in `rows`]
        self.entries: dict[str, list[Any]] = {}
        # Each distinct dependency row (devicelint.project_index.ProjectIndex.finish_job)
        # once: files share most of them (timm: 13,811 rows noted, 3,806 distinct), so a run
        # decodes and checks each once. Checked for shape when first asked (`dependency_row`).
        self.rows: list[Any] = []
        self._row_shapes: dict[int, bool] = {}
        self._row_numbers: Optional[dict[tuple, int]] = None  # row -> its number, when writing
        # The project index's facts of each module (devicelint.project_index.facts_key ->
        # [day last used, facts]): a warm run parses no module to learn its imports.
        self.facts: dict[str, list[Any]] = {}
        self.dirty = False
        self.problem: Optional[str] = None
        self.today = _today()
        self._loaded_stat: Optional[tuple[int, int]] = None
        self.root = str(Path(root).resolve())
        self.parts = _parts_inside(self.root, str(directory))
        if self.parts is None:
            self.problem = f"cache directory {directory} is not inside the project root {self.root}"
            return
        try:
            folder = SafeDir.inside(self.root, self.parts, create=False)
        except UnsafePath as error:
            self.problem = f"cache directory refused: {error}"
            return
        except OSError:
            return
        if folder is None:
            self._unread = False  # no cache directory yet: nothing to read
            return
        with folder:
            if not lazy:
                self._read(folder)

    @property
    def enabled(self) -> bool:
        return self.parts is not None and self.problem is None

    def _folder(self, create: bool = False) -> Optional[SafeDir]:
        try:
            return SafeDir.inside(self.root, self.parts, create=create)
        except (UnsafePath, OSError):
            return None

    def load(self) -> None:
        """Read the results file, if `lazy` left it unread."""
        if not self._unread:
            return
        self._unread = False
        folder = self._folder()
        if folder is not None:
            with folder:
                self._read(folder)

    # -- the record of a whole run -------------------------------------------------------
    # A run whose every file was served from the cache is recorded in a small file of its
    # own: each file's findings (as stored rows) and the stat of every path the results
    # depend on (the files, the directories above them, what the project index read, listed
    # or climbed). The next run with the same files, settings and devicelint serves that
    # record when every stat is unchanged, the same day, without reading the results file,
    # hashing the files or checking their dependencies (issue 17: warm, nothing changed).
    def last_run(self) -> Optional[dict]:
        """The record of the last run served whole from the cache, checked field by field
        (findings rows are checked by `unpack` when served); None when there is none, it is
        from another day or its shape is wrong."""
        if not self.enabled:
            return None
        folder = self._folder()
        if folder is None:
            return None
        with folder:
            payload = decode(RUN_FORMAT, folder.read(self.run_file, MAX_READ))
        if not isinstance(payload, dict) or payload.get("fingerprint") != self.fingerprint \
                or payload.get("day") != self.today or type(payload.get("index")) is not bool:
            return None
        files, paths = payload.get("files"), payload.get("paths")
        if type(files) is not dict or type(paths) is not list:
            return None
        for rows in files.values():
            if type(rows) is not list:
                return None
        for item in paths:
            if type(item) is not list or len(item) != 2 or type(item[0]) is not str \
                    or not (item[1] is None or _state(item[1])):
                return None
        return payload

    def record_run(self, files: dict[str, list], states: dict[str, Optional[list]], index: bool,
                   started: int) -> bool:
        """Write the record of a run served whole (`files`: each file's relative path -> its
        stored findings rows; `states`: path -> `path_state`); not when a path changed
        after the run `started` (time.time_ns(): it may have been read before the change) or
        within RACY_NS before (then False)."""
        if not self.enabled:
            return False
        racy = started - RACY_NS
        if any(state is not None and (state[0] >= racy or state[1] >= racy) for state in states.values()):
            return False
        payload = {"fingerprint": self.fingerprint, "day": self.today, "index": index, "files": files,
                   "paths": [[path, state] for path, state in states.items()]}
        folder = self._folder(create=True)
        if folder is None:
            return False
        with folder:
            try:
                folder.create(".gitignore", GITIGNORE)
                folder.create("CACHEDIR.TAG", CACHEDIR_TAG)
                folder.replace(self.run_file, encode(RUN_FORMAT, payload))
            except OSError:
                return False
        return True

    def rows_of(self, key: str) -> list:
        """The stored findings rows of entry `key` (served: checked by `get`)."""
        return self.entries[key][1]

    def _read(self, folder: SafeDir) -> None:
        info = folder.stat(self.file)
        if info is not None:
            self._loaded_stat = (info.st_mtime_ns, info.st_size)
        self.entries, self.facts, self.rows = self._entries_of(folder.read(self.file, MAX_READ))

    def _entries_of(self, data: Optional[bytes]) -> tuple[dict[str, list[Any]], dict[str, list[Any]], list]:
        """(findings entries, index facts entries, dependency rows) of a cache file's bytes."""
        from devicelint import collector

        with collector.paused():  # JSON holds no cycles: freed by reference counting
            payload = decode(FORMAT, data)
        if not isinstance(payload, dict) or payload.get("fingerprint") != self.fingerprint:
            return {}, {}, []
        rows = payload.get("rows")
        rows = rows if type(rows) is list else []
        return (self._checked(payload.get("entries"), list, len(rows)),
                self._checked(payload.get("facts"), dict, 0), rows)

    def _checked(self, raw: Any, kind: type, rows: int) -> dict[str, list[Any]]:
        if not isinstance(raw, dict):
            return {}
        entries = {}
        for key, value in raw.items():
            # The shell is checked here; the content when it is served (findings in `get`,
            # dependency rows by `dependency_row`, facts by
            # devicelint.project_index.facts_from_json).
            if (
                _KEY_RE.match(key)
                and isinstance(value, list) and (len(value) == 2 or len(value) == 3 and kind is list)
                and type(value[0]) is int and 0 <= value[0] <= self.today + 1
                and isinstance(value[1], kind)
                and (len(value) == 2 or _row_numbers(value[2], rows))
            ):
                entries[key] = value
        return entries

    def known_facts(self) -> dict[str, Any]:
        """The project index's facts of earlier runs, by key."""
        return {key: value[1] for key, value in self.facts.items()}

    def record_facts(self, used: set[str], new: dict[str, dict]) -> None:
        """Keep the facts this run used (dated today) and those it learnt."""
        for key in used:
            entry = self.facts.get(key)
            if entry is not None and entry[0] != self.today:
                entry[0] = self.today
                self.dirty = True
        for key, facts in new.items():
            self.facts[key] = [self.today, facts]
            self.dirty = True

    def get(self, key: str) -> Optional[list[dict]]:
        entry = self.entries.get(key)
        if entry is None:
            return None
        findings = [unpack(row) for row in entry[1]]
        if None in findings:
            del self.entries[key]  # a foreign or garbled entry: relint, and forget it
            self.dirty = True
            return None
        if entry[0] != self.today:
            entry[0] = self.today
            self.dirty = True
        return findings

    def dependencies(self, key: str) -> list[int]:
        """The numbers of the dependency rows the entry's findings used (what they used of
        other files; `dependency_row` gives each); [] when nothing."""
        entry = self.entries.get(key)
        return entry[2] if entry is not None and len(entry) == 3 else []

    def dependency_row(self, number: int) -> Optional[list]:
        """Row `number` (strings and lists of strings, as ProjectIndex.finish_job writes
        them; checked by ProjectIndex.still_valid), or None when it has another shape (then
        the entries that use it are linted again)."""
        shape = self._row_shapes.get(number)
        if shape is None:
            shape = self._row_shapes[number] = _dependency_row(self.rows[number])
        return self.rows[number] if shape else None

    def put(self, key: str, findings: list[dict], used: Optional[list] = None) -> None:
        rows = [pack(f) for f in findings]
        if None in rows:
            return
        self.entries[key] = [self.today, rows, self._numbers(used)] if used else [self.today, rows]
        self.dirty = True

    def _numbers(self, used: list) -> list[int]:
        """The numbers of dependency rows `used` in `rows`, added there when new."""
        numbers = self._row_numbers
        if numbers is None:
            numbers = self._row_numbers = {}
            for number, row in enumerate(self.rows):
                if self.dependency_row(number) is not None:
                    numbers.setdefault(_row_key(row), number)
        found = []
        for row in used:
            key = _row_key(row)
            number = numbers.get(key)
            if number is None:
                number = numbers[key] = len(self.rows)
                self.rows.append(row)
                self._row_shapes[number] = True
            found.append(number)
        return found

    def save(self) -> None:
        """Write atomically (entries unused for MAX_AGE_DAYS dropped, the file kept under
        MAX_BYTES); an unusable directory only means the next run is not cached."""
        if not self.enabled or self._unread:
            return
        oldest = self.today - MAX_AGE_DAYS
        expired = [k for k, v in [*self.entries.items(), *self.facts.items()] if v[0] < oldest]
        if not self.dirty and not expired:
            return
        try:
            folder = SafeDir.inside(self.root, self.parts, create=True)
        except (UnsafePath, OSError):
            return
        if folder is None:
            return
        with folder:
            try:
                self._write(folder, oldest)
            except OSError:
                pass  # a read-only checkout or a full disk still lints; it just is not cached

    def _write(self, folder: SafeDir, oldest: int) -> None:
        folder.create(".gitignore", GITIGNORE)  # never over an existing file or link
        folder.create("CACHEDIR.TAG", CACHEDIR_TAG)
        info = folder.stat(self.file)
        if info is not None and (info.st_mtime_ns, info.st_size) != self._loaded_stat:
            # Another run wrote meanwhile: keep its entries too (their rows renumbered
            # into ours).
            entries, facts, rows = self._entries_of(folder.read(self.file, MAX_READ))
            for key, value in entries.items():
                if key not in self.entries:
                    if len(value) == 3:
                        used = [rows[n] for n in value[2]]
                        if not all(_dependency_row(row) for row in used):
                            continue
                        value = [value[0], value[1], self._numbers(used)]
                    self.entries[key] = value
            for key, value in facts.items():
                self.facts.setdefault(key, value)
        kept = {k: v for k, v in self.entries.items() if v[0] >= oldest}
        facts = {k: v for k, v in self.facts.items() if v[0] >= oldest}
        kept, rows = _renumbered(kept, self.rows)
        data = encode(FORMAT, {"fingerprint": self.fingerprint, "entries": kept, "facts": facts, "rows": rows})
        if len(data) > MAX_BYTES:
            # Findings first: facts only save an `ast` parse, findings a lint.
            kept, rows = _renumbered(_newest(kept, rows, MAX_BYTES), rows)
            data = encode(FORMAT, {"fingerprint": self.fingerprint, "entries": kept, "rows": rows})
        folder.replace(self.file, data)
        _prune_others(folder, self.file, oldest)


def _renumbered(entries: dict[str, list[Any]], rows: list) -> tuple[dict[str, list[Any]], list]:
    """`entries` with their row numbers into a table of only the rows they use."""
    numbers: dict[int, int] = {}
    table: list = []
    renumbered = {}
    for key, value in entries.items():
        if len(value) == 3:
            used = []
            for old in value[2]:
                new = numbers.get(old)
                if new is None:
                    new = numbers[old] = len(table)
                    table.append(rows[old])
                used.append(new)
            value = [value[0], value[1], used]
        renumbered[key] = value
    return renumbered, table


def _row_numbers(numbers: Any, rows: int) -> bool:
    if type(numbers) is not list:
        return False
    for number in numbers:
        if type(number) is not int or not 0 <= number < rows:
            return False
    return True


def _row_key(row: list) -> tuple:
    return tuple(tuple(item) if type(item) is list else item for item in row)


def _newest(entries: dict[str, list[Any]], rows: list, budget: int) -> dict[str, list[Any]]:
    """The most recently used entries that fit in about `budget` bytes of JSON (with the
    dependency rows they are the first to use)."""
    import json

    kept: dict[str, list[Any]] = {}
    counted: set[int] = set()
    total = 1024
    for key, value in sorted(entries.items(), key=lambda item: -item[1][0]):
        total += len(key) + len(json.dumps(value, separators=(",", ":"))) + 8
        for number in value[2] if len(value) == 3 else ():
            if number not in counted:
                counted.add(number)
                total += len(json.dumps(rows[number], separators=(",", ":"))) + 1
        if total > budget:
            break
        kept[key] = value
    return kept


def _prune_others(folder: SafeDir, current: str, oldest: int) -> None:
    """Cache files of other settings or versions unused for MAX_AGE_DAYS, caches of the old
    pickle format (never read) and temporary files left by a killed run. Regular files only."""
    import stat

    cutoff = oldest * 86400
    for name in folder.names():
        if name == current or not _STALE_NAME.match(name):
            continue
        info = folder.stat(name)
        if info is None or not stat.S_ISREG(info.st_mode):
            continue
        if name.endswith(".pickle") or info.st_mtime < cutoff or (
                name.startswith(".tmp-") and info.st_mtime < time.time() - 86400):
            folder.unlink(name)


def _parts_inside(root: str, directory: str) -> Optional[tuple[str, ...]]:
    """The components of `directory` below `root` (lexically, after normalising), or None if
    it is the root itself or outside it (`cache-dir = "../x"`, an absolute path elsewhere)."""
    directory = os.path.normpath(os.path.join(root, directory))
    try:
        relative = os.path.relpath(directory, root)
    except ValueError:  # another drive
        return None
    parts = tuple(Path(relative).parts)
    if not parts or relative == os.curdir or parts[0] == os.pardir or os.path.isabs(relative):
        return None
    return parts


# A finding is stored as one JSON array (smaller and faster to parse and check than an
# object per finding): the fields of `Finding.to_dict` without `path`, in this order.
_FIELDS = ("code", "name", "line", "column", "end_line", "end_column", "message", "severity")
_FIX_FIELDS = ("line", "column", "end_line", "end_column", "content", "safe", "description")


def pack(finding: dict) -> Optional[list]:
    """The row for `finding` (a `Finding.to_dict()` without `path`), or None if it holds
    something a lint result never does (then the file is not cached)."""
    if not set(finding) <= {*_FIELDS, "fix", "cell", "cell_line", "related"}:
        return None
    fix = finding.get("fix")
    row = [finding.get(name) for name in _FIELDS]
    row.append([fix.get(name) for name in _FIX_FIELDS] if isinstance(fix, dict) else None)
    row.append(finding.get("cell"))
    row.append(finding.get("cell_line"))
    related = finding.get("related")
    if related:
        row.append([[r.get("line"), r.get("column"), r.get("message"), r.get("path")]
                    + ([r["cell"], r.get("cell_line")] if "cell" in r else []) for r in related])
    return row if unpack(row) is not None else None


def unpack(row: Any) -> Optional[dict]:
    """The finding dict of a stored row, or None unless every field has its type."""
    if type(row) is not list or len(row) not in (11, 12):
        return None
    code, name, line, column, end_line, end_column, message, severity, fix, cell, cell_line = row[:11]
    if (
        type(code) is not str or type(name) is not str or type(message) is not str or type(severity) is not str
        or type(line) is not int or type(column) is not int
        or type(end_line) is not int or type(end_column) is not int
        or not (0 <= line < _INT_MAX and 0 <= column < _INT_MAX and 0 <= end_line < _INT_MAX
                and 0 <= end_column < _INT_MAX)
        or _CODE_RE.match(code) is None
    ):
        return None
    finding = {"code": code, "name": name, "line": line, "column": column, "end_line": end_line,
               "end_column": end_column, "message": message, "severity": severity}
    if fix is not None:
        if type(fix) is not list or len(fix) != 7:
            return None
        f_line, f_column, f_end_line, f_end_column, content, safe, description = fix
        if not (_count(f_line) and _count(f_column) and _count(f_end_line) and _count(f_end_column)
                and type(content) is str and type(safe) is bool and type(description) is str):
            return None
        finding["fix"] = dict(zip(_FIX_FIELDS, fix))
    if cell is not None:
        if not (_count(cell) and (cell_line is None or _count(cell_line))):
            return None
        finding["cell"] = cell
        finding["cell_line"] = cell_line
    elif cell_line is not None:
        return None
    if len(row) == 12:
        related = _related(row[11])
        if related is None:
            return None
        finding["related"] = related
    return finding


def _related(rows: Any) -> Optional[list]:
    """The related locations of a stored row (each [line, column, message, path or None],
    and in a notebook [..., cell, line within the cell])."""
    if type(rows) is not list or not rows:
        return None
    found = []
    for item in rows:
        if type(item) is not list or len(item) not in (4, 6):
            return None
        line, column, message, path = item[:4]
        if not (_count(line) and _count(column) and type(message) is str
                and (path is None or type(path) is str)):
            return None
        entry = {"line": line, "column": column, "message": message}
        if path is not None:
            entry["path"] = path
        if len(item) == 6:
            if not (_count(item[4]) and _count(item[5])):
                return None
            entry["cell"], entry["cell_line"] = item[4], item[5]
        found.append(entry)
    return found


def _dependency_row(row: Any) -> bool:
    """A non-empty list of strings and lists of strings (loops, not generators: a warm run
    checks thousands of rows)."""
    if type(row) is not list or not row:
        return False
    for item in row:
        if type(item) is not str:
            if type(item) is not list:
                return False
            for part in item:
                if type(part) is not str:
                    return False
    return True


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value < _INT_MAX  # bool is not an int here


def warn(problem: str) -> None:
    print(f"devicelint: warning: not caching results: {problem}", file=sys.stderr)
