"""Lint a set of paths: discovery, cache, parallel workers, suppression by config."""

from __future__ import annotations

import fnmatch
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional, Sequence

from devicelint import __version__
from devicelint.cache import CACHE_DIR_NAME, Cache, entry_key
from devicelint.cache import warn as cache_warning
from devicelint.config import Settings, enabled_codes, expand_codes, load_settings
from devicelint.discovery import Candidate, ProjectPaths, discover
from devicelint.finding import Finding
from devicelint.rule import rule_catalog, signature
from devicelint.source import (
    UNREADABLE, SkippedFile, decode_source, in_package_directory, needs_parse,
    python_syntax_error, read_regular,
)
from devicelint.source import diagnostic as _diagnostic

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


def _lint_bytes(path: str, display: str, data: bytes, codes: Sequence[str]) -> list[dict]:
    if path.endswith(".ipynb"):
        from devicelint.engine import enabled_rules
        from devicelint.notebook import lint_notebook

        return [f.to_dict() for f in lint_notebook(display, data, enabled_rules(codes)).findings]
    try:
        source = decode_source(data)
    except ValueError as error:
        return [_diagnostic(UNREADABLE, display, f"Cannot read file: {error}").to_dict()]
    catalog = rule_catalog()
    tokens = [catalog[code].tokens for code in codes if catalog[code].has_handlers]
    # A file with suppression comments still goes to the engine: DL901 (unused suppression)
    # must judge them even when no rule can match.
    if not needs_parse(source, tokens, judge_suppressions="DL901" in codes):
        # No enabled rule can match: the engine (and libcst) is not even imported.
        errors = python_syntax_error(display, source) if "DL900" in codes else []
        return [f.to_dict() for f in errors]
    from devicelint.engine import enabled_rules, lint_source

    result = lint_source(display, source, enabled_rules(codes), disk_path=path)
    return [f.to_dict() for f in result.findings]


def _worker(job: tuple[str, str, bytes, tuple[str, ...]]) -> list[dict]:
    path, display, data, codes = job
    try:
        return _lint_bytes(path, display, data, codes)
    except Exception as error:  # noqa: BLE001 - one bad file must not end the run
        return [_internal_error(display, error).to_dict()]


def _internal_error(display: str, error: Exception) -> Finding:
    return _diagnostic(
        "DL900", display,
        f"Internal error while linting this file ({type(error).__name__}: {error}); "
        "please report it with the file",
    )


def _read(candidate: Candidate, max_size: int) -> tuple[Optional[bytes], Optional[Finding]]:
    try:
        return read_regular(candidate.path, max_size), None
    except FileNotFoundError:
        return None, _diagnostic(UNREADABLE, candidate.display, "No such file or directory (deleted while linting?)")
    except SkippedFile as error:  # a FIFO, a device, too large: never read
        return None, _diagnostic(UNREADABLE, candidate.display, str(error))
    except OSError as error:
        reason = error.strerror or str(error)
        return None, _diagnostic(UNREADABLE, candidate.display, f"Cannot read file: {reason}")


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


# (root, per-file-ignores) -> PathIgnores of the last call: fix.py and the server call per finding.
_path_ignores_memo: list = [None, None]


def _ignored_by_path(finding: Finding, settings: Settings) -> bool:
    if not settings.per_file_ignores:
        return False
    key = (settings.root, {k: list(v) for k, v in settings.per_file_ignores.items()})
    if _path_ignores_memo[0] != key:
        _path_ignores_memo[:] = [key, PathIgnores(settings)]
    return _path_ignores_memo[1].ignored(finding)


