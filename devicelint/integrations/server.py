"""`devicelint server`: a Language Server (LSP) over stdio, built on pygls.

What it does, and where the work is done:

* **Diagnostics.** The buffer's text, from memory, goes through the linter's own engine
  (`engine.lint_source`, which honours `# noqa` and `# devicelint: ignore[...]`) with the rules
  enabled by `[tool.devicelint]` (`config.load_settings`, `config.enabled_codes`), and the
  findings are filtered as the CLI filters them (`runner.FindingFilter`). A file the configuration excludes gets no diagnostics. Lints run
  on open and save at once, and on change at once after a quiet period, else after a debounce
  (150 ms by default; `DeviceLintServer.change_delay`): a newer change cancels a pending
  lint, and the result of a lint whose text is no longer current is dropped. Each document
  keeps its last tree: an edit re-parses only the top-level statements it changed
  (devicelint.incremental).
* **Project index.** A file of a workspace folder is linted with the folder's project index,
  built as `devicelint <folder>` builds it (`WorkspaceIndex`), so that cross-file findings are
  the CLI's. Open buffers override the disk; a change of one re-lints the open documents
  related to it; files changed outside the editor come through `didChangeWatchedFiles`.
  Lints run one at a time on a worker thread, so requests are answered meanwhile.
* **Positions.** devicelint counts lines from 1 and columns in code points; LSP counts both from
  0, columns in the position encoding agreed at `initialize` (UTF-16 unless the client offers
  UTF-8 or UTF-32). Every column is converted with the text of its line.
* **Code actions.** A finding's fix (marked preferred when safe; an unsafe one says so in its
  title), offered only when the fixed text still parses (as `--fix` checks), and
  `# noqa: CODE` added to the finding's line (`noqa.with_noqa`, as `--add-noqa` does).
* **Hover** over a diagnostic shows its rule's documentation (Markdown) and a link to its page.
* **Notebooks.** LSP notebook documents (`notebookDocument/did*`): the cells are linted as the
  CLI lints an `.ipynb` (`engine.lint_document`: the code cells joined, magics blanked) and the
  diagnostics go to each cell.
* **Failures.** Half-typed code is a DL900 diagnostic like any other. An internal error while
  linting is logged (stderr and `window/logMessage`) and publishes nothing; the server goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from lsprotocol import types
from pygls import uris
from pygls.lsp.server import LanguageServer

from devicelint import __version__
from devicelint.docs_url import rule_url
from devicelint.finding import Finding, Fix

logger = logging.getLogger("devicelint.server")

DEFAULT_DEBOUNCE_MS = 150
SOURCE = "devicelint"
SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}
# Line breaks as Python and LSP count them (str.splitlines would also split on \f, \v, ...).
_NEWLINE_RE = re.compile(r"\r\n|\r|\n")
PYTHON_SUFFIXES = (".py", ".pyi")


# -- positions ----------------------------------------------------------------------------


def split_lines(text: str) -> list[str]:
    return _NEWLINE_RE.split(text)


def code_units(text: str, encoding: str) -> int:
    """Length of `text` in the code units of a position encoding."""
    if encoding == types.PositionEncodingKind.Utf8:
        return len(text.encode("utf-8", "surrogatepass"))
    if encoding == types.PositionEncodingKind.Utf32:
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def lsp_position(lines: Sequence[str], line: int, column: int, encoding: str) -> types.Position:
    """1-based line and code-point column -> LSP position (0-based, in code units)."""
    index = min(max(line - 1, 0), len(lines) - 1) if lines else 0
    text = lines[index] if lines else ""
    if line - 1 >= len(lines):  # past the last line: its end
        return types.Position(line=index, character=code_units(text, encoding))
    return types.Position(line=index, character=code_units(text[: max(column - 1, 0)], encoding))


def code_point_column(text: str, character: int, encoding: str) -> int:
    """LSP character offset on a line -> 0-based code-point column."""
    if encoding == types.PositionEncodingKind.Utf32:
        return min(character, len(text))
    units = 0
    for index, char in enumerate(text):
        if units >= character:
            return index
        units += code_units(char, encoding)
    return len(text)


def _contains(where: types.Range, position: types.Position) -> bool:
    start, end = (where.start.line, where.start.character), (where.end.line, where.end.character)
    return start <= (position.line, position.character) <= end


def _overlaps(a: types.Range, b: types.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and \
        (b.start.line, b.start.character) <= (a.end.line, a.end.character)


# -- configuration ------------------------------------------------------------------------


@dataclass
class Config:
    settings: Any  # devicelint.config.Settings
    codes: list[str]
    rules: list
    keep: Callable[[Finding], bool]  # the run's filter (devicelint.runner.FindingFilter)
    error: Optional[str] = None  # a broken [tool.devicelint]: defaults are used meanwhile


class ConfigCache:
    """`[tool.devicelint]` of the nearest pyproject.toml above a file (as the CLI finds it),
    reloaded when that file changes (its mtime and size are checked on every lint)."""

    def __init__(self) -> None:
        self._loaded: dict[tuple, Config] = {}

    def for_path(self, path: Optional[str], root: str) -> Config:
        from devicelint.config import ConfigError, Settings, find_pyproject, load_settings

        start = Path(path).parent if path else Path(root)
        while not start.exists() and start.parent != start:  # a buffer not saved yet
            start = start.parent
        config_path = find_pyproject(start)
        if config_path is None:
            key: tuple = ("defaults", root)
        else:
            try:
                info = config_path.stat()
                key = (str(config_path), info.st_mtime_ns, info.st_size)
            except OSError:
                key = ("defaults", root)
                config_path = None
        cached = self._loaded.get(key)
        if cached is not None:
            return cached
        error = None
        try:
            settings = load_settings(config_path, start) if config_path else Settings(root=root)
            config = self._resolve(settings)
        except ConfigError as problem:
            error = str(problem)
            config = self._resolve(Settings(root=root))
            config.error = error
        self._loaded[key] = config
        return config

    @staticmethod
    def _resolve(settings) -> Config:
        from devicelint.config import enabled_codes
        from devicelint.engine import enabled_rules
        from devicelint.rule import rule_catalog
        from devicelint.runner import FindingFilter

        codes = enabled_codes(settings, rule_catalog())
        return Config(settings, codes, enabled_rules(codes), FindingFilter(settings, codes).keep)


def _excluded(path: str, settings) -> bool:
    """Whether `exclude`/`extend-exclude` match the file or a directory above it (as the CLI
    applies them under --force-exclude). .gitignore files are not consulted: a file open in
    the editor is one the user chose to look at."""
    from devicelint.discovery import Excluder

    return Excluder(replace(settings, respect_gitignore=False)).excluded_with_parents(Path(path))


class WorkspaceIndex:
    """The project index of one workspace folder, as `devicelint <folder>` builds it: the
    files its configuration's discovery finds (excludes, .gitignore) are the files of the
    run, other local modules are read from disk when a question reaches them, and the
    module facts of the result cache are reused (devicelint.runner: `discover`, `read_file`,
    `_project_index`). Built once, on the first lint that needs it (reading the files'
    bytes, parsing none), and again only when the configuration changes. Lives on the
    worker thread.

    Open buffers override the disk: before each lint, a buffer whose text differs from what
    the index holds for its module is set there (`ProjectIndex.set_text`), and a closed
    buffer's module is read from disk again."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.config: Optional[Config] = None
        self.index = None  # devicelint.project_index.ProjectIndex
        self.synced: dict[str, str] = {}  # real path -> the buffer text the index holds
        self.keys: dict[str, Optional[str]] = {}  # real path -> key rules see (None: not linted)

    def prepare(self, config: Config, buffers: dict[str, str]) -> list[str]:
        """The index up to date with `config` and the open `buffers` (path -> text);
        returns the real paths of the modules whose text changed."""
        if self.index is None or config is not self.config:
            self._build(config)
        changed = []
        for path, text in buffers.items():
            real = os.path.realpath(path)
            if self.synced.get(real) is text or not _under(real, self.index.root):
                continue
            module = self.index.modules.get(real)
            if module is None or module.text != text:
                self.index.set_text(real, text.encode("utf-8", "surrogatepass"), self._key(path))
                changed.append(real)
            self.synced[real] = text
        open_now = {os.path.realpath(path) for path in buffers}
        for real in [r for r in self.synced if r not in open_now]:
            del self.synced[real]  # closed: the module is the file on disk again
            self.index.set_text(real, self._disk(real))
            changed.append(real)
        self.index.new_facts.clear()  # kept by the CLI for its cache; the server writes none
        return changed

    def files_changed(self, paths: list[str], structure: bool, buffers: dict[str, str]) -> list[str]:
        """Files changed on disk outside the editor (`workspace/didChangeWatchedFiles`);
        `structure`: some were created or deleted. An open buffer still wins over its file.
        Returns the real paths of the modules whose text changed (none when the index is
        dropped, to be built again by the next lint)."""
        if self.index is None:
            return []
        if structure:  # the files of the run change: discovery again, on the next lint
            self.index = None
            return []
        open_now = {os.path.realpath(path) for path in buffers}
        changed = []
        for path in paths:
            real = os.path.realpath(path)
            if real in self.index.modules and real not in open_now:
                self.index.set_text(real, self._disk(real))
                changed.append(real)
        return changed

    def related(self, changed: list[str], others: dict[str, str]) -> list[str]:
        """The URIs in `others` (URI -> path) whose findings may use the modules `changed`:
        they import one of them, or one of them imports them (DL008 reads the files that
        import a loader's function)."""
        index = self.index
        found = []
        for uri, path in others.items():
            real = os.path.realpath(path)
            module = index.modules.get(real) if index is not None else None
            if module is None or not index.ready(module):
                continue
            if any(real != target and (index.imports_module(real, target) or (
                    target in index.modules and index.ready(index.modules[target])
                    and index.imports_module(target, real))) for target in changed):
                found.append(uri)
        return found

    def _build(self, config: Config) -> None:
        from devicelint import project_index
        from devicelint.discovery import ProjectPaths, discover
        from devicelint.runner import _open_cache, _project_index, read_file

        settings = config.settings
        candidates, _problems = discover([self.root], settings, bool(settings.force_exclude))
        readable = []
        for candidate in candidates:
            data, problem = read_file(candidate.path, candidate.display, settings.max_file_size)
            if problem is None:
                readable.append((candidate, data))
        cache = _open_cache(settings, ProjectPaths(settings.root), config.codes)
        index = _project_index(settings, readable, cache)
        if index is None:  # no file on disk yet: the buffers alone
            index = project_index.ProjectIndex.build(
                os.path.realpath(str(settings.root)), [], cache.known_facts() if cache else None)
        self.index, self.config, self.synced, self.keys = index, config, {}, {}

    def _key(self, path: str) -> Optional[str]:
        """The path rules see for a buffer, when the CLI would lint it (not excluded)."""
        real = os.path.realpath(path)
        if real not in self.keys:
            settings = self.config.settings
            self.keys[real] = None if _excluded(path, settings) else run_key(path, settings)
        return self.keys[real]

    def _disk(self, real: str) -> bytes:
        from devicelint.runner import read_file

        data, _problem = read_file(real, real, self.config.settings.max_file_size)
        return data if data is not None else b""  # gone: a module with no facts


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def run_key(path: str, settings) -> str:
    """The path rules see for a file, as the CLI gives it: relative to the project root
    (DL010's test exemption, per-file-ignores, the project index's keys)."""
    from devicelint.discovery import ProjectPaths

    return ProjectPaths(settings.root).relative(path) or path


