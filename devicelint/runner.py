"""The pipeline: discover -> read -> lint -> filter -> cache, for a set of paths.

One read path: `read_file` gives a file's bytes (or a DL902 finding), `lint_bytes` turns bytes
into findings (devicelint.document parses them, the engine lints them; a file no enabled
rule's tokens occur in is only syntax-checked, without importing the engine or libcst).
One filter: `FindingFilter` keeps the findings of the enabled codes that no
`per-file-ignores` entry drops; linting, `--fix` and the language server all use it.
(`# noqa` comments are the engine's: it applies them where the text is.)
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional, Sequence

from devicelint import __version__
from devicelint.cache import CACHE_DIR_NAME, Cache, entry_key, path_state, unpack
from devicelint.cache import warn as cache_warning
from devicelint.config import Settings, enabled_codes, expand_codes, load_settings
from devicelint.discovery import ProjectPaths, discover
from devicelint.diagnostics import (
    SYNTAX_ERROR, UNREADABLE, UNUSED_SUPPRESSION, diagnostic, python_syntax_error, unreadable,
)
from devicelint import accepted, collector, project_index
from devicelint.finding import Finding
from devicelint.rule import rule_catalog, signature
from devicelint.source import SkippedFile, in_package_directory, read_regular

# Below this many files to (re)lint, a process pool costs more than it saves.
PARALLEL_THRESHOLD = 16


@dataclass
class Overrides:
    """What the command line says; None means "as configured"."""

    select: Optional[list[str]] = None
    ignore: Optional[list[str]] = None
    extend_select: Optional[list[str]] = None
    exclude: Optional[list[str]] = None
    extend_exclude: Optional[list[str]] = None
    per_file_ignores: Optional[dict[str, list[str]]] = None
    force_exclude: Optional[bool] = None
    config: Optional[str] = None


@dataclass
class LintRun:
    """The findings of a run, with how many files it checked and served from the cache."""

    findings: list[Finding]
    files: int = 0
    cached: int = 0
    enabled: list[str] = field(default_factory=list)
    settings: Optional[Settings] = None


def resolve_settings(paths: Sequence[str], overrides: Overrides) -> Settings:
    start = Path(paths[0]) if paths else Path.cwd()
    if not start.exists():
        start = Path.cwd()
    settings = load_settings(Path(overrides.config) if overrides.config else None, start)
    updates = {}
    for name in ("select", "ignore", "extend_select", "exclude", "per_file_ignores", "force_exclude"):
        value = getattr(overrides, name)
        if value is not None:
            updates[name] = value
    if overrides.extend_exclude:
        updates["extend_exclude"] = settings.extend_exclude + overrides.extend_exclude
    if overrides.extend_select:
        updates["extend_select"] = settings.extend_select + overrides.extend_select
    return replace(settings, **updates)


def needs_parse(source: str, tokens: list[tuple[str, ...]], judge_suppressions: bool = False) -> bool:
    """True if some enabled rule's prefilter tokens occur in the text (or a suppression
    comment, when DL901 must judge it)."""
    if judge_suppressions and ("noqa" in source.lower() or "devicelint:" in source):
        return True
    found: dict[str, bool] = {}  # each token looked for once: groups share `cuda`, `.to(`...
    for group in tokens:
        if not group:
            return True
        for token in group:
            hit = found.get(token)
            if hit is None:
                hit = found[token] = token in source
            if hit:
                return True
    return False


def lint_bytes(path: str, display: str, data: bytes, codes: Sequence[str]) -> list[Finding]:
    """The findings of the enabled `codes` in a file's bytes (`path` says what kind of file:
    a notebook or Python; findings are reported under `display`)."""
    from devicelint.document import parse_document  # not needed when every file is cached

    try:
        document = parse_document(path, data)
    except ValueError as error:
        return [unreadable(display, error)]
    if document.notebook is None:
        catalog = rule_catalog()
        tokens = [catalog[code].tokens for code in codes if catalog[code].has_handlers]
        # A file with suppression comments still goes to the engine: DL901 (unused
        # suppression) must judge them even when no rule can match.
        if not needs_parse(document.text, tokens, judge_suppressions=UNUSED_SUPPRESSION in codes):
            # No enabled rule can match: the engine (and libcst) is not even imported.
            # (Not parsed again when the project index or a gate has parsed the same text.)
            if SYNTAX_ERROR not in codes or accepted.holds(document.text):
                return []
            return python_syntax_error(display, document.text)
    from devicelint.engine import enabled_entries, lint_document

    # Catalogue entries: the engine imports only the rules whose tokens occur in the text.
    return lint_document(document, display, enabled_entries(codes)).findings


def read_file(path: str, display: str, max_size: int) -> tuple[Optional[bytes], Optional[Finding]]:
    """(the file's bytes, None), or (None, the DL902 finding saying why it cannot be read)."""
    try:
        return read_regular(path, max_size), None
    except (OSError, SkippedFile) as error:  # SkippedFile: a FIFO, a device, too large
        return None, unreadable(display, error)


def lint_file(path: str, display: str, codes: Sequence[str], max_size: int) -> list[Finding]:
    """Read and lint one file, unfiltered by configuration."""
    data, problem = read_file(path, display, max_size)
    return [problem] if problem is not None else lint_bytes(path, display, data, codes)


class ReportedPaths:
    """Where a finding points, as a report names it. Rules see every file by its path from
    the project root (results do not depend on the working directory, so cached ones hold
    wherever devicelint runs); a report names the finding's file, and each other file of the
    project it cites (in its message and its `related` locations), from the working
    directory: as given on the command line when that file was linted, else
    `ProjectPaths.display`."""

    def __init__(self, project: ProjectPaths, candidates: Sequence = ()) -> None:
        self.project = project
        self.given = {c.relative: c.display for c in candidates if c.relative}

    def named(self, key: str) -> str:
        found = self.given.get(key)
        return found if found is not None else self.project.display(key)

    def finding(self, data: dict, display: str) -> Finding:
        """The finding as reported under `display`, from its dict as rules made it."""
        related = data.get("related")
        if related and any(r.get("path") is not None for r in related):
            message, shown, renamed = data["message"], [], {}
            for entry in related:
                key = entry.get("path")
                if key is not None:
                    if key not in renamed:
                        renamed[key] = self.named(key)
                        message = _cite(message, key, renamed[key])
                    entry = {**entry, "path": renamed[key]}
                shown.append(entry)
            data = {**data, "message": message, "related": shown}
        return Finding.from_dict({**data, "path": display})


def _cite(message: str, key: str, name: str) -> str:
    """`message` naming `name` wherever it names the path `key` as a whole (not the end of a
    longer path: `a.py` in `data.py`)."""
    if key == name:
        return message
    return re.sub(rf"(?<![\w./\\-]){re.escape(key)}(?![\w/\\-])", lambda _m: name, message)


def _worker(job: tuple[str, str, bytes, tuple[str, ...]]) -> Optional[tuple]:
    """(the file's findings, what they used of other files, the index facts read meanwhile:
    devicelint.project_index.ProjectIndex.finish_job); in a run's worker process, None when
    another worker claimed the file first (it built the file's model: ProjectIndex.share_jobs),
    and with a fourth item, {key: such a triple}, for the files this one claimed so."""
    index = project_index.current()
    if index is not None and not index.claim(job[1]):
        return None  # the worker that claimed it returns its result
    result = _lint_job(job, index)
    extra: dict = {}
    while index is not None:
        follow = index.follow_ups()  # (their lints may build models of further files)
        if not follow:
            break
        for other in follow:
            extra[other[1]] = _lint_job(other, index)
    return (*result, extra) if extra else result


def _lint_job(job: tuple[str, str, bytes, tuple[str, ...]], index) -> tuple[list[dict], list, dict]:
    path, display, data, codes = job
    if index is not None:
        index.start_job(display)
    try:
        findings = [f.to_dict() for f in lint_bytes(path, display, data, codes)]
    except Exception as error:  # noqa: BLE001 - one bad file must not end the run
        findings = [_internal_error(display, error).to_dict()]
    used, facts = index.finish_job() if index is not None else ([], {})
    return findings, used, facts


def _internal_error(display: str, error: Exception) -> Finding:
    return diagnostic(
        SYNTAX_ERROR, display,
        f"Internal error while linting this file ({type(error).__name__}: {error}); "
        "please report it with the file",
    )


class PathIgnores:
    """`per-file-ignores`, matched against paths relative to the project root (resolved, so
    neither the working directory nor a symlinked path to the project changes the result)."""

    def __init__(self, settings: Settings, project: Optional[ProjectPaths] = None) -> None:
        known = list(rule_catalog())
        self.project = project or ProjectPaths(settings.root)
        self.rules = [(pattern, expand_codes(codes, known, "per-file-ignores"))
                      for pattern, codes in settings.per_file_ignores.items()]

    def ignored(self, finding: Finding, relative: Optional[str] = None) -> bool:
        if not self.rules:
            return False
        if relative is None:
            relative = self.project.relative(finding.path)
        if relative is None:
            relative = Path(finding.path).as_posix()
        name = relative.rsplit("/", 1)[-1]
        for pattern, codes in self.rules:
            if finding.code in codes and (
                fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)
                or relative.startswith(pattern.rstrip("/") + "/")
            ):
                return True
        return False