def lint_paths(
    paths: Sequence[str],
    overrides: Optional[Overrides] = None,
    *,
    use_cache: bool = True,
    jobs: Optional[int] = None,
    settings: Optional[Settings] = None,
) -> LintRun:
    overrides = overrides or Overrides()
    settings = settings or resolve_settings(paths, overrides)
    codes = enabled_codes(settings, rule_catalog())
    candidates, problems = discover(list(paths), settings, bool(settings.force_exclude))
    findings = [_diagnostic(UNREADABLE, p.display, p.message) for p in problems]
    project = ProjectPaths(settings.root)
    cache = _open_cache(settings, project, codes) if use_cache else None
    jobs_to_run = []
    keys = []
    cached = 0
    relative_of: dict[str, Optional[str]] = {}
    for candidate in candidates:
        inside = not candidate.relative.startswith("../")
        relative_of[candidate.display] = candidate.relative if inside else None
        data, problem = _read(candidate, settings.max_file_size)
        if problem is not None:
            findings.append(problem)
            continue
        key = entry_key(data, candidate.relative, in_package_directory(candidate.path)) \
            if cache is not None else ""
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            cached += 1
            findings.extend(Finding.from_dict({**f, "path": candidate.display}) for f in hit)
            continue
        # Rules see the path relative to the project root (DL010 exempts tests/ by path);
        # findings are reported under the path as the user wrote it.
        jobs_to_run.append((candidate.path, candidate.relative or candidate.display, data, tuple(codes)))
        keys.append((key, candidate.display))
    for (key, display), result in zip(keys, _run_jobs(jobs_to_run, jobs)):
        if cache is not None:
            cache.put(key, [{k: v for k, v in f.items() if k != "path"} for f in result])
        findings.extend(Finding.from_dict({**f, "path": display}) for f in result)
    if cache is not None:
        cache.save()
    path_ignores = PathIgnores(settings, project)
    findings = [f for f in findings if f.code in codes]
    findings = [f for f in findings if not path_ignores.ignored(f, relative_of.get(f.path))]
    findings.sort(key=Finding.sort_key)
    return LintRun(findings, len(candidates), cached, codes, settings)


def lint_text(data: bytes, display: str, settings: Settings) -> LintRun:
    """Lint a buffer that is not read from disk (standard input: an editor's buffer) as the
    file `display` would be: its rules, per-file ignores and path-dependent rules apply."""
    codes = enabled_codes(settings, rule_catalog())
    project = ProjectPaths(settings.root)
    relative = project.relative(display) if display != "-" else None
    if len(data) > settings.max_file_size:
        found = [_diagnostic(UNREADABLE, display, f"File is {len(data):,} bytes, over max-file-size "
                                                  f"({settings.max_file_size:,}); skipped")]
    else:
        found = [Finding.from_dict({**f, "path": display})
                 for f in _worker((display, relative or display, data, tuple(codes)))]
    path_ignores = PathIgnores(settings, project)
    found = [f for f in found if f.code in codes and not path_ignores.ignored(f, relative)]
    found.sort(key=Finding.sort_key)
    return LintRun(found, 1, 0, codes, settings)


def _open_cache(settings: Settings, project: ProjectPaths, codes: list[str]) -> Optional[Cache]:
    """The project's cache, or None when its directory is refused (a symbolic link, outside
    the project root): linting goes on uncached, with a warning."""
    root = project.root
    directory = settings.cache_dir or os.path.join(root, CACHE_DIR_NAME)
    cache = Cache(Path(root), Path(directory), settings.fingerprint(codes, f"{__version__}+{signature()}"))
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


def _run_jobs(jobs_to_run: list, jobs: Optional[int]) -> list[list[dict]]:
    workers = jobs or available_cpus()
    if workers <= 1 or len(jobs_to_run) < PARALLEL_THRESHOLD:
        return [_worker(job) for job in jobs_to_run]
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    if method == "fork":
        # Import libcst and the rules once here, so that every forked worker inherits them.
        from devicelint.engine import enabled_rules

        enabled_rules(jobs_to_run[0][3])
    context = multiprocessing.get_context(method)
    # Largest files first, in small chunks: the workers finish together instead of one
    # of them parsing a big file alone at the end.
    order = sorted(range(len(jobs_to_run)), key=lambda i: -len(jobs_to_run[i][2]))
    chunk = max(1, min(8, len(jobs_to_run) // (workers * 16)))
    results: list[list[dict]] = [[] for _ in jobs_to_run]
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                               initializer=_worker_init, initargs=(os.getpid(),))
    try:
        for index, result in zip(order, pool.map(_worker, [jobs_to_run[i] for i in order], chunksize=chunk)):
            results[index] = result
    except BaseException:
        # Ctrl-C or an error: do not lint the remaining files before exiting (a `with`
        # block would wait for every queued file).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return results


def _worker_init(parent: int) -> None:
    """Runs first in every lint worker. A worker must never outlive the main process: if that
    is killed (SIGTERM from an editor cancelling a run, SIGKILL, a closed terminal), idle
    workers would otherwise wait forever on the task queue, holding the caller's stdout
    pipe open. On Linux the kernel sends SIGKILL when the parent dies (PR_SET_PDEATHSIG);
    elsewhere a thread watches the parent pid. Ctrl-C is left to the main process, which
    cancels the pool (the workers then exit without a traceback each)."""
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
