"""The command line: `devicelint [PATHS]`, `devicelint rule CODE`, `devicelint confirm`."""

from __future__ import annotations

import os
import sys
from typing import Optional

import click

from devicelint import __version__

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

    def get_command(self, ctx: click.Context, name: str):
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


@main.command("check")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help="Rule codes or prefixes to enable (replaces the defaults).")
@click.option("--ignore", multiple=True, help="Rule codes or prefixes to disable.")
@click.option("--extend-select", multiple=True, help="Rule codes or prefixes to enable in addition.")
@click.option("--exclude", multiple=True, help="Glob patterns to exclude (replaces the defaults).")
@click.option("--extend-exclude", multiple=True, help="Glob patterns to exclude in addition.")
@click.option("--per-file-ignores", multiple=True, help="PATTERN:CODES, e.g. 'tests/*:DL010'.")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to paths named on the command line too.")
@click.option("--format", "output_format", default="text",
              type=click.Choice(["text", "json", "json-lines", "github", "sarif", "gitlab", "rdjson", "rdjsonl"]))
@click.option("-o", "--output-file", type=click.Path(dir_okay=False), help="Write the report here.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Count findings per rule.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Worker processes (default: CPU count).")
@click.option("--config", type=click.Path(dir_okay=False), help="A pyproject.toml to use instead of the nearest.")
@click.option("-q", "--quiet", count=True, help="-q: findings only; -qq: nothing (exit code only).")
@click.option("--no-show-source", is_flag=True, help="Do not print the source line under each finding.")
@click.option("--list-rules", is_flag=True, help="List all rules and exit.")
@click.option("--explain", metavar="CODE", help="Print a rule's documentation and exit.")
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix/--diff, also apply unsafe fixes.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; change nothing.")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: CODE` to every line with a finding (adopt devicelint today).")
@verbose_option
def check(paths, select, ignore, extend_select, exclude, extend_exclude, per_file_ignores,
          force_exclude, output_format, output_file, exit_zero, statistics, no_cache, jobs,
          config, quiet, no_show_source, list_rules, explain, fix, unsafe_fixes, diff,
          add_noqa=False) -> None:
    """Lint PATHS (default: the current directory)."""
    if list_rules:
        _list_rules()
        return
    if explain:
        _explain(explain)
        return
    from devicelint.config import ConfigError
    from devicelint.runner import Overrides, lint_paths

    overrides = Overrides(
        select=_codes(select), ignore=_codes(ignore), extend_select=_codes(extend_select),
        exclude=_patterns(exclude), extend_exclude=_patterns(extend_exclude),
        per_file_ignores=_per_file_ignores(per_file_ignores),
        force_exclude=True if force_exclude else None, config=config,
    )
    targets = list(paths) or ["."]
    report = _open_output(output_file) if quiet < 2 and not (add_noqa or diff) else None
    try:
        try:
            run = lint_paths(targets, overrides, use_cache=not no_cache, jobs=jobs)
        except ConfigError as error:
            _fail(str(error))
            return
        findings = run.findings
        if add_noqa:
            _add_noqa(findings, quiet)
            return
        fixed = 0
        if fix or diff:
            from devicelint.fix import apply_fixes

            outcome = apply_fixes(findings, unsafe=unsafe_fixes, diff_only=diff,
                                  settings=run.settings, enabled=run.enabled)
            for message in outcome.messages:  # dropped fixes: never silent, never in the diff
                _warn(message)
            if diff:
                click.echo(outcome.diff, nl=False)
                sys.exit(EXIT_FINDINGS if outcome.fixable and not exit_zero else EXIT_CLEAN)
            findings, fixed = outcome.remaining, outcome.fixed
        _emit(findings, run, output_format, report, statistics, quiet, no_show_source, fixed)
    finally:
        if report is not None:
            report.close()
    sys.exit(EXIT_FINDINGS if findings and not exit_zero else EXIT_CLEAN)


def _add_noqa(findings, quiet: int) -> None:
    from devicelint.noqa import add_noqa

    outcome = add_noqa(findings)
    for skip in outcome.skipped:
        _warn(f"{skip.path}:{skip.line}: no `# noqa: {', '.join(skip.codes)}` added: {skip.reason}")
    if not quiet:
        click.echo(f"Added {outcome.added} noqa comment{'s' if outcome.added != 1 else ''} "
                   f"in {outcome.files} file{'s' if outcome.files != 1 else ''}.")
    sys.exit(EXIT_FINDINGS if outcome.skipped else EXIT_CLEAN)


def _per_file_ignores(values: tuple[str, ...]) -> Optional[dict[str, list[str]]]:
    if not values:
        return None
    table: dict[str, list[str]] = {}
    for value in values:
        pattern, sep, codes = value.rpartition(":")
        if not sep or not pattern:
            _fail(f"--per-file-ignores expects PATTERN:CODES, got {value!r}")
        table.setdefault(pattern, []).extend(c for c in codes.split(",") if c)
    return table


def use_color(stream) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


def _emit(findings, run, output_format, report, statistics, quiet, no_show_source, fixed) -> None:
    from devicelint.reporters import ReportContext, renderer

    if quiet >= 2:
        return
    to_file = report is not None
    extra = {"enabled": run.enabled}
    if run.settings is not None:
        extra["max_file_size"] = run.settings.max_file_size
    ctx = ReportContext(
        files=run.files, cached=run.cached, statistics=statistics,
        color=not to_file and output_format == "text" and use_color(sys.stdout),
        show_source=not no_show_source and quiet == 0, fixed=fixed, extra=extra,
    )
    text = renderer(output_format)(findings, ctx)
    if output_format == "text" and quiet == 1:
        text = "".join(line + "\n" for line in text.splitlines() if line and line[0] not in " " and not line.startswith(("Found ", "All checks")))
    if to_file:
        if report.seekable():  # opened for appending before the run: replace the content now
            report.seek(0)
            report.truncate()
        report.write(text)
    elif text:
        click.echo(text, nl=False)


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