class FindingFilter:
    """The one filter of a run's findings: the enabled codes (select, ignore, extend-select)
    and `per-file-ignores`."""

    def __init__(self, settings: Settings, codes: Sequence[str],
                 project: Optional[ProjectPaths] = None) -> None:
        self.codes = frozenset(codes)
        self.path_ignores = PathIgnores(settings, project)

    def keep(self, finding: Finding, relative: Optional[str] = None) -> bool:
        """`relative`: the finding's path relative to the project root, when known."""
        return finding.code in self.codes and not self.path_ignores.ignored(finding, relative)


def lint_paths(
    paths: Sequence[str],
    overrides: Optional[Overrides] = None,
    *,
    use_cache: bool = True,
    jobs: Optional[int] = None,
    settings: Optional[Settings] = None,
) -> LintRun:
    started = time.time_ns()
    overrides = overrides or Overrides()
    settings = settings or resolve_settings(paths, overrides)
    codes = enabled_codes(settings, rule_catalog())
    candidates, problems = discover(list(paths), settings, bool(settings.force_exclude))
    findings = [diagnostic(UNREADABLE, p.display, p.message) for p in problems]
    project = ProjectPaths(settings.root)
    reported = ReportedPaths(project, candidates)
    cache = _open_cache(settings, project, codes, lazy=True) if use_cache else None
    if cache is not None and not problems:
        whole = _served_whole(cache, candidates, reported)
        if whole is not None:
            selected = FindingFilter(settings, codes, project)
            relative_of = {c.display: c.relative for c in candidates}
            whole = [f for f in whole if selected.keep(f, relative_of.get(f.path))]
            whole.sort(key=Finding.sort_key)
            return LintRun(whole, len(candidates), len(candidates), codes, settings)
        cache.load()
    jobs_to_run = []
    keys = []
    cached = 0
    relative_of: dict[str, Optional[str]] = {}
    readable = []
    for candidate in candidates:
        inside = not candidate.relative.startswith("../")
        relative_of[candidate.display] = candidate.relative if inside else None
        data, problem = read_file(candidate.path, candidate.display, settings.max_file_size)
        if problem is not None:
            findings.append(problem)
            continue
        readable.append((candidate, data))
    index = _project_index(settings, readable, cache, named=paths)
    if index is not None:
        index.freeze_models = True  # kept until the run ends (ProjectIndex.model_of)
    holds: dict[int, bool] = {}  # whether each dependency row of the cache holds, this run
    served: dict[str, list] = {}  # relative path -> the stored rows served for it
    packages: dict[str, bool] = {}  # directory -> whether it holds an __init__.py
    for candidate, data in readable:
        # Rules see the path relative to the project root (DL010 exempts tests/ by path);
        # findings are reported under the path as the user wrote it.
        seen_as = candidate.relative or candidate.display
        key = entry_key(data, candidate.relative, _in_package(candidate.path, packages)) \
            if cache is not None else ""
        hit = cache.get(key) if cache is not None else None
        if hit is not None and not _still_valid(index, cache, cache.dependencies(key), holds):
            hit = None
        if hit is not None:
            cached += 1
            served[candidate.relative] = cache.rows_of(key)
            findings.extend(reported.finding(f, candidate.display) for f in hit)
            continue
        jobs_to_run.append((candidate.path, seen_as, data, tuple(codes)))
        keys.append((key, candidate.display))
    try:
        project_index.use(index)  # read by the semantic models (forked workers inherit it)
        results = _run_jobs(jobs_to_run, jobs)
    finally:
        project_index.use(None)
    collector.started()  # also when no file needed linting
    learnt: dict = {}
    for (key, display), (result, used, facts) in zip(keys, results):
        if cache is not None:
            cache.put(key, [{k: v for k, v in f.items() if k != "path"} for f in result], used)
            learnt.update(facts)
        findings.extend(reported.finding(f, display) for f in result)
    if cache is not None:
        if index is not None:  # the index facts read here and in the workers
            learnt.update(index.new_facts)
            cache.record_facts(index.facts_used, learnt)
        cache.save()
        if not problems and candidates and len(served) == len(candidates) \
                and not any(c.relative.startswith("../") for c in candidates):
            _record_whole(cache, project, candidates, served, index, started)
    selected = FindingFilter(settings, codes, project)
    findings = [f for f in findings if selected.keep(f, relative_of.get(f.path))]
    findings.sort(key=Finding.sort_key)
    return LintRun(findings, len(candidates), cached, codes, settings)