# -- what was published -------------------------------------------------------------------


@dataclass
class Entry:
    """One published diagnostic and what the code actions need to act on it."""

    diagnostic: types.Diagnostic
    code: str
    line: int  # 1-based line of the finding in the published text (for `# noqa`)
    fix: Optional[Fix] = None  # as the engine gave it, in `fix_text` coordinates
    fix_text: str = ""  # the text the fix applies to (a notebook's virtual source)
    fix_edit: Optional[types.TextEdit] = None  # the fix, in the published document
    fix_parses: Optional[bool] = None  # memo of the parse check


@dataclass
class Published:
    uri: str
    version: Optional[int]
    text: str  # the document (or cell) text the positions refer to
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Job:
    """A snapshot to lint: a text document, or a notebook's cells."""

    key: str  # the document's or the notebook's URI
    version: Optional[int]
    path: Optional[str]  # file system path, when the URI has one
    root: str
    encoding: str
    text: str = ""
    cells: Optional[list[tuple[str, bool, str]]] = None  # (cell URI, is code, text)
    buffers: dict[str, str] = field(default_factory=dict)  # open Python documents: path -> text
    others: dict[str, str] = field(default_factory=dict)  # the other open ones: URI -> path
    workspace: Optional[str] = None  # the workspace folder whose project index it uses


