"""The instrumented child: `python -m devicelint.runtime.child PLAN.json RESULT.json`.

Sets up the device (real CUDA or the simulated one), installs the tracker for the plan's
flagged lines, runs the target (a script, `-m module`, or pytest) in this process, then
judges every flagged line and writes the result. A crash or exit of the user's code is a
result; SIGTERM (the parent's time limit) and SIGINT (Ctrl-C) stop the user's code and still
write what was seen so far.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
import traceback

from devicelint.runtime_spec import HAPPENED


class Stopped(BaseException):
    """Raised in the user's code when the parent asks the child to stop."""


def _on_term(signum, frame):
    raise Stopped("timed out" if signum == signal.SIGTERM else "interrupted")


class Refused(Exception):
    """The run cannot happen (unsupported command, no torch, no GPU): nothing of the user's
    code ran, and devicelint exits 2."""


# The signal the kernel sends when devicelint dies (Linux). A real-time signal: user code and
# frameworks handle SIGTERM, SIGHUP, SIGUSR1/2 themselves, and would replace our handler.
PARENT_DEATH_SIGNAL = getattr(signal, "SIGRTMIN", signal.SIGTERM)
PR_SET_PDEATHSIG = 1


def _end_group(signum=None, frame=None) -> None:
    """devicelint is gone: end this process group (the child and the user's subprocesses)."""
    try:
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(137)


def die_with_parent() -> None:
    """Never outlive devicelint, even when it is killed with SIGKILL: ask the kernel for a
    signal when the parent dies, then check that it has not died already (the child starts
    in its own session, so nothing else would end it)."""
    parent = os.environ.pop("DEVICELINT_PARENT_PID", "")
    if not parent.isdigit():
        return
    # Blocked signals are inherited through exec: unblock the ones this child relies on.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP,
                                                PARENT_DEATH_SIGNAL})
    if sys.platform.startswith("linux"):
        signal.signal(PARENT_DEATH_SIGNAL, _end_group)
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(PARENT_DEATH_SIGNAL), 0, 0, 0)
        except (OSError, AttributeError):
            pass
    if os.getppid() != int(parent):
        _end_group()


def _python_script(path: str) -> bool:
    """A file run as a script: `*.py`, or a file whose `#!` line names python."""
    if path.endswith((".py", ".pyw")):
        return True
    try:
        with open(path, "rb") as handle:
            first = handle.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


# Interpreter options that take the next word as their value (`python -W ignore x.py`).
_OPTIONS_WITH_VALUE = ("-W", "-X", "--check-hash-based-pycs")


def parse_command(argv: list[str]) -> tuple[str, str, list[str]]:
    """("path"|"module", what, sys.argv) for a Python command line; Refused for anything
    the child cannot run in-process. Torch-free: the parent checks the command with it
    before running anything."""
    words = list(argv)
    if words and os.path.basename(words[0]).startswith("python"):
        words = words[1:]
        while words and words[0].startswith("-") and words[0] not in ("-m", "-c", "-"):
            option = words.pop(0)  # interpreter flags such as -u, -O
            if option in _OPTIONS_WITH_VALUE and words:
                words.pop(0)
    if not words:
        raise Refused("nothing to run: the command names no script or module")
    if words[0] in ("-m",) and len(words) > 1:
        return "module", words[1], [words[1], *words[2:]]
    if words[0] in ("-c", "-"):
        raise Refused(f"`python {words[0]}` is not supported; put the code in a file")
    if os.path.basename(words[0]) in ("pytest", "py.test"):
        return "module", "pytest", ["pytest", *words[1:]]
    if os.path.isfile(words[0]) and _python_script(words[0]):
        return "path", words[0], words
    if words[0].endswith(".py"):
        raise Refused(f"no such file: {words[0]}")
    raise Refused(f"can only run Python commands (python X.py, python -m M, pytest), "
                  f"not {words[0]!r}")


def _crash(error: BaseException) -> dict:
    frames = traceback.extract_tb(error.__traceback__)
    def theirs(name: str) -> bool:
        name = name.replace(os.sep, "/")
        return not any(part in name for part in ("devicelint/runtime", "site-packages", "<frozen"))

    user = [f for f in frames if theirs(f.filename)]
    last = user[-1] if user else (frames[-1] if frames else None)
    return {
        "type": type(error).__name__,
        "message": str(error).splitlines()[0][:500] if str(error) else "",
        "path": last.filename if last else None,
        "line": last.lineno if last else None,
    }