def _served_whole(cache: Cache, candidates: list,
                  reported: ReportedPaths) -> Optional[list[Finding]]:
    """The findings of the cache's record of the last run (`Cache.last_run`) when it was a
    run of these same files and nothing it depends on changed; else None."""
    record = cache.last_run()
    if record is None or record["index"] != project_index.ENABLED:
        return None
    files = record["files"]
    if len(files) != len(candidates):
        return None
    found = []
    for candidate in candidates:
        rows = files.get(candidate.relative)
        if rows is None:
            return None
        for row in rows:
            finding = unpack(row)
            if finding is None:
                return None
            found.append(reported.finding(finding, candidate.display))
    for path, state in record["paths"]:
        if path_state(path) != state:
            return None
    return found


def _record_whole(cache: Cache, project: ProjectPaths, candidates: list, served: dict[str, list],
                  index: Optional["project_index.ProjectIndex"], started: int) -> None:
    """Record a run whose every file was served from the cache: the paths its results
    depend on (each file, the directories above it up to the root, and what the project
    index read, listed or resolved, with the directories above those) with their stat."""
    paths: dict[str, None] = {}

    def with_parents(path: str, top: str) -> None:
        paths[path] = None
        folder = os.path.dirname(path)
        while folder == top or folder.startswith(top.rstrip(os.sep) + os.sep):
            paths[folder] = None
            if folder == top:
                break
            folder = os.path.dirname(folder)

    root = project.root
    for candidate in candidates:
        with_parents(os.path.join(root, *candidate.relative.split("/")), root)
    if index is not None:
        files, folders = index.consulted()
        for path in files:
            with_parents(path, index.root)
        paths.update(dict.fromkeys(folders))
    cache.record_run(served, {path: path_state(path) for path in paths}, project_index.ENABLED, started)