@dataclass
class Outcome:
    published: list[Published]
    config_error: Optional[str] = None
    relint: list[str] = field(default_factory=list)  # other open documents whose findings may change


def _lsp_range(lines: Sequence[str], line: int, column: int, end_line: int, end_column: int,
               encoding: str, widen: bool = False) -> types.Range:
    start = lsp_position(lines, line, column, encoding)
    if widen and (end_line, end_column) <= (line, column) and 1 <= line <= len(lines):
        text = lines[line - 1]
        if column - 1 < len(text):  # a point (a parse error): cover the character there
            end_line, end_column = line, column + 1
    end = lsp_position(lines, end_line, max(end_column, 1), encoding)
    if (end.line, end.character) < (start.line, start.character):
        end = start
    return types.Range(start=start, end=end)


def _diagnostic(finding: Finding, where: types.Range) -> types.Diagnostic:
    from devicelint.diagnostics import UNUSED_SUPPRESSION

    tags = [types.DiagnosticTag.Unnecessary] if finding.code == UNUSED_SUPPRESSION else None
    return types.Diagnostic(
        range=where,
        message=finding.message,
        severity=SEVERITY.get(finding.severity, types.DiagnosticSeverity.Warning),
        code=finding.code,
        code_description=types.CodeDescription(href=rule_url(finding.code)),
        source=SOURCE,
        tags=tags,
        data={"fixable": finding.fix is not None},
    )


