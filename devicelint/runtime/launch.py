"""Start the instrumented child with a time limit; Ctrl-C stops it cleanly. Torch-free."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Optional

from devicelint.runtime.plan import Plan

# After SIGTERM the child still judges the lines it saw and writes its result.
GRACE_SECONDS = 20
STDERR_TAIL = 2000


@dataclass
class ChildRun:
    result: Optional[dict]
    exit_code: Optional[int]
    timed_out: bool
    interrupted: bool
    stderr_tail: str
    seconds: float


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_child(plan: Plan, timeout: float, quiet_output: bool = False) -> ChildRun:
    with tempfile.TemporaryDirectory(prefix="devicelint-confirm-") as folder:
        plan_path = os.path.join(folder, "plan.json")
        result_path = os.path.join(folder, "result.json")
        stderr_path = os.path.join(folder, "stderr.txt")
        with open(plan_path, "w", encoding="utf-8") as handle:
            handle.write(plan.to_json())
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [_project_root(), env.get("PYTHONPATH")]))
        env.setdefault("PYTHONUNBUFFERED", "1")
        started = time.perf_counter()
        timed_out = interrupted = False
        with open(stderr_path, "w+", encoding="utf-8", errors="replace") as stderr:
            # The user's prints go to our stderr, so that stdout carries only the report.
            stdout = subprocess.DEVNULL if quiet_output else _stderr_or_devnull()
            # Its own process group: the time limit ends the user's subprocesses too (loader
            # workers), and the terminal's Ctrl-C reaches the child only through us.
            proc = subprocess.Popen(
                [sys.executable, "-m", "devicelint.runtime.child", plan_path, result_path],
                env=env, stdout=stdout, stderr=stderr, start_new_session=True,
            )
            try:
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _stop(proc, signal.SIGTERM)
            except KeyboardInterrupt:
                interrupted = True
                _stop(proc, signal.SIGINT)
            finally:
                # The user's script may have started processes (daemons, loader workers) that
                # outlive it: end the whole group, whatever way the child ended.
                _kill_group(proc)
            stderr.seek(0)
            tail = stderr.read()[-STDERR_TAIL:]
            if proc.returncode is not None and proc.returncode < 0 and not (timed_out or interrupted):
                # A crash in native code leaves no Python traceback: name the signal.
                tail += f"\n[devicelint] the child was killed: exit code {describe_exit(proc.returncode)}\n"
        result = None
        if os.path.exists(result_path):
            with open(result_path, encoding="utf-8") as handle:
                result = json.load(handle)
        return ChildRun(result, proc.returncode, timed_out, interrupted, tail,
                        round(time.perf_counter() - started, 3))


def _stderr_or_devnull():
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return subprocess.DEVNULL  # e.g. under click's CliRunner
    return sys.stderr


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.returncode is None:
        proc.wait()


def describe_exit(code: Optional[int]) -> str:
    """`-11 (killed by SIGSEGV)` for a child that a signal ended, else the number."""
    if code is not None and code < 0:
        try:
            return f"{code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            pass
    return str(code)


def _stop(proc: subprocess.Popen, first: int) -> None:
    """Ask the child to stop (it writes what it saw), then kill its group if it lingers."""
    try:
        os.kill(proc.pid, first)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=GRACE_SECONDS)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
