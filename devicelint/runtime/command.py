"""`devicelint confirm [PATHS] [-- CMD...]`: lint PATHS, run code under instrumentation, and
report every finding as confirmed / refuted / inconclusive / not-reached. Torch-free: torch is
imported only by the child process (child.py)."""

from __future__ import annotations

import math
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import click

from devicelint.reporters import escape_control
from devicelint.runtime.child import Refused, parse_command
from devicelint.runtime.launch import ChildRun, describe_exit, guard_signals, interrupted, run_child
from devicelint.runtime.plan import (
    Plan, good_fixture_code, imported_files, is_fixture_run, is_good_fixture, known_gaps, plan_for,
    real,
)
from devicelint.runtime.rank import rank
from devicelint.runtime.report import _rel, format_json, format_text, ran_on
from devicelint.runtime_spec import HAPPENED

EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


class ConfirmCommand(click.Command):
    """Everything after `--` is the command to run, kept apart from PATHS."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            index = args.index("--")
            ctx.meta["devicelint.command"] = args[index + 1:]
            args = args[:index]
        return super().parse_args(ctx, args)


USAGE = """\
devicelint confirm runs your code; name what to run:
  devicelint confirm src/ -- python train.py --epochs 1   lint src/, then run the command
  devicelint confirm -- python train.py                   lint the project, then run it
  devicelint confirm scripts/                             run each flagged file under scripts/
                                                          as a script (excludes, .gitignore apply)
See `devicelint confirm --help`.
"""


def _gpu_visible() -> bool:
    """A cheap guess without importing torch (only for the default --jobs): the child
    decides for real."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def _codes(values: tuple[str, ...]) -> Optional[list[str]]:
    codes = [c.strip() for v in values for c in v.split(",") if c.strip()]
    return codes or None


def _say(text: str) -> None:
    """A line on stderr. It names user files and commands: control characters are escaped
    (a newline and `::error::` in a file name would be a GitHub Actions workflow command)."""
    click.echo(escape_control(text), err=True)


def _fail(message: str) -> None:
    _say(f"devicelint: error: {message}")
    sys.exit(EXIT_ERROR)


def _check_timeout(ctx, param, value: Optional[float]) -> Optional[float]:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise click.BadParameter(f"must be a number of seconds > 0, not {value}")
    return value