def lint_text_job(job: Job, configs: ConfigCache, parser=None,
                  workspace: Optional[WorkspaceIndex] = None) -> Outcome:
    """Lint one text document's snapshot (runs on the worker thread). `parser`: the
    document's devicelint.incremental.IncrementalParser, which re-parses only the top-level
    statements an edit changed (the findings are those of a full lint). `workspace`: the
    project index of its workspace folder, brought up to date with the open buffers first
    (None: the document is linted alone)."""
    from devicelint import project_index
    from devicelint.engine import lint_source

    config = configs.for_path(job.path, job.root)
    changed: list[str] = []
    if workspace is not None:
        changed = workspace.prepare(configs.for_path(None, workspace.root), job.buffers)
    if job.path is not None and _excluded(job.path, config.settings):
        relint = workspace.related(changed, job.others) if changed else []
        return Outcome([Published(job.key, job.version, job.text)], config.error, relint)
    # Rules see the path relative to the project root, as the CLI gives it.
    seen_as = run_key(job.path, config.settings) if job.path is not None else job.key
    hooks = {"parse": parser.parse, "starts": parser.statement_starts} if parser is not None else {}
    project_index.use(workspace.index if workspace is not None else None)
    try:
        result = lint_source(seen_as, job.text, config.rules, **hooks)
    finally:
        project_index.use(None)
    relative = seen_as if job.path is not None and seen_as != job.path else None
    findings = [f for f in result.findings if config.keep(f, relative)]
    relint = workspace.related(changed, job.others) if changed else []
    lines = split_lines(job.text)
    entries = []
    for finding in findings:
        where = _lsp_range(lines, finding.line, finding.column, finding.end_line,
                           finding.end_column, job.encoding, widen=True)
        entry = Entry(_diagnostic(finding, where), finding.code, finding.line)
        if finding.fix is not None:
            fix = finding.fix
            entry.fix, entry.fix_text = fix, job.text
            entry.fix_edit = types.TextEdit(
                range=_lsp_range(lines, fix.line, fix.column, fix.end_line, fix.end_column, job.encoding),
                new_text=_with_newlines(fix.content, job.text),
            )
        entries.append(entry)
    return Outcome([Published(job.key, job.version, job.text, entries)], config.error, relint)


def lint_notebook_job(job: Job, configs: ConfigCache) -> Outcome:
    """Lint a notebook's cells as the CLI lints an .ipynb; diagnostics go to each cell."""
    from devicelint.document import parse_document
    from devicelint.engine import lint_document

    cells = job.cells or []
    published = {uri: Published(uri, job.version, text) for uri, _, text in cells}
    config = configs.for_path(job.path, job.root)
    if job.path is not None and _excluded(job.path, config.settings):
        return Outcome(list(published.values()), config.error)
    document = {
        "cells": [{"cell_type": "code" if code else "markdown", "metadata": {}, "source": text,
                   **({"outputs": [], "execution_count": None} if code else {})}
                  for _, code, text in cells],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
    }
    data = json.dumps(document).encode("utf-8")
    display = job.path or job.key
    notebook = parse_document(".ipynb", data)  # built above: always a readable notebook
    result = lint_document(notebook, display, config.rules)
    virtual = notebook.text
    cell_lines = {uri: split_lines(text) for uri, _, text in cells}
    for finding in result.findings:
        if not config.keep(finding) or finding.cell is None or not 1 <= finding.cell <= len(cells):
            continue  # a finding about the whole notebook has no cell to show it in
        uri = cells[finding.cell - 1][0]
        lines = cell_lines[uri]
        line = finding.cell_line
        end_line = line + (finding.end_line - finding.line)
        where = _lsp_range(lines, line, finding.column, end_line, finding.end_column,
                           job.encoding, widen=True)
        entry = Entry(_diagnostic(finding, where), finding.code, line)
        fix = finding.fix
        if fix is not None:
            start, end = notebook.locate(fix.line), notebook.locate(fix.end_line)
            if start is not None and end is not None and start[0] == end[0] == finding.cell:
                entry.fix, entry.fix_text = fix, virtual
                entry.fix_edit = types.TextEdit(
                    range=_lsp_range(lines, start[1], fix.column, end[1], fix.end_column, job.encoding),
                    new_text=_with_newlines(fix.content, published[uri].text),
                )
        published[uri].entries.append(entry)
    return Outcome(list(published.values()), config.error)