def _in_package(path: str, known: dict[str, bool]) -> bool:
    """`in_package_directory`, asked once per directory."""
    if not path.endswith(".py"):
        return in_package_directory(path)
    folder = os.path.dirname(path)
    found = known.get(folder)
    if found is None:
        found = known[folder] = in_package_directory(path)
    return found


def _project_index(settings: Settings, readable: list,
                   cache: Optional[Cache] = None, named: Sequence[str] = ()) -> Optional["project_index.ProjectIndex"]:
    """The index of the files of this run and the local modules they import (issue 13):
    what one file may learn from another. Nothing is parsed here: a module's facts are read
    when first asked (devicelint.project_index); a module whose facts the cache holds (same
    content, same module name) is not parsed."""
    if not project_index.ENABLED or not readable:
        return None
    files = [(c.path, c.relative or c.display, data) for c, data in readable]
    reals = project_index.real_paths(c.path for c, _data in readable)
    # Local modules are read only under the project root, or, for files linted outside it
    # (a --config elsewhere), under the directory that holds the paths the user named (`.`
    # of a repository whose code all lies in `pkg/` still resolves `from pkg.utils import`)
    # and the files linted.
    root = project_root = os.path.realpath(str(settings.root))
    places = [os.path.dirname(real) for real in reals]
    if not all(p == root or p.startswith(root + os.sep) for p in places):
        given = [os.path.realpath(p) for p in named if os.path.isdir(p)]
        root = os.path.commonpath(places + given)
    from devicelint.gate import reads_with_ast

    with collector.paused():  # `ast` trees hold no cycles: freed as each file is read
        return project_index.ProjectIndex.build(root, files, cache.known_facts() if cache else None,
                                                recording=cache is not None, shown_from=project_root,
                                                gate_reads=reads_with_ast, reals=reals)