def run(plan_path: str, result_path: str) -> int:
    from devicelint.runtime.plan import Plan

    with open(plan_path, encoding="utf-8") as handle:
        plan = Plan.from_json(handle.read())
    signal.signal(signal.SIGTERM, _on_term)
    signal.signal(signal.SIGINT, _on_term)
    started = time.perf_counter()
    result: dict = {"argv": plan.argv, "exit_code": 0, "crash": None, "stopped": None}
    try:
        kind, what, argv, torch, device = _prepare(plan)
    except Refused as error:
        # Nothing of the user's code ran: the parent reports this and exits 2.
        result.update(exit_code=2, refused=str(error))
        _write(result_path, result)
        return 2
    except Stopped as stop:  # Ctrl-C or the time limit while torch was still importing
        result.update(exit_code=130 if str(stop) == "interrupted" else 124, stopped=str(stop),
                      refused=f"stopped before the run started ({stop})")
        _write(result_path, result)
        return 2

    from devicelint.runtime import hooks, probes
    from devicelint.runtime.tracker import Tracker
    from devicelint.runtime_spec import Watch

    sim = None
    if device == "sim":
        from devicelint.runtime.sim import Simulation

        simulation = Simulation(plan.sim_gpus)
        simulation.install()
        sim = simulation.sim
        device_of = simulation.device_of
    else:
        def device_of(tensor):
            return str(tensor.device)

    finder = None
    if plan.user_roots:
        from devicelint.runtime.finder import Finder

        finder = Finder(plan.user_roots)
        finder.install_module_sites()
    tracker = Tracker(plan.watched(), device_of, sim, finder)
    hooks.install(tracker, {Watch(value) for value in plan.watch})

    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = argv
    started = time.perf_counter()  # the user's run alone (not torch's import): ranking's share
    if kind == "path":
        sys.path.insert(0, os.path.dirname(os.path.abspath(what)))
    tracker.bottom = sys._getframe()  # runpy's frames and ours are no user code
    try:
        if kind == "path":
            runpy.run_path(what, run_name="__main__")
        else:
            runpy.run_module(what, run_name="__main__", alter_sys=True)
    except SystemExit as done:
        code = done.code
        result["exit_code"] = code if isinstance(code, int) else (0 if code is None else 1)
    except Stopped as stop:
        result["stopped"] = str(stop)
        result["exit_code"] = 124 if str(stop) == "timed out" else 130
    except BaseException as error:  # noqa: BLE001 - the user's crash is a result
        result["crash"] = _crash(error)
        result["exit_code"] = 1
    finally:
        tracker.uninstall()
        sys.argv, sys.path[:] = old_argv, old_path
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    result["run_seconds"] = round(time.perf_counter() - started, 3)

    # The rules (and libcst) are imported only now: not a moment of the run is spent on them.
    rules = {code: _load_rule(where) for code, where in plan.rules.items()}
    probe_run = probes.ProbeRun(device, tracker)
    result["device"] = device
    result["device_name"] = probe_run.device_name
    result["torch"] = torch.__version__
    verdicts = []
    for path, lines in plan.lines.items():
        for line, line_codes in lines.items():
            for code in line_codes:
                try:
                    confirmation = probes.verdict(probe_run, path, line, rules.get(code))
                except Exception as error:  # noqa: BLE001 - one probe must not lose the rest
                    confirmation = probe_run.base("inconclusive", f"probe failed: {error!r}")
                _add_cost(probe_run, confirmation, tracker.records.get((path, line)))
                verdicts.append({"path": path, "line": line, "code": code,
                                 "confirmation": confirmation})
    result["verdicts"] = verdicts
    if finder is not None:
        from devicelint.runtime import finder as finding

        result["found"] = finding.judge(probe_run, finder, tracker, plan, rules)
        result["optimizer_steps"] = finder.steps
        result["unobserved"] = finder.unobserved()
        for hit in result["found"]:
            _add_cost(probe_run, hit["confirmation"],
                      finder.records.get((hit["path"], hit["line"])))
    result["premise"] = {
        path: {code: probes.pitfall_lines(probe_run, path, rules.get(code)) for code in codes_}
        for path, codes_ in plan.whole_files.items()
    }
    if sim is not None:
        result["sim_counts"] = {"copies": sim.copies, "syncs": sim.syncs}
    _write(result_path, result)
    return 0


def _add_cost(probe_run, confirmation: dict, rec) -> None:
    """`cost_ms` for ranking (runtime/rank.py): the probe's own figure when it gave one,
    else the time of the line's device events."""
    if confirmation.get("status") not in HAPPENED or rec is None:
        return
    if isinstance(confirmation.get("measured_ms"), (int, float)):
        return
    cost = probe_run.event_ms(rec)
    if cost > 0:
        confirmation["cost_ms"] = round(cost, 4)
        if probe_run.estimated:
            confirmation["estimated"] = True


def _prepare(plan):
    """(kind, what, argv, torch, device) for the run, or Refused: what cannot run is found
    before any of the user's code does."""
    kind, what, argv = parse_command(plan.argv)
    if kind == "module" and what != "pytest":
        import importlib.util

        try:
            found = importlib.util.find_spec(what)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise Refused(f"no module named {what!r}")
    try:
        import torch
    except ImportError as error:
        raise Refused(f"torch cannot be imported ({error}); `devicelint confirm` runs the "
                      f"code with torch: pip install 'devicelint[runtime]'") from None
    device = plan.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "sim"
    elif device == "cuda" and not torch.cuda.is_available():
        raise Refused("--device cuda: torch sees no CUDA device (torch "
                      f"{torch.__version__}, CUDA_VISIBLE_DEVICES="
                      f"{os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}); "
                      "use --device sim for the simulated device")
    return kind, what, argv, torch, device


def _load_rule(where: str):
    """The rule class at "module:ClassName" (Plan.rules)."""
    import importlib

    module, _, name = where.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except Exception:  # noqa: BLE001 - its lines are judged "no runtime probe", the rest go on
        return None


def _write(path: str, result: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(result, handle, default=str)
    os.replace(tmp, path)


if __name__ == "__main__":
    die_with_parent()
    sys.exit(run(sys.argv[1], sys.argv[2]))