def _with_newlines(content: str, text: str) -> str:
    match = _NEWLINE_RE.search(text)
    return _NEWLINE_RE.sub(match.group() if match else "\n", content)


def fix_parses(entry: Entry) -> bool:
    """Whether the text with this fix applied still parses (as `--fix` checks before it
    writes anything)."""
    if entry.fix_parses is None:
        from devicelint.fix import fix_still_parses

        entry.fix_parses = fix_still_parses(entry.fix_text, entry.fix)
    return entry.fix_parses


def noqa_edit(text: str, line: int, code: str, encoding: str) -> Optional[types.TextEdit]:
    """The edit that adds `code` to line `line`'s `# noqa` (None where a comment cannot go,
    e.g. the line ends inside a multi-line string)."""
    from devicelint.noqa import noqa_edits

    new = noqa_edits("<buffer>", text, {line: {code}}, []).get(line)
    if new is None:
        return None
    lines = split_lines(text)
    old = lines[line - 1]
    prefix = 0
    while prefix < min(len(old), len(new)) and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < min(len(old), len(new)) - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    where = _lsp_range(lines, line, prefix + 1, line, len(old) - suffix + 1, encoding)
    return types.TextEdit(range=where, new_text=new[prefix:len(new) - suffix])


# -- the server ---------------------------------------------------------------------------