def _still_valid(index, cache: Cache, used: list[int], holds: dict[int, bool]) -> bool:
    """Whether what a cached result used of other files (its facts, calls, models, module
    lookups: the numbers of its rows in the cache) is unchanged; a result that used nothing
    is valid as it is. Each row is checked once per run (`holds`), whichever files share it."""
    if not used:
        return True
    if index is None:
        return False
    for number in used:
        found = holds.get(number)
        if found is None:
            row = cache.dependency_row(number)
            found = holds[number] = row is not None and index.still_valid([row])
        if not found:
            return False
    return True


def lint_text(data: bytes, display: str, settings: Settings) -> LintRun:
    """Lint a buffer that is not read from disk (standard input: an editor's buffer) as the
    file `display` would be: its rules, per-file ignores and path-dependent rules apply."""
    codes = enabled_codes(settings, rule_catalog())
    project = ProjectPaths(settings.root)
    relative = project.relative(display) if display != "-" else None
    if len(data) > settings.max_file_size:
        found = [diagnostic(UNREADABLE, display, f"File is {len(data):,} bytes, over max-file-size "
                                                 f"({settings.max_file_size:,}); skipped")]
    else:
        reported = ReportedPaths(project)
        found = [reported.finding(f, display)
                 for f in _worker((display, relative or display, data, tuple(codes)))[0]]
    selected = FindingFilter(settings, codes, project)
    found = [f for f in found if selected.keep(f, relative)]
    found.sort(key=Finding.sort_key)
    return LintRun(found, 1, 0, codes, settings)


def _open_cache(settings: Settings, project: ProjectPaths, codes: list[str],
                lazy: bool = False) -> Optional[Cache]:
    """The project's cache, or None when its directory is refused (a symbolic link, outside
    the project root): linting goes on uncached, with a warning. `lazy`: see Cache."""
    root = project.root
    directory = settings.cache_dir or os.path.join(root, CACHE_DIR_NAME)
    cache = Cache(Path(root), Path(directory), settings.fingerprint(codes, f"{__version__}+{signature()}"),
                  lazy=lazy)
    if cache.problem is not None:
        cache_warning(cache.problem)
        return None
    return cache