def _check_output(option: str, path: Optional[str]) -> None:
    """Fail before the run, not after it: a report that cannot be written loses the run."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        _fail(f"{option} {path}: is a directory")
    if not os.path.isdir(folder):
        _fail(f"{option} {path}: no such directory: {folder}")
    if not os.access(folder, os.W_OK | os.X_OK) or (
            os.path.exists(path) and not os.access(path, os.W_OK)):
        _fail(f"{option} {path}: not writable")


def _selected_files(paths: list[str]) -> list[str]:
    """The Python files the linter's own discovery selects under PATHS (excludes,
    .gitignore, the project's config), minus the fixer's inputs in fixture folders."""
    from devicelint.discovery import discover
    from devicelint.runner import Overrides, resolve_settings

    settings = resolve_settings(paths, Overrides())
    candidates, problems = discover(paths, settings, bool(settings.force_exclude))
    for problem in problems:
        _say(f"devicelint: warning: {problem.display}: {problem.message}")
    return [c.path for c in candidates if c.path.endswith(".py") and is_fixture_run(c.path)]


def _lint_fixtures(paths: list[str], files: list[str], select: Optional[list[str]]):
    """The findings of `files` (the runs' scripts, `_selected_files(paths)`) from one lint of
    PATHS, as `devicelint check PATHS` lints them: the runner's path, with the project index
    built over every file it selects (a finding one call away in another file exists only
    there: issue 13). Every rule on and no ignore of the config applied: fixtures are
    excluded by the project's own config, and a fixture of a default-off rule must still be
    confirmed."""
    from devicelint.diagnostics import ENGINE_CODES
    from devicelint.rule import all_rules
    from devicelint.runner import Overrides, lint_paths

    codes = [c for c in select or all_rules() if c in all_rules()]
    codes += [c for c in ENGINE_CODES if c not in codes]
    everything = Overrides(select=codes, ignore=[], extend_select=[], per_file_ignores={})
    run = lint_paths(paths, everything, use_cache=False)
    chosen = {real(path): path for path in files}
    findings = []
    for finding in run.findings:
        path = chosen.get(real(finding.path))
        if path is not None:  # (a notebook or a fixer's input was read, not run)
            finding.path = path
            findings.append(finding)
    return findings


def _lint(paths: list[str], select: Optional[list[str]]):
    from devicelint.runner import run_lint

    return run_lint(paths, select)


def _is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def _run(plan: Plan, target: str, timeout: float, good: bool = False, quiet: bool = False,
         refusals: Optional[list[str]] = None) -> dict:
    """Run one plan. `refusals` is shared by the runs of one confirm: once a run is refused
    (no torch, no GPU), the others would be too, and are not started."""
    if refusals:
        child = ChildRun(None, None, False, False, "", 0.0, skipped=True)
    else:
        child = run_child(plan, timeout, quiet_output=quiet)
    result = child.result or {}
    if refusals:
        result = {"refused": refusals[0]}
    elif result.get("refused") and refusals is not None:
        refusals.append(result["refused"])
    run = {
        "target": target,
        "device": result.get("device"),
        "device_name": result.get("device_name"),
        "torch": result.get("torch"),
        "exit_code": result.get("exit_code", child.exit_code),
        "crash": result.get("crash"),
        "timed_out": child.timed_out,
        "timeout": timeout,
        "interrupted": child.interrupted,
        "seconds": child.seconds,
        "stderr_tail": child.stderr_tail,
        "stderr_bytes": child.stderr_bytes,
        "stderr_truncated": child.stderr_truncated,
        "premise": result.get("premise") or {},
        "good_fixture": good,
        "verdicts": result.get("verdicts", []),
        "found": result.get("found", []),
        "run_seconds": result.get("run_seconds"),
        # what ran out of the finder's sight (DataLoader worker processes)
        "unobserved": result.get("unobserved", []),
    }
    if result.get("refused"):
        run["refused"] = result["refused"]
    if child.skipped:
        run["error"] = "not run: " + ("another run was refused" if refusals
                                      else "devicelint was stopping")
    elif child.result is None:
        run["error"] = f"the child wrote no result (exit code {describe_exit(child.exit_code)})"
    return run


def _not_reached(run: dict) -> str:
    """One status line for a line the run never reached; the crash itself is stated once,
    in the run's report, not repeated on every finding."""
    if run["timed_out"]:
        return f"the line did not run before the time limit ({run['timeout']:g} s)"
    if run["interrupted"]:
        return "the line did not run before the run was interrupted"
    crash = run.get("crash")
    if crash:
        where = f" at {_rel(crash['path'])}:{crash['line']}" if crash.get("path") else ""
        return f"the line never ran: the run stopped early{where} ({crash['type']}, see the run)"
    return "the line never ran"


def _found_findings(runs: list[dict], codes: Optional[list[str]]) -> list:
    """Findings for what the finder saw on lines the static pass did not flag (status
    `found`, the code of the rule whose pitfall it is); a helper's line names its call
    sites as related locations."""
    from devicelint.finding import Finding
    from devicelint.rule import all_rules
    from devicelint.runtime.finder import source_column

    registry = all_rules()
    out = []
    for run in runs:
        for hit in run.pop("found", []):
            code = hit["code"]
            if code not in registry or (codes and code not in codes):
                continue
            path, line = _rel(hit["path"]), hit["line"]
            column = source_column(hit["path"], line)
            related = [{**({"path": _rel(c["path"])} if c["path"] != hit["path"] else {}),
                        "line": c["line"], "column": source_column(c["path"], c["line"]),
                        "message": "the helper is called from here"}
                       for c in hit.get("callers", [])]
            finding = Finding(
                code, registry[code].name, path, line, column, line, column,
                f"{registry[code].name}: seen at runtime on a line the static pass did not "
                f"flag", related=related)
            confirmation = dict(hit["confirmation"])
            confirmation["exit_code"] = run["exit_code"]
            if related:
                sites = [f"{_rel(c['path'])}:{c['line']}" for c in hit.get("callers", [])]
                confirmation["called_from"] = sites
                confirmation["summary"] += f"; called from {', '.join(sites)}"
            finding.confirmation = confirmation
            out.append(finding)
    return out


def _run_seconds_of(runs: list[dict]):
    """finding -> the wall time of the run that saw it (one run, or the fixture file's)."""
    by_target = {real(run["target"]): run.get("run_seconds") for run in runs
                 if os.path.exists(run["target"])}
    only = runs[0].get("run_seconds") if len(runs) == 1 else None
    return lambda finding: only if len(runs) == 1 else by_target.get(real(finding.path))


# Several runs may watch one line (a module's line, in each script that imports it): the line
# takes the verdict of the run that says most, the first such run on a tie.
_WEIGHT = {"confirmed": 3, "refuted": 2, "inconclusive": 1}


def _attach(findings, runs: list[dict]) -> None:
    by_site = {}
    for run in runs:
        for verdict in run.pop("verdicts", []):
            confirmation = dict(verdict["confirmation"])
            if confirmation["status"] == "not-reached":
                confirmation["summary"] = _not_reached(run)
            confirmation["exit_code"] = run["exit_code"]
            site = (real(verdict["path"]), verdict["line"], verdict["code"])
            if os.path.exists(run["target"]) and real(run["target"]) != site[0]:
                confirmation["run"] = run["target"]  # a module's line, run by its importer
            known = by_site.get(site)
            if known is None or (_WEIGHT.get(confirmation["status"], 0)
                                 > _WEIGHT.get(known["status"], 0)):
                by_site[site] = confirmation
    device = ran_on(runs)[1]
    for finding in findings:
        if _is_notebook(finding.path):
            finding.confirmation = {
                "status": "not-reached", "device": device,
                "summary": "notebook cells are not run by `devicelint confirm`; export the "
                           "notebook to a script (jupyter nbconvert --to script) to confirm it",
            }
            continue
        finding.confirmation = by_site.get(
            (real(finding.path), finding.line, finding.code),
            {"status": "inconclusive", "device": device,
             "summary": "no result from the run (see its error)"},
        )


def _announce(message: str) -> None:
    """What confirm is about to run, on stderr (stdout carries only the report)."""
    _say(f"devicelint confirm: {message}")


def _device_words(device: str) -> str:
    return {"auto": "a GPU if torch sees one, else the simulated device",
            "sim": "the simulated device"}.get(device, device)


@click.command("confirm", cls=ConfirmCommand,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--device", type=click.Choice(["auto", "cuda", "sim"]), default="auto",
              show_default=True,
              help="cuda: a real GPU (an error if torch sees none); sim: the simulated device "
                   "(CPU, estimated costs); auto: cuda if torch sees a GPU, else sim.")
@click.option("--timeout", type=float, default=None, callback=_check_timeout,
              help="Seconds per run, > 0 (default: 600 for a command, 120 per file).")
@click.option("--format", "output_format", default="text",
              type=click.Choice(["text", "json", "json-lines", "github", "sarif", "gitlab",
                                 "rdjson", "rdjsonl"]),
              help="json: {device, device_name, findings, runs}; other formats as for "
                   "linting, with the runtime evidence (and the device) in each message.")
@click.option("--select", multiple=True, help="Rule codes to confirm (default: all enabled).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Files run at once (default 1 on a GPU, for clean timings; 4 on sim).")
@click.option("--sim-gpus", type=click.IntRange(min=1), default=2, show_default=True,
              help="GPUs the simulated device pretends to have.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False))
@click.option("--html", "html_file", type=click.Path(dir_okay=False),
              help="Also write a self-contained HTML report (findings, sources, cost bars).")
@click.option("--snippets", is_flag=True,
              help="Confirm each finding from a small reproduction built from its code (a "
                   "backward slice; outside data synthesized), without running the program "
                   "(docs/runtime.md, snippet mode).")
@click.option("--size", "sizes", multiple=True, metavar="NAME=N[,M...]",
              help="Snippets: the size of a dimension named NAME in the code (B=32), the "
                   "shape of a synthesized value (x=64,128), every other dimension "
                   "(default=8), the synthetic batches of a loader (batches=2).")
@click.option("--import-user-code", is_flag=True,
              help="Snippets: import the user's own modules (runs their top-level code, in "
                   "the sandbox) to build their classes.")
@click.option("--save-repro", "save_repro", type=click.Path(file_okay=False),
              help="Snippets: write each reproduction to DIR as a plain runnable script.")
@click.pass_context
def confirm(ctx, paths, device, timeout, output_format, select, jobs, sim_gpus, output_file,
            html_file=None, snippets=False, sizes=(), import_user_code=False, save_repro=None):
    """Run flagged code and report each finding as confirmed, refuted, inconclusive or
    not-reached. Runs only what you name: the command after `--`, or the flagged files
    that the linter's discovery selects under PATHS (listed before they run).

    \b
    devicelint confirm src/ -- python train.py --epochs 1
    devicelint confirm fixtures/            # run each flagged file as a script
    """
    command = ctx.meta.get("devicelint.command") or []
    paths = list(paths)
    if not paths and not command:
        click.echo(USAGE, err=True, nl=False)
        sys.exit(EXIT_ERROR)
    for path in paths:
        if not os.path.lexists(path):
            _fail(f"no such path: {path}")
    _check_output("-o/--output-file", output_file)
    _check_output("--html", html_file)
    if command:
        try:
            parse_command(command)
        except Refused as error:
            _fail(f"cannot run `{' '.join(command)}`: {error}")
    codes = _codes(select)
    fixture_mode = not command and not snippets
    options = _snippet_options(snippets, command, paths, sizes, import_user_code, save_repro)
    with guard_signals():
        if snippets:
            runs, findings = _snippet_runs(paths, codes, device, timeout, jobs, sim_gpus,
                                           options, save_repro)
        else:
            runs, findings = _confirm_runs(paths, command, codes, device, timeout, jobs,
                                           sim_gpus)
        refused = sorted({run["refused"] for run in runs if run.get("refused")})
        if refused and not interrupted():
            for message in refused:
                _say(f"devicelint: error: {message}")
            sys.exit(EXIT_ERROR)
        found = _found_findings(runs, codes)
        if not snippets:
            _attach(findings, runs)
        findings = findings + found
        ranked = rank(findings, _run_seconds_of(runs))
        kind, name = ran_on(runs)
        if output_format == "json":
            text = format_json(findings, runs, kind, name)
        elif output_format == "text":
            # Paths, commands and crash messages are the user's: no raw control characters
            # (a newline and `::error::` in a file name would be a workflow command in CI).
            text = format_text(ranked, runs, fixture_mode, escape=escape_control)
        else:
            from devicelint.reporters import ReportContext, renderer

            text = renderer(output_format)(findings, ReportContext(files=len(runs)))
        if html_file:
            from devicelint.reporters.html import render_html

            title = f"devicelint confirm: {' '.join(command) or ' '.join(paths)}"
            with open(html_file, "w", encoding="utf-8") as handle:
                handle.write(render_html(ranked, title=title, runs=runs))
        if output_file:
            with open(output_file, "w", encoding="utf-8") as handle:
                handle.write(text)
        else:
            click.echo(text, nl=False)
        if interrupted() or any(run.get("interrupted") for run in runs):
            sys.exit(130)
        failed = [run for run in runs if run.get("error")]
        for run in failed:
            _say(f"devicelint: error: {run['target']}: {run['error']}")
        if failed:
            sys.exit(EXIT_ERROR)
        sys.exit(_exit_code(findings, runs, fixture_mode))


def _snippet_options(snippets, command, paths, sizes, import_user_code, save_repro):
    """Check the snippet options before anything runs (exit 2 on a usage error)."""
    from devicelint.runtime.snippets import Options, parse_sizes

    if not snippets:
        if sizes or import_user_code or save_repro:
            _fail("--size, --import-user-code and --save-repro go with --snippets")
        return None
    if command:
        _fail("--snippets builds and runs reproductions of the findings under PATHS; it "
              "takes no command after `--`")
    if not paths:
        _fail("--snippets needs PATHS to lint")
    try:
        configured = _configured_sizes(paths)
        given = parse_sizes(sizes)
    except ValueError as error:
        _fail(f"--size {error}")
    table = {**configured, **given}
    batches = table.pop("batches", None)
    options = Options(sizes=table, import_user_code=import_user_code)
    if isinstance(batches, int):
        options.batches = batches
    if save_repro is not None and os.path.exists(save_repro) and not os.path.isdir(save_repro):
        _fail(f"--save-repro {save_repro}: not a directory")
    return options


def _configured_sizes(paths) -> dict:
    """`[tool.devicelint.confirm.sizes]` of the project's config, as --size entries."""
    from devicelint.config import ConfigError
    from devicelint.runner import Overrides, resolve_settings
    from devicelint.runtime.snippets import parse_sizes

    try:
        settings = resolve_settings(list(paths), Overrides())
    except ConfigError as error:
        _fail(str(error))
    entries = []
    for name, size in settings.confirm_sizes.items():
        shape = size if isinstance(size, list) else [size]
        entries.append(f"{name}={','.join(str(n) for n in shape)}")
    return parse_sizes(entries)


def _snippet_runs(paths, codes, device, timeout, jobs, sim_gpus, options, save_dir):
    """Lint PATHS as fixture mode does, build each finding's reproduction, run each file's
    reproductions in one sandboxed child, attach the verdicts: (runs, findings)."""
    import tempfile
    from types import SimpleNamespace

    from devicelint.config import ConfigError
    from devicelint.diagnostics import DIAGNOSTICS
    from devicelint.runtime import repro as writer
    from devicelint.runtime.snippets import build_all

    try:
        files = _selected_files(paths)
        findings = _lint_fixtures(paths, files, codes)
    except ConfigError as error:
        _fail(str(error))
    engine = {diagnostic.code for diagnostic in DIAGNOSTICS}
    findings = [f for f in findings if f.code not in engine and not _is_notebook(f.path)]
    repros = build_all(findings, options)
    built = sum(1 for r in repros if r.script is not None)
    limit = timeout or 120.0
    with tempfile.TemporaryDirectory(prefix="devicelint-snippets-") as scratch:
        folder = save_dir or os.path.join(scratch, "reproductions")
        saved = writer.save(repros, folder)
        groups: dict[str, list[int]] = {}
        for index in saved:
            groups.setdefault(repros[index].finding.path, []).append(index)
        _announce(f"{built} of {len(repros)} finding{'s' if len(repros) != 1 else ''} "
                  f"reproduced from their snippets; running them on {_device_words(device)}, "
                  f"{len(groups)} file{'s' if len(groups) != 1 else ''}, time limit {limit:g} s "
                  f"each" + (f"; saved under {save_dir}" if save_dir else ""))
        plans = []
        for number, (source, indexes) in enumerate(sorted(groups.items())):
            errors = os.path.join(scratch, f"errors-{number}.json")
            driver = os.path.join(scratch, f"run-{number}.py")
            with open(driver, "w", encoding="utf-8") as handle:
                handle.write(writer.driver([saved[i] for i in indexes], errors))
            marks = [SimpleNamespace(code=code, path=saved[i], line=line, end_line=end)
                     for i in indexes for line, end, code in [
                         (repros[i].line, repros[i].end_line, repros[i].finding.code),
                         *repros[i].watched]]
            plans.append((plan_for(marks, [driver], device, sim_gpus), source, errors))
        gpu = device == "cuda" or (device == "auto" and _gpu_visible())
        refusals: list[str] = []
        with ThreadPoolExecutor(max_workers=jobs or (1 if gpu else 4)) as pool:
            runs = list(pool.map(
                lambda item: _run(item[0], f"snippets of {item[1]}", limit, quiet=True,
                                  refusals=refusals), plans))
        errors = {}
        for _, _, path in plans:
            errors.update({real(k): v for k, v in writer.read_errors(path).items()})
    verdicts = {}
    for run in runs:
        for verdict in run.pop("verdicts", []):
            verdicts[(real(verdict["path"]), verdict["line"], verdict["code"])] = \
                dict(verdict["confirmation"], exit_code=run["exit_code"])
    device_name = ran_on(runs)[1]
    for index, (finding, rep) in enumerate(zip(findings, repros)):
        path = saved.get(index)
        key = (real(path), rep.line, finding.code) if path else None
        finding.confirmation = writer.confirmation(
            rep, verdicts.get(key), errors.get(real(path)) if path else None, device_name,
            path if save_dir else None)
    return runs, findings


def _confirm_runs(paths, command, codes, device, timeout, jobs, sim_gpus):
    """Lint, say what will run, run it: (runs, findings)."""
    from devicelint.config import ConfigError
    from devicelint.diagnostics import DIAGNOSTICS

    try:
        if not command:
            files = _selected_files(paths)
            findings = _lint_fixtures(paths, files, codes)
            return _run_fixtures(files, findings, device, timeout or 120.0, jobs, sim_gpus), \
                findings
        # The engine's diagnostics (unparsable, unreadable file...) have no line to run.
        engine = {diagnostic.code for diagnostic in DIAGNOSTICS}
        findings = [f for f in _lint(paths or ["."], codes) if f.code not in engine]
    except ConfigError as error:
        _fail(str(error))
    watched = [f for f in findings if not _is_notebook(f.path)]
    plan = plan_for(watched, command, device, sim_gpus)
    plan.find_under(_user_roots(paths, command))
    limit = timeout or 600.0
    lines = sum(len(lines) for lines in plan.lines.values())
    _announce(f"running `{' '.join(command)}` on {_device_words(device)}, time limit "
              f"{limit:g} s, watching {lines} flagged line{'s' if lines != 1 else ''} in "
              f"{len(plan.lines)} file{'s' if len(plan.lines) != 1 else ''}")
    return [_run(plan, " ".join(command), limit)], findings


def _user_roots(paths: list[str], command: list[str]) -> list[str]:
    """The user's code for the finder: the linted paths (the project when none) and the
    script the command runs."""
    roots = list(paths or ["."])
    try:
        kind, what, _ = parse_command(command)
    except Refused:
        return roots
    if kind == "path":
        roots.append(what)
    return roots


def _run_fixtures(files, findings, device, timeout, jobs, sim_gpus) -> list[dict]:
    from devicelint.rule import all_rules

    by_file: dict[str, list] = {}
    for finding in findings:
        by_file.setdefault(real(finding.path), []).append(finding)
    plans = []
    for path in files:
        # The file's own findings, and those of the local modules it imports: a flagged line
        # of a module that is only imported (a helper, a class, a loader factory: findings
        # of the project index) runs in the scripts that import it, and a script without a
        # finding of its own runs when it imports one (_attach keeps each line's best verdict).
        watched = [f for module in imported_files(path) for f in by_file.get(module, [])]
        plan = plan_for(watched, [path], device, sim_gpus)
        plan.find_under([path])
        good = is_good_fixture(path)
        rule = all_rules().get(good_fixture_code(path) or "")
        # A good fixture of a rule whose pitfall the runtime alone recognises on any line
        # (RuntimeSpec.whole_file): every line is watched, and none may show the pitfall.
        if good and rule is not None and rule.runtime is not None and rule.runtime.whole_file:
            plan.whole_files[real(path)] = [rule.code]
            plan.add_rule(rule)
        if plan.lines or good:
            plans.append((plan, path, good))
    if not plans:
        _announce(f"nothing to run: no file of the {len(files)} selected has a finding")
        return []
    _announce(f"running {len(plans)} file{'s' if len(plans) != 1 else ''} as scripts on "
              f"{_device_words(device)}, time limit {timeout:g} s each:")
    for _, path, _ in plans:
        _say(f"  {path}")
    gpu = device == "cuda" or (device == "auto" and _gpu_visible())
    workers = jobs or (1 if gpu else 4)
    refusals: list[str] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(
            lambda item: _run(item[0], item[1], timeout, item[2], quiet=True, refusals=refusals),
            plans))
    for run in runs:
        if run["good_fixture"]:
            _split_known_gaps(run)
    return runs


def _split_known_gaps(run: dict) -> None:
    """Move premise hits on lines marked `# runtime-gap: CODE reason` to run["known_gaps"]."""
    gaps = known_gaps(run["target"])
    if not gaps:
        return
    known = run.setdefault("known_gaps", [])
    for path, codes in run["premise"].items():
        for code, hits in codes.items():
            kept = []
            for hit in hits:
                reason = gaps.get((hit["line"], code))
                if reason is None:
                    kept.append(hit)
                else:
                    known.append({"code": code, "reason": reason, **hit})
            codes[code] = kept


def _exit_code(findings, runs, fixture_mode: bool) -> int:
    if fixture_mode:
        # A bad fixture's line marked `# runtime-gap: CODE reason` is a known gap, as on good
        # fixtures: its refutation is reported but does not fail the run.
        refuted = any((f.confirmation or {}).get("status") == "refuted"
                      and (f.line, f.code) not in known_gaps(f.path) for f in findings)
        dirty = any(lines for run in runs for codes in run["premise"].values()
                    for lines in codes.values())
        return EXIT_FOUND if refuted or dirty else EXIT_CLEAN
    happened = any((f.confirmation or {}).get("status") in HAPPENED for f in findings)
    return EXIT_FOUND if happened else EXIT_CLEAN


if __name__ == "__main__":
    confirm()