class DeviceLintServer(LanguageServer):
    def __init__(self, debounce_ms: int = DEFAULT_DEBOUNCE_MS) -> None:
        super().__init__(
            "devicelint", __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[types.NotebookDocumentFilterWithCells(
                    notebook="*", cells=[types.NotebookCellLanguage(language="python")])],
                save=True,
            ),
        )
        self.debounce = max(debounce_ms, 0) / 1000
        self.configs = ConfigCache()
        self.pending: dict[str, asyncio.Task] = {}
        self.last_change: dict[str, float] = {}  # document or notebook URI -> event loop time
        self.published: dict[str, Published] = {}
        self.parsers: dict[str, Any] = {}  # document URI -> its IncrementalParser
        self.notebook_cells: dict[str, set[str]] = {}  # notebook URI -> cells published to
        self.reported_config_errors: set[str] = set()
        self.indexes: dict[str, WorkspaceIndex] = {}  # workspace folder -> its project index
        self.shutdown_requested = False
        # One lint at a time, off the event loop: requests are answered meanwhile.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devicelint-lint")

    # -- scheduling --

    def schedule(self, key: str, delay: float, notebook: bool = False) -> None:
        old = self.pending.pop(key, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self.pending[key] = loop.create_task(self._lint_later(key, delay, notebook))

    def change_delay(self, key: str, now: float) -> float:
        """How long a change waits before it is linted. A change after a quiet period (no
        change of the document for the debounce time, no lint of it pending or running) is
        linted at once: a single edit, a paste or an applied fix waits only for its lint. A
        change inside a burst of typing waits for the debounce time (a newer change starts
        the wait again), so a burst costs one lint at its start and one after its end, not
        one per keystroke (a lint that runs cannot be stopped: it would hold back the next)."""
        previous = self.last_change.get(key)
        self.last_change[key] = now
        if key in self.pending or (previous is not None and now - previous < self.debounce):
            return self.debounce
        return 0.0

    def cancel(self, key: str) -> None:
        task = self.pending.pop(key, None)
        if task is not None:
            task.cancel()

    async def _lint_later(self, key: str, delay: float, notebook: bool) -> None:
        task = asyncio.current_task()
        try:
            if delay:
                await asyncio.sleep(delay)
            job = self._snapshot(key, notebook)
            if job is None:
                return
            loop = asyncio.get_running_loop()
            outcome = await loop.run_in_executor(self.executor, self.guarded_lint, job)
            if isinstance(outcome, str):
                self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=outcome))
                return
            if self._current_version(key, notebook) != job.version:
                return  # the text changed meanwhile: a newer lint is on its way
            self._report_config_error(outcome.config_error)
            self._publish(key, outcome, notebook)
            self.relint(outcome.relint)
            if not notebook:
                loop.run_in_executor(self.executor, self._prepare, key)
        finally:
            if self.pending.get(key) is task:
                del self.pending[key]

    def relint(self, uris: list[str]) -> None:
        """Lint again, after the debounce time, open documents whose findings may have
        changed with another module's text (their own text did not change)."""
        for uri in uris:
            if uri in self.workspace.text_documents and uri not in self.pending:
                self.schedule(uri, self.debounce)

    def guarded_lint(self, job: Job) -> "Outcome | str":
        """Run one lint; on an internal error, log it and return its description instead."""
        try:
            if job.cells is not None:
                return lint_notebook_job(job, self.configs)
            workspace = self._index(job.workspace)
            try:
                return lint_text_job(job, self.configs, self._parser(job.key), workspace)
            except Exception:  # noqa: BLE001 - a bug of the index must not hide the file's findings
                if workspace is None:
                    raise
                logger.exception("devicelint: internal error with the project index of %s", job.workspace)
                self.indexes.pop(job.workspace, None)  # built again by the next lint
                self.parsers.pop(job.key, None)
                return lint_text_job(job, self.configs, self._parser(job.key))
        except Exception as error:  # noqa: BLE001 - the server must outlive any bad input
            logger.exception("devicelint: internal error while linting %s", job.key)
            return f"devicelint: internal error while linting {job.key}: {type(error).__name__}: {error}"

    def _index(self, folder: Optional[str]) -> Optional[WorkspaceIndex]:
        if folder is None:
            return None
        found = self.indexes.get(folder)
        if found is None:
            found = self.indexes[folder] = WorkspaceIndex(folder)
        return found

    def _folder(self, path: Optional[str]) -> Optional[str]:
        """The workspace folder `path` lies in (the innermost one; the root the client gave
        when it gave no folders), else None: such a file is linted alone."""
        if path is None:
            return None
        try:
            folders = [uris.to_fs_path(f.uri) for f in self.workspace.folders.values()]
            root = self.workspace.root_path
        except (RuntimeError, AttributeError):  # before `initialize`
            return None
        real = os.path.realpath(path)
        inside = [os.path.realpath(f) for f in [*folders, root] if f]
        inside = [f for f in inside if _under(real, f)]
        return max(inside, key=len) if inside else None

    def sync_closed(self) -> None:
        """After a document closed: its module is the file on disk again for the project
        indexes, and the open documents related to it are linted again."""
        buffers, others = self._buffers(None)
        for folder, workspace in list(self.indexes.items()):
            if workspace.index is None:
                continue
            mine = {p: t for p, t in buffers.items() if _under(os.path.realpath(p), folder)}

            def sync(workspace=workspace, mine=mine) -> list[str]:
                try:
                    changed = workspace.prepare(workspace.config, mine)
                    return workspace.related(changed, others) if changed else []
                except Exception:  # noqa: BLE001 - the next lint builds it again
                    logger.exception("devicelint: updating the project index of %s", workspace.root)
                    self.indexes.pop(workspace.root, None)
                    return []

            future = self.executor.submit(sync)
            future.add_done_callback(lambda done, loop=asyncio.get_running_loop():
                                     loop.call_soon_threadsafe(self.relint, done.result()))

    def files_changed(self, params: types.DidChangeWatchedFilesParams) -> None:
        """Python files changed on disk outside the editor: their modules are read again
        (created or deleted ones: the index is built again), and the open documents related
        to them are linted again."""
        paths: list[str] = []
        structure = False
        for change in params.changes:
            if change.uri.startswith("file:") and change.uri.endswith(PYTHON_SUFFIXES):
                paths.append(uris.to_fs_path(change.uri))
                structure |= change.type != types.FileChangeType.Changed
        if not paths:
            return
        buffers, others = self._buffers(None)

        def sync() -> list[str]:
            relint: list[str] = []
            for folder, workspace in list(self.indexes.items()):
                mine = [p for p in paths if _under(os.path.realpath(p), folder)]
                if not mine:
                    continue
                try:
                    changed = workspace.files_changed(mine, structure, buffers)
                except Exception:  # noqa: BLE001 - the next lint builds it again
                    logger.exception("devicelint: updating the project index of %s", folder)
                    workspace.index = None
                    changed = []
                if workspace.index is None:  # built again: every open document of it
                    relint += [u for u, p in others.items() if _under(os.path.realpath(p), folder)]
                elif changed:
                    relint += workspace.related(changed, others)
            return relint

        future = self.executor.submit(sync)
        future.add_done_callback(lambda done, loop=asyncio.get_running_loop():
                                 loop.call_soon_threadsafe(self.relint, done.result()))

    def watch_files(self) -> None:
        """Ask the client to send `workspace/didChangeWatchedFiles` for Python files, when
        it can register watchers dynamically."""
        workspace = self.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace is not None else None
        if watched is None or not watched.dynamic_registration:
            return
        self.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
            id="devicelint-python-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=[
                types.FileSystemWatcher(glob_pattern="**/*.py"),
                types.FileSystemWatcher(glob_pattern="**/*.pyi")]))]))

    def _buffers(self, key: Optional[str]) -> tuple[dict[str, str], dict[str, str]]:
        """The open Python documents saved on disk: (path -> text, and URI -> path of those
        other than `key`)."""
        buffers, others = {}, {}
        for uri, document in list(self.workspace.text_documents.items()):
            if uri.startswith("file:") and self._is_python(document):
                path = uris.to_fs_path(uri)
                buffers[path] = document.source
                if uri != key:
                    others[uri] = path
        return buffers, others

    def _parser(self, key: str):
        from devicelint.incremental import IncrementalParser

        parser = self.parsers.get(key)
        if parser is None:
            parser = self.parsers[key] = IncrementalParser()
        return parser

    def _prepare(self, key: str) -> None:
        """After a publish: let the document's parser describe its tree for the next edit."""
        parser = self.parsers.get(key)
        if parser is not None:
            try:
                parser.prepare()
            except Exception:  # noqa: BLE001 - a failure here only costs the next edit time
                logger.exception("devicelint: preparing the incremental parse of %s", key)

    def _root(self) -> str:
        try:
            root = self.workspace.root_path
        except RuntimeError:  # before `initialize`
            root = None
        return root or os.getcwd()

    def _snapshot(self, key: str, notebook: bool) -> Optional[Job]:
        workspace = self.workspace
        encoding = workspace.position_encoding or types.PositionEncodingKind.Utf16
        path = uris.to_fs_path(key) if key.startswith("file:") else None
        if notebook:
            document = workspace.get_notebook_document(notebook_uri=key)
            if document is None:
                return None
            cells = []
            for cell in document.cells:
                text_document = workspace.text_documents.get(cell.document)
                text = text_document.source if text_document is not None else ""
                cells.append((cell.document, cell.kind == types.NotebookCellKind.Code, text))
            root = self._root()
            return Job(key, document.version, path, root, encoding, cells=cells)
        if key not in workspace.text_documents:
            return None  # closed meanwhile
        document = workspace.get_text_document(key)
        if not self._is_python(document):
            return None
        folder = self._folder(path)
        buffers, others = self._buffers(key) if folder is not None else ({}, {})
        return Job(key, document.version, path, self._root(), encoding, text=document.source,
                   buffers=buffers, others=others, workspace=folder)

    @staticmethod
    def _is_python(document) -> bool:
        return document.language_id == "python" or document.uri.endswith(PYTHON_SUFFIXES)

    def _current_version(self, key: str, notebook: bool) -> Optional[int]:
        if notebook:
            document = self.workspace.get_notebook_document(notebook_uri=key)
            return None if document is None else document.version
        if key not in self.workspace.text_documents:
            return -1
        return self.workspace.get_text_document(key).version

    def _publish(self, key: str, outcome: Outcome, notebook: bool) -> None:
        targets = {published.uri for published in outcome.published}
        if notebook:
            for gone in self.notebook_cells.get(key, set()) - targets:  # deleted cells
                self.clear(gone)
            self.notebook_cells[key] = targets
        for published in outcome.published:
            self.published[published.uri] = published
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=published.uri,
                version=published.version,
                diagnostics=[entry.diagnostic for entry in published.entries],
            ))

    def clear(self, uri: str) -> None:
        self.published.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def _report_config_error(self, error: Optional[str]) -> None:
        if error and error not in self.reported_config_errors:
            self.reported_config_errors.add(error)
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error,
                message=f"devicelint: {error} (linting with the default settings until it is fixed)",
            ))

    # -- requests --

    def _edit(self, published: Published, edit: types.TextEdit) -> types.WorkspaceEdit:
        versioned = bool(self.client_capabilities.workspace
                         and self.client_capabilities.workspace.workspace_edit
                         and self.client_capabilities.workspace.workspace_edit.document_changes)
        if versioned:
            # The client refuses the edit if the document changed since it was linted.
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=published.uri, version=published.version),
                edits=[edit])])
        return types.WorkspaceEdit(changes={published.uri: [edit]})

    def code_actions(self, params: types.CodeActionParams) -> list[types.CodeAction]:
        from devicelint.diagnostics import ENGINE_CODES

        published = self.published.get(params.text_document.uri)
        only = params.context.only
        if published is None or (only and not any(
                kind == "quickfix" or types.CodeActionKind.QuickFix.value.startswith(f"{kind}.")
                for kind in only)):
            return []
        asked = {(d.code, d.range.start.line, d.range.start.character) for d in params.context.diagnostics}
        encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        actions = []
        for entry in published.entries:
            where = entry.diagnostic.range
            key = (entry.code, where.start.line, where.start.character)
            if key not in asked and not _overlaps(where, params.range):
                continue
            if entry.fix_edit is not None and fix_parses(entry):
                what = entry.fix.description or "apply the fix"
                title = (f"Fix {entry.code}: {what}" if entry.fix.safe
                         else f"Fix {entry.code} (unsafe fix: review the change): {what}")
                actions.append(types.CodeAction(
                    title=title, kind=types.CodeActionKind.QuickFix,
                    diagnostics=[entry.diagnostic], is_preferred=entry.fix.safe,
                    edit=self._edit(published, entry.fix_edit),
                ))
            if entry.code not in ENGINE_CODES:
                edit = noqa_edit(published.text, entry.line, entry.code, encoding)
                if edit is not None:
                    actions.append(types.CodeAction(
                        title=f"Suppress {entry.code} on this line (# noqa: {entry.code})",
                        kind=types.CodeActionKind.QuickFix, diagnostics=[entry.diagnostic],
                        edit=self._edit(published, edit),
                    ))
        return actions

    def hover(self, params: types.HoverParams) -> Optional[types.Hover]:
        from devicelint.rule import all_rules

        published = self.published.get(params.text_document.uri)
        if published is None:
            return None
        hits = [e for e in published.entries if _contains(e.diagnostic.range, params.position)]
        if not hits:
            return None
        registry = all_rules()
        parts = []
        for code in dict.fromkeys(entry.code for entry in hits):
            rule = registry.get(code)
            if rule is None:
                continue
            parts.append(f"### {code} `{rule.name}`\n\n{rule.summary}\n\n"
                         f"{_demote_headings(rule.docs())}\n\n[{code} on the web]({rule_url(code)})")
        if not parts:
            return None
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)),
            range=hits[0].diagnostic.range,
        )