def available_cpus() -> int:
    """CPUs this process may run on (taskset, cgroups' cpusets), not the machine's count."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _run_jobs(jobs_to_run: list, jobs: Optional[int]) -> list[tuple[list[dict], list, dict]]:
    workers = jobs or available_cpus()
    if workers <= 1 or len(jobs_to_run) < PARALLEL_THRESHOLD:
        results = []
        for job in jobs_to_run:
            results.append(_worker(job))
            collector.started()  # the first file imported what linting needs (collector.start_up)
        return results
    # Imported here: a run of a handful of files (an editor's, a hook's) never starts a pool
    # and does not pay for importing one (issue 17: one small file in 0.3 s, start-up included).
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    if method == "fork":
        # Import libcst and the rules once here, so that every forked worker inherits them.
        from devicelint.engine import enabled_rules

        enabled_rules(jobs_to_run[0][3])
        from devicelint import libcst_core, safe_parse

        if sum(len(job[2]) for job in jobs_to_run) > safe_parse.QUICK_INITS_AFTER:
            # The node classes' quick __init__s for the parses (libcst_core.QuickInits),
            # made once here (and kept by the parent's compiled-code table) rather than
            # in every worker.
            libcst_core.quick_inits()
    collector.started()  # before the fork: the workers inherit the imports frozen
    context = multiprocessing.get_context(method)
    if method == "fork" and project_index.current() is not None:
        project_index.current().share_facts()  # the workers read each module once between them
    order = _dealing_order(jobs_to_run)
    chunk = max(1, min(8, len(jobs_to_run) // (workers * 16)))
    if method == "fork" and project_index.current() is not None:
        project_index.current().share_jobs(jobs_to_run)  # a model's file is linted where it was built
    results: list = [None for _ in jobs_to_run]
    claimed: dict[str, tuple] = {}  # key -> the result a worker gave with another job's
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_worker_init, initargs=(os.getpid(),))
    try:
        for index, result in zip(order, pool.map(_worker, [jobs_to_run[i] for i in order], chunksize=chunk)):
            if result is not None and len(result) > 3:
                claimed.update(result[3])
                result = result[:3]
            results[index] = result
    except BaseException:
        # Ctrl-C or an error: do not lint the remaining files before exiting (a `with`
        # block would wait for every queued file).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    for index, job in enumerate(jobs_to_run):
        if results[index] is None:  # claimed by the worker that built its model
            found = claimed.get(job[1])
            results[index] = found if found is not None else _lint_job(job, project_index.current())
    return results


def _dealing_order(jobs_to_run: list) -> list[int]:
    """The order the workers are dealt the jobs in, in small chunks: a folder's files one
    after another, largest first, the folders by their largest file. The files of a folder
    mostly ask the project index about the same modules, and a worker that lints them
    together builds those modules' models once (torchvision, -j 2: 24.97 -> 24.77 G
    instructions); the workers still finish together instead of one of them parsing a big
    file alone at the end (the last chunks hold the folders of small files)."""
    largest: dict[str, int] = {}
    for job in jobs_to_run:
        folder = os.path.dirname(job[0])
        largest[folder] = max(largest.get(folder, 0), len(job[2]))

    def place(i: int) -> tuple:
        folder = os.path.dirname(jobs_to_run[i][0])
        return -largest[folder], folder, -len(jobs_to_run[i][2])

    return sorted(range(len(jobs_to_run)), key=place)


def _worker_init(parent: int) -> None:
    """Runs first in every lint worker. A worker must never outlive the main process: if that
    is killed (SIGTERM from an editor cancelling a run, SIGKILL, a closed terminal), idle
    workers would otherwise wait forever on the task queue, holding the caller's stdout
    pipe open. On Linux the kernel sends SIGKILL when the parent dies (PR_SET_PDEATHSIG);
    elsewhere a thread watches the parent pid. Ctrl-C is left to the main process, which
    cancels the pool (the workers then exit without a traceback each)."""
    import signal  # here: a run without a pool does not import it (issue 17: start-up)
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watched = _set_parent_death_signal()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
    if not watched:
        threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _set_parent_death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        return libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


def run_lint(paths: Sequence[str], select: Optional[list[str]] = None) -> list[Finding]:
    """Library entry point: findings for `paths` with the project's configuration."""
    return lint_paths(paths, Overrides(select=select), use_cache=False).findings


def apply_fixes(
    findings: list[Finding],
    *,
    unsafe: bool = False,
    diff_only: bool = False,
    settings: Optional[Settings] = None,
    enabled: Optional[Sequence[str]] = None,
    max_rounds: Optional[int] = None,
):
    """`--fix` / `--diff` over a run's findings: the run's rules (`enabled`, default from
    `settings`) and filter; safe fixes, and unsafe ones with `unsafe`. Returns
    devicelint.fix.FixOutcome."""
    from devicelint.engine import enabled_rules
    from devicelint.fix import MAX_ROUNDS, fix_files

    settings = settings if settings is not None else Settings()
    codes = list(enabled) if enabled is not None else enabled_codes(settings, rule_catalog())
    project = ProjectPaths(settings.root)
    selected = FindingFilter(settings, codes, project)
    return fix_files(
        findings, enabled_rules(codes), lambda fix: fix.safe or unsafe, selected.keep,
        diff_only=diff_only, max_rounds=max_rounds or MAX_ROUNDS, lint_path=project.key,
    )
