"""The command line: `devicelint [PATHS]`, `devicelint rule CODE`, `devicelint confirm`."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import click

from devicelint import __version__, collector

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl-C

# Set by --verbose: an internal error prints its traceback, not just one line.
_verbose = False


def _set_verbose(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    global _verbose
    _verbose = _verbose or bool(value)
    return value


verbose_option = click.option(
    "--verbose", is_flag=True, expose_value=False, is_eager=True, callback=_set_verbose,
    help="On an internal error, print the traceback too.",
)


def _codes(values: tuple[str, ...]) -> Optional[list[str]]:
    """`--select DL001,DL004 --select DL005` -> ["DL001", "DL004", "DL005"]."""
    if not values:
        return None
    return [code.strip() for value in values for code in value.split(",") if code.strip()]


def _patterns(values: tuple[str, ...]) -> Optional[list[str]]:
    return _codes(values) if values else None


LAZY_COMMANDS = ("confirm", "server")


class DefaultGroup(click.Group):
    """A group whose first argument, if not a subcommand, goes to `check`:
    `devicelint src/` is `devicelint check src/`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in ("--help", "-h"):
            return super().parse_args(ctx, args)
        if args and args[0] == "--version":
            return super().parse_args(ctx, args)
        # `confirm` and `server` are loaded lazily (get_command), so not in self.commands.
        if not args or args[0] not in {*self.commands, *LAZY_COMMANDS}:
            args = ["check", *args]
        # --verbose works with every command: `check` lists it; for the others it is taken
        # out here (only before a `--`, after which the arguments are the user's command).
        global _verbose
        end = args.index("--") if "--" in args else len(args)
        _verbose = "--verbose" in args[:end]
        if args[0] != "check" and _verbose:
            args = [arg for arg in args[:end] if arg != "--verbose"] + args[end:]
        return super().parse_args(ctx, args)

    def main(self, *args, **kwargs):
        # Before any command imports libcst or the rules: their dataclasses' methods come
        # compiled from earlier runs (a third of a small file's lint, start-up included).
        from devicelint import dataclass_code

        dataclass_code.install()
        return super().main(*args, **kwargs)

    def get_command(self, ctx: click.Context, name: str):
        if name == "check":
            # Only the parts of libcst that linting uses are imported (devicelint.libcst_core).
            from devicelint import libcst_core

            libcst_core.install()
        else:
            # The collector is off while a run imports (collector.start_up, from `run`):
            # only `check` switches it on itself; `confirm` runs the user's program.
            collector.started()
        if name == "confirm":
            from devicelint.runtime.command import confirm

            return confirm
        if name == "server":
            from devicelint.integrations.command import server

            return server
        return super().get_command(ctx, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def invoke(self, ctx: click.Context):
        """Every way a command can end, mapped to ruff's exit codes: whatever goes wrong
        inside devicelint is exit 2 with one line on stderr (never 1, which means
        "findings", not even with --exit-zero); Ctrl-C is 130."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise  # click's own: usage errors (2), --help, ...
        except KeyboardInterrupt:
            click.echo("devicelint: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:
            raise  # the reader went away (`devicelint | head`): click exits quietly
        except Exception as error:  # noqa: BLE001 - the one place that turns bugs into exit 2
            _internal_error(error)


def _exit(status) -> None:
    """End the process as Python's own exit does (the atexit handlers, then the standard
    streams flushed; the status read as SystemExit's), without tearing the interpreter down:
    freeing every module, class and function one by one, and a last full collection over
    them, cost ~30 ms of CPU, a sixth of linting one small file (issue 17). While another
    thread that Python would wait for runs (a pool being cancelled, a server), Python exits."""
    threading = sys.modules.get("threading")
    if threading is not None and any(thread.is_alive() and not thread.daemon and thread is not threading.main_thread()
                                     for thread in threading.enumerate()):
        sys.exit(status)
    if status is None:
        code = 0
    elif isinstance(status, int):
        code = status
    else:
        print(status, file=sys.stderr)
        code = 1
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:  # Python's exit skips a closed one
                stream.flush()
        except Exception:  # noqa: BLE001 - Python's exit reports a failed flush as status 120
            code = 120
    os._exit(code)


def _internal_error(error: BaseException) -> None:
    if _verbose:
        import traceback

        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    detail = str(error).strip().splitlines()[0] if str(error).strip() else ""
    hint = "" if _verbose else " (run with --verbose for the traceback)"
    _fail(f"internal error: {type(error).__name__}{': ' + detail if detail else ''}{hint}")


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="devicelint")
def main() -> None:
    """devicelint: find PyTorch device bugs (per-row transfers, unmoved models, views on
    non-contiguous tensors, syncs in loops, DataParallel, ...). `devicelint PATHS` lints;
    `devicelint rule CODE` explains a rule; `devicelint confirm` checks findings at run time."""


def run() -> None:
    """The program (from devicelint.__main__: the console script, `python -m devicelint`):
    `main`, then the process ends without tearing the interpreter down (`_exit`). Code
    that calls `main` itself gets its SystemExit back, as from any click command."""
    collector.start_up()  # until the run's imports are done (the runner: collector.started)
    try:
        main()
        status = None  # click's standalone mode ends by SystemExit: not reached
    except SystemExit as done:
        status = done.code
    _exit(status)


def _fail(message: str) -> None:
    click.echo(f"devicelint: error: {_escaped(message)}", err=True)
    sys.exit(EXIT_ERROR)


def _warn(message: str) -> None:
    click.echo(f"devicelint: warning: {_escaped(message)}", err=True)


def _escaped(message: str) -> str:
    # Messages name user files; CI logs read stderr too (see reporters.escape_control).
    from devicelint.reporters import escape_control

    return escape_control(message)


def _open_output(path: Optional[str]):
    """Open -o's file before the run (append mode: nothing is lost if the run fails), so
    that a missing directory or an unwritable path is an error now (exit 2), not after
    minutes of linting."""
    if path is None:
        return None
    if os.path.isdir(path):
        _fail(f"cannot write the report to {path}: it is a directory")
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as error:
        _fail(f"cannot write the report to {path}: {error.strerror or error}")


TEXT_MODES = ("concise", "full", "text")  # `text` is the former name of `full`
OUTPUT_FORMATS = (*TEXT_MODES, "json", "json-lines", "github", "sarif", "gitlab", "rdjson", "rdjsonl")


@main.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the defaults).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--exclude", multiple=True, help="Glob patterns to exclude (replaces the defaults).")
@click.option("--extend-exclude", multiple=True, help="Glob patterns to exclude in addition.")
@click.option("--per-file-ignores", multiple=True, help="PATTERN:CODES, e.g. 'tests/*:DL010'.")
@click.option("--extend-per-file-ignores", multiple=True, help="Like --per-file-ignores, added to the configured ones.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to paths named on the command line too.")
@click.option("--output-format", "--format", "output_format", default="full", show_default=True,
              type=click.Choice(OUTPUT_FORMATS),
              help="full: findings with their source line and the rule's fix; concise: one line each.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("-e", "--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 if any fix was applied, even if nothing remains.")
@click.option("--statistics", is_flag=True, help="Print only the number of findings per rule.")
@click.option("-n", "--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Where to keep the result cache.")
@click.option("--respect-gitignore/--no-respect-gitignore", default=None,
              help="Skip what git ignores (default: the `respect-gitignore` setting, true).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: CPU count).")
@click.option("--config", type=click.Path(dir_okay=False), help="A pyproject.toml to use instead of the nearest.")
@click.option("-q", "--quiet", count=True, help="-q: findings only; -qq: nothing (exit code only).")
@click.option("-s", "--silent", is_flag=True, help="Print nothing (exit code only): -qq.")
@click.option("--no-show-source", is_flag=True, help="Do not print the source line under each finding.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour text output (auto: on a terminal, unless NO_COLOR; FORCE_COLOR forces it).")
@click.option("--show-files", is_flag=True, help="List the files that would be linted, and exit.")
@click.option("--show-settings", is_flag=True, help="Print the settings in effect, and exit.")
@click.option("--stdin-filename", metavar="PATH",
              help="Lint standard input as this file (its config, excludes and per-file ignores).")
@click.option("--list-rules", is_flag=True, help="List all rules and exit.")
@click.option("--explain", metavar="CODE", help="Print a rule's documentation and exit.")
@click.option("--fix/--no-fix", default=False, help="Apply safe fixes in place (--no-fix: do not).")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix/--diff, also apply unsafe fixes.")
@click.option("--fix-only", is_flag=True, help="Apply fixes (like --fix) but do not report what remains.")
@click.option("--show-fixes", is_flag=True, help="With --fix: list the fixes applied, per rule and file.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; change nothing.")
@click.option("-w", "--watch", is_flag=True, help="Lint again whenever a linted file changes (Ctrl-C stops).")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: CODE` to every line with a finding (adopt devicelint today).")
@verbose_option
def check(paths, select, ignore, extend_select, exclude, extend_exclude, per_file_ignores,
          extend_per_file_ignores, force_exclude, output_format, output_file, exit_zero, exit_non_zero_on_fix, statistics,
          no_cache, cache_dir, respect_gitignore, jobs, config, quiet, silent, no_show_source,
          color, show_files, show_settings, stdin_filename, list_rules, explain, fix, unsafe_fixes, fix_only, show_fixes, diff,
          watch, add_noqa=False) -> None:
    """Lint PATHS (default: the current directory; `-` reads standard input)."""
    if list_rules:
        _list_rules()
        return
    if explain:
        _explain(explain)
        return
    from devicelint.runner import Overrides

    overrides = Overrides(
        select=_cli_codes(select, "--select"), ignore=_cli_codes(ignore, "--ignore"),
        extend_select=_cli_codes(extend_select, "--extend-select"),
        exclude=_patterns(exclude), extend_exclude=_patterns(extend_exclude),
        per_file_ignores=_per_file_ignores(per_file_ignores),
        force_exclude=True if force_exclude else None, config=config,
    )
    if silent:
        quiet = max(quiet, 2)
    options = Options(
        output_format=output_format, quiet=quiet, statistics=statistics,
        show_source=not no_show_source and quiet == 0 and output_format != "concise",
        color=color, fix=fix or fix_only, unsafe_fixes=unsafe_fixes, fix_only=fix_only,
        show_fixes=show_fixes, diff=diff, exit_zero=exit_zero,
        exit_non_zero_on_fix=exit_non_zero_on_fix, use_cache=not no_cache, jobs=jobs,
        respect_gitignore=respect_gitignore, cache_dir=cache_dir,
        extend_per_file_ignores=_per_file_ignores(extend_per_file_ignores, "--extend-per-file-ignores") or {},
    )
    if paths == ("-",) or (stdin_filename and not paths):
        if watch or add_noqa or show_files:
            _fail("--watch, --add-noqa and --show-files need files, not standard input")
        sys.exit(_check_stdin(stdin_filename or "-", overrides, options))
    targets = [p for p in paths] or ["."]
    if "-" in targets:
        _fail("`-` (standard input) must be the only path")
    if show_files or show_settings:
        _show(targets, overrides, options, show_files, show_settings)
        return
    if add_noqa:
        run = _lint(targets, overrides, options)
        _add_noqa(run.findings, quiet)
        return
    if watch:
        _watch(targets, overrides, options, output_file)
        return
    sys.exit(_check_once(targets, overrides, options, output_file))


@dataclass
class Options:
    """How `check` reports and fixes (from the command line)."""

    output_format: str = "full"
    quiet: int = 0
    statistics: bool = False
    show_source: bool = True
    color: str = "auto"
    fix: bool = False
    unsafe_fixes: bool = False
    fix_only: bool = False
    show_fixes: bool = False
    diff: bool = False
    exit_zero: bool = False
    exit_non_zero_on_fix: bool = False
    use_cache: bool = True
    jobs: Optional[int] = None
    respect_gitignore: Optional[bool] = None  # None: as configured
    cache_dir: Optional[str] = None
    extend_per_file_ignores: dict = field(default_factory=dict)


def _cli_codes(values: tuple[str, ...], option: str) -> Optional[list[str]]:
    """The codes of a command-line option, checked here so that a wrong one is blamed on
    the option that carried it, not on the configuration file."""
    codes = _codes(values)
    if codes:
        _check_codes(codes, option)
    return codes


def _check_codes(codes: list[str], origin: str) -> None:
    from devicelint.config import ConfigError, expand_codes
    from devicelint.rule import rule_catalog

    try:
        expand_codes(codes, list(rule_catalog()), origin)
    except ConfigError as error:
        _fail(str(error))


def _resolve(targets: list[str], overrides, options: Options):
    """The settings of a run: the configuration, the command line's overrides, and the
    options that only the command line has (--respect-gitignore, --cache-dir)."""
    from dataclasses import replace

    from devicelint.runner import resolve_settings

    settings = resolve_settings(targets, overrides)
    if options.respect_gitignore is not None:
        settings = replace(settings, respect_gitignore=options.respect_gitignore)
    if options.cache_dir is not None:
        settings = replace(settings, cache_dir=os.path.abspath(os.path.expanduser(options.cache_dir)))
    if options.extend_per_file_ignores:
        merged = {pattern: list(codes) for pattern, codes in settings.per_file_ignores.items()}
        for pattern, codes in options.extend_per_file_ignores.items():
            merged.setdefault(pattern, []).extend(codes)
        settings = replace(settings, per_file_ignores=merged)
    return settings


def _settings(targets: list[str], overrides, options: Options):
    from devicelint.config import ConfigError

    try:
        return _resolve(targets, overrides, options)
    except ConfigError as error:
        _fail(str(error))


def _lint(targets: list[str], overrides, options: Options):
    from devicelint.config import ConfigError
    from devicelint.runner import lint_paths

    settings = _settings(targets, overrides, options)
    try:
        return lint_paths(targets, overrides, use_cache=options.use_cache, jobs=options.jobs,
                          settings=settings)
    except ConfigError as error:
        _fail(str(error))


def _check_once(targets: list[str], overrides, options: Options, output_file: Optional[str]) -> int:
    """One lint (and fix) run: report, and return the exit code."""
    report = _open_output(output_file) if options.quiet < 2 and not options.diff else None
    outcome = None
    try:
        run = _lint(targets, overrides, options)
        findings = run.findings
        if options.fix or options.diff:
            from devicelint.runner import apply_fixes

            outcome = apply_fixes(findings, unsafe=options.unsafe_fixes, diff_only=options.diff,
                                  settings=run.settings, enabled=run.enabled)
            for message in outcome.messages:  # dropped fixes: never silent, never in the diff
                _warn(message)
            if options.diff:
                click.echo(outcome.diff, nl=False)
                return EXIT_FINDINGS if outcome.fixable and not options.exit_zero else EXIT_CLEAN
            findings = outcome.remaining
        _emit(findings, run, options, report, outcome)
    finally:
        if report is not None:
            report.close()
    return _exit_code([] if options.fix_only else findings, outcome, options)


def _exit_code(findings, outcome, options: Options) -> int:
    if options.exit_zero:
        return EXIT_CLEAN
    if options.exit_non_zero_on_fix and outcome is not None and outcome.fixed:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if findings else EXIT_CLEAN


def _check_stdin(filename: str, overrides, options: Options) -> int:
    """Lint standard input as `filename` (an editor's buffer). With --fix, the fixed text
    goes to stdout and the findings that remain to stderr, as ruff does."""
    from devicelint.runner import lint_text

    named = filename != "-"
    settings = _settings([filename] if named else [], overrides, options)
    data = sys.stdin.buffer.read()
    if named and settings.force_exclude and _excluded(filename, settings):
        if options.fix and not options.diff:
            sys.stdout.buffer.write(data)
        return EXIT_CLEAN
    run = lint_text(data, filename, settings)
    if not (options.fix or options.diff):
        _emit(run.findings, run, options, None, None)
        return _exit_code(run.findings, None, options)
    text, remaining, fixed = _fix_stdin(data, filename, run, options.unsafe_fixes)
    if options.diff:
        from devicelint.fix import unified_diff

        click.echo(unified_diff(filename, data.decode("utf-8", "replace"), text), nl=False)
        return EXIT_FINDINGS if fixed and not options.exit_zero else EXIT_CLEAN
    sys.stdout.buffer.write(text.encode("utf-8") if text is not None else data)
    sys.stdout.flush()
    if not options.fix_only and options.quiet < 2:
        from devicelint.reporters import ReportContext, renderer

        ctx = ReportContext(files=1, show_source=False, fixed=len(fixed), unsafe_fixes=options.unsafe_fixes)
        click.echo(renderer("text")(remaining, ctx), nl=False, err=True)
    if options.exit_zero:
        return EXIT_CLEAN
    if options.exit_non_zero_on_fix and fixed:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if remaining and not options.fix_only else EXIT_CLEAN


def _fix_stdin(data: bytes, filename: str, run, unsafe: bool):
    """(fixed text or None, findings that remain, findings fixed) for a buffer."""
    if filename.endswith(".ipynb"):
        _fail("--fix on standard input: notebooks are fixed in place only (name the file)")
    from devicelint.engine import enabled_rules
    from devicelint.fix import fix_text
    from devicelint.runner import FindingFilter
    from devicelint.source import decode_source

    try:
        text = decode_source(data)
    except ValueError:
        return None, run.findings, []
    if not any(f.fix is not None for f in run.findings):
        return text, run.findings, []
    result = fix_text(
        filename, text, enabled_rules(run.enabled),
        accept=lambda fix: fix.safe or unsafe,
        keep=FindingFilter(run.settings, run.enabled).keep,
    )
    for message in result.messages:
        _warn(message)
    return result.text, result.findings, result.applied


def _add_noqa(findings, quiet: int) -> None:
    from devicelint.noqa import add_noqa

    outcome = add_noqa(findings)
    for skip in outcome.skipped:
        _warn(f"{skip.path}:{skip.line}: no `# noqa: {', '.join(skip.codes)}` added: {skip.reason}")
    if not quiet:
        click.echo(f"Added {outcome.added} noqa comment{'s' if outcome.added != 1 else ''} "
                   f"in {outcome.files} file{'s' if outcome.files != 1 else ''}.")
    sys.exit(EXIT_FINDINGS if outcome.skipped else EXIT_CLEAN)


def _per_file_ignores(values: tuple[str, ...], option: str = "--per-file-ignores") -> Optional[dict[str, list[str]]]:
    if not values:
        return None
    table: dict[str, list[str]] = {}
    for value in values:
        pattern, sep, codes = value.rpartition(":")
        if not sep or not pattern:
            _fail(f"{option} expects PATTERN:CODES, got {value!r}")
        table.setdefault(pattern, []).extend(c for c in codes.split(",") if c)
    for codes in table.values():
        _check_codes(codes, option)
    return table


def use_color(stream, choice: str = "auto") -> bool:
    """--color always/never decide; else FORCE_COLOR (set and not empty) turns colour on,
    NO_COLOR off, and otherwise colour is used only on a terminal."""
    if choice != "auto":
        return choice == "always"
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return hasattr(stream, "isatty") and stream.isatty()


def _fix_applies(finding, unsafe: bool) -> bool:
    return finding.fix is not None and (finding.fix.safe or unsafe)


def _emit(findings, run, options: Options, report, outcome) -> None:
    from devicelint.reporters import ReportContext, renderer

    if options.quiet >= 2:
        return
    to_file = report is not None
    text_mode = options.output_format in TEXT_MODES
    color = not to_file and text_mode and use_color(sys.stdout, options.color)
    if options.fix_only:
        text = _fixed_summary(outcome, options.show_fixes)
    elif options.statistics:
        text = _statistics(findings, run.files, options)
    else:
        extra = {"enabled": run.enabled}
        if run.settings is not None:
            extra["max_file_size"] = run.settings.max_file_size
            extra["root"] = run.settings.root
        ctx = ReportContext(
            files=run.files, cached=run.cached, color=color, show_source=options.show_source,
            fixed=outcome.fixed if outcome is not None and not options.show_fixes else 0, extra=extra,
            unsafe_fixes=options.unsafe_fixes, summary=options.quiet == 0,
            full=options.output_format != "concise",
        )
        text = renderer("text" if text_mode else options.output_format)(findings, ctx)
        if options.show_fixes and outcome is not None and options.quiet == 0:
            text += _fixed_summary(outcome, True)
    if to_file:
        if report.seekable():  # opened for appending before the run: replace the content now
            report.seek(0)
            report.truncate()
        report.write(text)
    elif text:
        click.echo(text, nl=False, color=color)


def _statistics(findings, files: int, options: Options) -> str:
    """Findings per rule, most frequent first (ruff's `--statistics`): the table and the
    summary, no findings; with `--output-format json` the table as a JSON array."""
    from collections import Counter

    counts = Counter((f.code, f.name) for f in findings)
    fixable = {f.code for f in findings if _fix_applies(f, options.unsafe_fixes)}
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if options.output_format == "json":
        import json

        table = [{"code": code, "name": name, "count": count, "fixable": code in fixable}
                 for (code, name), count in rows]
        return json.dumps(table, indent=2) + "\n"
    width = max((len(str(count)) for _, count in rows), default=1)
    lines = [f"{count:>{width}}\t{code}\t{'[*]' if code in fixable else '[ ]'} {name}"
             for (code, name), count in rows]
    if options.quiet == 0:  # as ruff: the table, then the summary (-q: the table alone)
        from devicelint.reporters import ReportContext
        from devicelint.reporters.text import summary

        lines.extend(summary(findings, ReportContext(files=files, unsafe_fixes=options.unsafe_fixes)))
    return "".join(line + "\n" for line in lines)


def _fixed_summary(outcome, per_rule: bool) -> str:
    """`Fixed N findings.`, and with --show-fixes what was fixed, per rule and file."""
    if outcome is None or not outcome.fixed:
        return "No fixes applied.\n"
    from devicelint.rule import rule_catalog

    plural = "s" if outcome.fixed != 1 else ""
    if not per_rule:
        return f"Fixed {outcome.fixed} finding{plural}.\n"
    catalog = rule_catalog()
    lines = [f"Fixed {outcome.fixed} finding{plural}:"]
    for code, count in sorted(outcome.fixed_by_code.items()):
        name = catalog[code].name if code in catalog else ""
        lines.append(f"    {count} × {code} ({name})")
    lines.append(f"in {len(outcome.files_changed)} file{'s' if len(outcome.files_changed) != 1 else ''}:")
    lines.extend(f"- {path}" for path in outcome.files_changed)
    return "".join(_escaped(line) + "\n" for line in lines)


def _excluded(path: str, settings) -> bool:
    from devicelint.discovery import Excluder

    return Excluder(settings).excluded_with_parents(Path(path))


def _show(targets: list[str], overrides, options: Options, show_files: bool, show_settings: bool) -> None:
    """--show-files: what a run would lint; --show-settings: the settings in effect and
    where they came from (ruff's options of the same names)."""
    from devicelint.config import enabled_codes
    from devicelint.discovery import discover
    from devicelint.rule import rule_catalog

    settings = _settings(targets, overrides, options)
    if show_settings:
        from devicelint.config import ConfigError

        try:
            enabled = enabled_codes(settings, rule_catalog())
        except ConfigError as error:
            _fail(str(error))
        click.echo(f"config = {settings.config_path or '(none: defaults)'}")
        click.echo(f"project-root = {settings.root}")
        click.echo(f"enabled = {enabled}")
        for key in ("select", "ignore", "extend_select", "exclude", "extend_exclude",
                    "per_file_ignores", "respect_gitignore", "force_exclude", "max_file_size",
                    "cache_dir"):
            click.echo(f"{key.replace('_', '-')} = {getattr(settings, key)!r}")
    if show_files:
        candidates, problems = discover(targets, settings, bool(settings.force_exclude))
        for candidate in candidates:
            click.echo(_escaped(candidate.display))
        for problem in problems:
            _warn(f"{problem.display}: {problem.message}")


WATCH_INTERVAL = 0.5  # seconds between two looks at the files' modification times


def _watch(targets: list[str], overrides, options: Options, output_file: Optional[str]) -> None:
    """Lint, then lint again whenever a linted file (or the config) changes; Ctrl-C ends it
    (exit 130). A configuration error is reported and waited out, not fatal."""
    collector.started()  # a long run: the collector as usual (collector.start_up)
    click.echo(f"[{time.strftime('%H:%M:%S')}] Watching for file changes (Ctrl-C stops).", err=True)
    seen = None
    while True:
        state = _watched_state(targets, overrides, options)
        if state != seen:
            if seen is not None:
                click.echo(f"[{time.strftime('%H:%M:%S')}] File change detected; linting again.", err=True)
            try:
                _check_once(targets, overrides, options, output_file)
            except SystemExit:  # a configuration error: said on stderr; wait for a change
                pass
            seen = _watched_state(targets, overrides, options)  # --fix may have changed files itself
        time.sleep(WATCH_INTERVAL)


def _watched_state(targets: list[str], overrides, options: Options) -> frozenset:
    """(path, mtime, size) of every file a run would lint, and of the config file."""
    from devicelint.config import ConfigError
    from devicelint.discovery import discover

    try:
        settings = _resolve(targets, overrides, options)
    except ConfigError as error:
        return frozenset({("config-error", str(error), 0)})
    paths = [c.path for c in discover(targets, settings, bool(settings.force_exclude))[0]]
    if settings.config_path:
        paths.append(settings.config_path)
    state = set()
    for path in paths:
        try:
            info = os.stat(path)
        except OSError:
            continue
        state.add((path, info.st_mtime_ns, info.st_size))
    return frozenset(state)


def _list_rules() -> None:
    from devicelint.rule import all_rules

    for code, rule in all_rules().items():
        state = "on " if rule.default_enabled else "off"
        fix = "fix" if getattr(rule, "fixable", False) else "   "
        click.echo(f"{code}  {state}  {fix}  {rule.name:<28} {rule.summary}")


def _explain(code: str) -> None:
    from devicelint.rule import all_rules

    rule = all_rules().get(code.upper())
    if rule is None:
        _fail(f"unknown rule code `{code}` (see `devicelint --list-rules`)")
    default = "enabled by default" if rule.default_enabled else "not enabled by default"
    fix = "; has a fix" if getattr(rule, "fixable", False) else ""
    click.echo(f"# {rule.code} {rule.name}\n\n{rule.summary} ({default}{fix}).\n\n{rule.docs()}")


@main.command("rule")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Print every rule's documentation.")
def rule_command(code: Optional[str], show_all: bool) -> None:
    """Print the documentation of rule CODE (e.g. `devicelint rule DL005`)."""
    from devicelint.rule import all_rules

    if show_all:
        for known in all_rules():
            _explain(known)
            click.echo("")
        return
    if not code:
        _list_rules()
        return
    _explain(code)


if __name__ == "__main__":
    main()