def _demote_headings(markdown: str) -> str:
    """Rule docs use `##` sections; under the hover's `###` title they become `####`."""
    return re.sub(r"^(#{1,5}) ", lambda m: "#" * (len(m.group(1)) + 2) + " ", markdown, flags=re.M)


def create_server(debounce_ms: int = DEFAULT_DEBOUNCE_MS) -> DeviceLintServer:
    server = DeviceLintServer(debounce_ms)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: DeviceLintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: DeviceLintServer, params: types.DidChangeTextDocumentParams) -> None:
        key = params.text_document.uri
        ls.schedule(key, ls.change_delay(key, asyncio.get_running_loop().time()))

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: DeviceLintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    async def did_close(ls: DeviceLintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.cancel(params.text_document.uri)
        ls.parsers.pop(params.text_document.uri, None)
        ls.last_change.pop(params.text_document.uri, None)
        ls.clear(params.text_document.uri)
        ls.sync_closed()

    @server.feature(types.INITIALIZED)
    def initialized(ls: DeviceLintServer, params: types.InitializedParams) -> None:
        ls.watch_files()

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def watched_files(ls: DeviceLintServer, params: types.DidChangeWatchedFilesParams) -> None:
        ls.files_changed(params)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    async def notebook_open(ls: DeviceLintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0, notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    async def notebook_change(ls: DeviceLintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        key = params.notebook_document.uri
        ls.schedule(key, ls.change_delay(key, asyncio.get_running_loop().time()), notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    async def notebook_save(ls: DeviceLintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0, notebook=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    async def notebook_close(ls: DeviceLintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        key = params.notebook_document.uri
        ls.cancel(key)
        for uri in ls.notebook_cells.pop(key, set()):
            ls.clear(uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    async def code_action(ls: DeviceLintServer, params: types.CodeActionParams):
        # The parse check of a fix can take a parse of the file: off the event loop.
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(ls.executor, ls.code_actions, params)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: DeviceLintServer, params: types.HoverParams):
        return ls.hover(params)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: DeviceLintServer, *args) -> None:
        ls.shutdown_requested = True
        for key in list(ls.pending):
            ls.cancel(key)

    return server
