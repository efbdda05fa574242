"""`devicelint confirm [PATHS] [-- CMD...]`: lint PATHS, run code under instrumentation, and
report every finding as confirmed / refuted / inconclusive / not-reached. Torch-free: torch is
imported only by the child process (child.py)."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import click

from devicelint.runtime.launch import run_child
from devicelint.runtime.plan import (
    Plan, fixture_code, is_fixture_run, is_good_fixture, known_gaps, plan_for, real,
)
from devicelint.runtime.report import format_json, format_text

# Codes whose pitfall the runtime alone can recognise on any line (used on good fixtures).
# Not DL011: the runtime counts empty_cache calls but cannot tell a step loop from an epoch
# loop or a sweep, which is all the rule's distinction is (docs/runtime.md).
WHOLE_FILE_CODES = {"DL001", "DL002", "DL003", "DL009", "DL012", "DL015"}
EXIT_CLEAN, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


class ConfirmCommand(click.Command):
    """Everything after `--` is the command to run, kept apart from PATHS."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            index = args.index("--")
            ctx.meta["devicelint.command"] = args[index + 1:]
            args = args[:index]
        return super().parse_args(ctx, args)


def _gpu_visible() -> bool:
    """A cheap guess without importing torch: the child checks for real."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/nvidia0")


def _codes(values: tuple[str, ...]) -> Optional[list[str]]:
    codes = [c.strip() for v in values for c in v.split(",") if c.strip()]
    return codes or None


def _python_files(paths: list[str]) -> list[str]:
    files = []
    for path in paths:
        if os.path.isdir(path):
            for folder, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
                files.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".py"))
        elif path.endswith(".py"):
            files.append(path)
    return files


def _lint_fixtures(files: list[str], select: Optional[list[str]]):
    """Fixtures are excluded by the project's own config: lint them with the engine directly,
    every rule on (a fixture of a default-off rule must still be confirmed)."""
    from devicelint.engine import enabled_rules, lint_file
    from devicelint.rule import all_rules

    codes = select or [c for c, r in all_rules().items() if r.handlers()]
    rules = enabled_rules([c for c in codes if c in all_rules()])
    findings = []
    for path in files:
        findings.extend(lint_file(path, path, rules, 10**7).findings)
    return findings


def _lint(paths: list[str], select: Optional[list[str]]):
    try:
        from devicelint.runner import run_lint
    except ImportError:
        return _lint_fixtures(_python_files(paths), select)
    return run_lint(paths, select)


def _run(plan: Plan, target: str, timeout: float, good: bool = False, quiet: bool = False) -> dict:
    child = run_child(plan, timeout, quiet_output=quiet)
    result = child.result or {}
    run = {
        "target": target,
        "device": result.get("device", plan.device),
        "device_name": result.get("device_name"),
        "torch": result.get("torch"),
        "exit_code": result.get("exit_code", child.exit_code),
        "crash": result.get("crash"),
        "timed_out": child.timed_out,
        "timeout": timeout,
        "interrupted": child.interrupted,
        "seconds": child.seconds,
        "stderr_tail": child.stderr_tail,
        "premise": result.get("premise") or {},
        "good_fixture": good,
        "note": result.get("note"),
        "verdicts": result.get("verdicts", []),
    }
    if child.result is None:
        run["error"] = f"the child wrote no result (exit code {child.exit_code})"
    return run


def _attach(findings, runs: list[dict]) -> None:
    by_site = {}
    for run in runs:
        for verdict in run.pop("verdicts", []):
            confirmation = dict(verdict["confirmation"])
            if run["timed_out"] and confirmation["status"] == "not-reached":
                confirmation["summary"] = "the line did not run before the time limit"
            if run.get("crash") and confirmation["status"] == "not-reached":
                crash = run["crash"]
                confirmation["summary"] = (f"the line never ran (the run stopped early: "
                                           f"{crash['type']}: {crash['message']})")
            confirmation["exit_code"] = run["exit_code"]
            by_site[(real(verdict["path"]), verdict["line"], verdict["code"])] = confirmation
    for finding in findings:
        finding.confirmation = by_site.get(
            (real(finding.path), finding.line, finding.code),
            {"status": "inconclusive", "summary": "no result from the run (see its error)"},
        )


@click.command("confirm", cls=ConfirmCommand,
               context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--device", type=click.Choice(["auto", "cuda", "sim"]), default="auto",
              show_default=True, help="Real GPU, or the simulated device (CPU, estimated costs).")
@click.option("--timeout", type=float, default=None,
              help="Seconds per run (default: 600 for a command, 120 per fixture file).")
@click.option("--format", "output_format", default="text",
              type=click.Choice(["text", "json", "json-lines", "github", "sarif", "gitlab"]),
              help="json: {device, findings, runs}; other formats as for linting, with the "
                   "runtime evidence in each message.")
@click.option("--select", multiple=True, help="Rule codes to confirm (default: all enabled).")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Fixture files run at once (default 1 on a GPU, for clean timings; 4 on sim).")
@click.option("--sim-gpus", type=click.IntRange(min=1), default=2, show_default=True,
              help="GPUs the simulated device pretends to have.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False))
@click.option("--html", "html_file", type=click.Path(dir_okay=False),
              help="Also write a self-contained HTML report (findings, sources, cost bars).")
@click.pass_context
def confirm(ctx, paths, device, timeout, output_format, select, jobs, sim_gpus, output_file,
            html_file=None):
    """Run flagged code and report each finding as confirmed, refuted, inconclusive or
    not-reached.

    \b
    devicelint confirm src/ -- python train.py --epochs 1
    devicelint confirm fixtures/            # run each fixture file as a script
    """
    command = ctx.meta.get("devicelint.command") or []
    paths = list(paths) or ["."]
    codes = _codes(select)
    if device == "auto":
        device = "cuda" if _gpu_visible() else "sim"
    fixture_mode = not command
    for path in paths:
        if not os.path.exists(path):
            click.echo(f"devicelint: error: no such path: {path}", err=True)
            sys.exit(EXIT_ERROR)

    if fixture_mode:
        files = [f for f in _python_files(paths) if is_fixture_run(f)]
        findings = _lint_fixtures(files, codes)
        runs = _run_fixtures(files, findings, device, timeout or 120.0, jobs, sim_gpus)
    else:
        findings = [f for f in _lint(paths, codes) if not f.code.startswith("DL9")]
        plan = plan_for(findings, command, device, sim_gpus)
        runs = [_run(plan, " ".join(command), timeout or 600.0)]
        runs[0]["target"] = " ".join(command)
    _attach(findings, runs)
    if output_format == "json":
        text = format_json(findings, runs, device)
    elif output_format == "text":
        text = format_text(findings, runs, fixture_mode)
    else:
        from devicelint.reporters import ReportContext, renderer

        text = renderer(output_format)(findings, ReportContext(files=len(runs)))
    if html_file:
        from devicelint.reporters.html import render_html

        title = f"devicelint confirm: {' '.join(command) or ' '.join(paths)}"
        with open(html_file, "w", encoding="utf-8") as handle:
            handle.write(render_html(findings, title=title, runs=runs))
    if output_file:
        with open(output_file, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        click.echo(text, nl=False)
    if any(run.get("interrupted") for run in runs):
        sys.exit(130)
    sys.exit(_exit_code(findings, runs, fixture_mode))


def _run_fixtures(files, findings, device, timeout, jobs, sim_gpus) -> list[dict]:
    by_file: dict[str, list] = {}
    for finding in findings:
        by_file.setdefault(finding.path, []).append(finding)
    plans = []
    for path in files:
        plan = plan_for(by_file.get(path, []), [path], device, sim_gpus)
        code = fixture_code(path)
        good = is_good_fixture(path)
        if good and code in WHOLE_FILE_CODES:
            plan.whole_files[real(path)] = [code]
        if plan.lines or good:
            plans.append((plan, path, good))
    workers = jobs or (1 if device == "cuda" else 4)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        runs = list(pool.map(lambda item: _run(item[0], item[1], timeout, item[2], quiet=True),
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
        refuted = any((f.confirmation or {}).get("status") == "refuted" for f in findings)
        dirty = any(lines for run in runs for codes in run["premise"].values()
                    for lines in codes.values())
        return EXIT_FOUND if refuted or dirty else EXIT_CLEAN
    confirmed = any((f.confirmation or {}).get("status") == "confirmed" for f in findings)
    return EXIT_FOUND if confirmed else EXIT_CLEAN


if __name__ == "__main__":
    confirm()
