"""`devicelint confirm` runs user code: the child must never outlive its time limit, leave
processes behind, or take devicelint's own results down with it. tests/test_runtime_sim.py
covers a plain timeout and a Python exception; these cover the hostile cases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch  # noqa: F401 - the runtime checker needs it; in the dev extra: must not skip

pytestmark = pytest.mark.skipif(os.name != "posix", reason="process groups and signals: POSIX")

from devicelint.finding import Finding  # noqa: E402
from devicelint.runtime import launch  # noqa: E402
from devicelint.runtime.plan import plan_for  # noqa: E402


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "user_script.py"
    path.write_text("import os, signal, subprocess, sys, time\nimport torch\n"
                    + textwrap.dedent(body))
    return path


def _run(script: Path, timeout: float = 60.0):
    finding = Finding("DL004", "sync-in-loop", str(script), 3, 1, 3, 1, "probe")
    return launch.run_child(plan_for([finding], [str(script)], "sim"), timeout, quiet_output=True)


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for a parent (PID 1 may never reap it here)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


def _wait_dead(pids: list[int], seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        living = [pid for pid in pids if _alive(pid)]
        if not living:
            return []
        time.sleep(0.1)
    return living


SPAWN = """
pids = []
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
pids.append(sleeper.pid)
forked = os.fork()
if forked == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a stubborn grandchild
    time.sleep(600)
    os._exit(0)
pids.append(forked)
with open(os.environ["PIDFILE"], "w") as handle:
    handle.write(" ".join(map(str, pids)))
"""


@pytest.mark.slow
def test_sleeping_forever_is_stopped_at_the_time_limit(tmp_path: Path, monkeypatch) -> None:
    # It ignores SIGTERM too: after the grace period the whole group is killed.
    monkeypatch.setattr(launch, "GRACE_SECONDS", 2)
    script = _script(tmp_path, """
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    """)
    started = time.monotonic()
    child = _run(script, timeout=8)
    assert child.timed_out
    assert time.monotonic() - started < 60
    assert child.exit_code == -signal.SIGKILL


@pytest.mark.parametrize("ending", ["exits", "times_out"])
@pytest.mark.slow
def test_forked_children_leave_no_orphans(tmp_path: Path, monkeypatch, ending: str) -> None:
    monkeypatch.setattr(launch, "GRACE_SECONDS", 2)
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("PIDFILE", str(pidfile))
    tail = "while True:\n    time.sleep(1)\n" if ending == "times_out" else "print('done')\n"
    child = _run(_script(tmp_path, SPAWN + tail), timeout=8 if ending == "times_out" else 60)
    assert child.timed_out == (ending == "times_out")
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2
    assert _wait_dead(pids) == [], "the user's subprocesses outlived the run"


@pytest.mark.slow
def test_memory_exhaustion_is_reported(tmp_path: Path) -> None:
    # RLIMIT_AS makes the allocation fail at once instead of swapping the machine.
    script = _script(tmp_path, """
        import resource
        with open("/proc/self/status") as handle:
            size = next(int(l.split()[1]) for l in handle if l.startswith("VmSize")) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size + 256 * 2**20, resource.RLIM_INFINITY))
        hog = []
        while True:
            hog.append(bytearray(64 * 2**20))
    """)
    child = _run(script)
    assert not child.timed_out
    assert child.result is not None, child.stderr_tail
    assert child.result["crash"]["type"] == "MemoryError"
    assert child.result["exit_code"] == 1  # the user's code failed; the child itself did not


@pytest.mark.slow
def test_segfault_is_reported_and_lint_results_survive(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from devicelint.runtime.command import confirm

    script = _script(tmp_path, """
        import torch.nn as nn
        model = nn.DataParallel(nn.Linear(4, 2))
        os.kill(os.getpid(), signal.SIGSEGV)
    """)
    result = CliRunner().invoke(confirm, [str(script), "--device", "sim", "--",
                                          sys.executable, str(script)])
    assert "Traceback" not in result.output
    assert "DL005" in result.output, result.output  # the lint finding is still reported
    assert "SIGSEGV" in result.output, result.output
    assert result.exit_code in (0, 1, 2)

    child = _run(script)
    assert child.exit_code == -signal.SIGSEGV and child.result is None
    assert launch.describe_exit(child.exit_code) == "-11 (killed by SIGSEGV)"


@pytest.mark.slow
def test_interrupting_devicelint_kills_the_child(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    script = _script(tmp_path, SPAWN + """
with open(os.environ["PIDFILE"] + ".self", "w") as handle:
    handle.write(str(os.getpid()))
while True:
    time.sleep(1)
""")
    env = {**os.environ, "PIDFILE": str(pidfile), "NO_COLOR": "1"}
    parent = subprocess.Popen(
        [sys.executable, "-m", "devicelint", "confirm", str(script), "--device", "sim",
         "--timeout", "300", "--", sys.executable, str(script)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 120
        selfpid = Path(str(pidfile) + ".self")
        while not (pidfile.exists() and selfpid.exists()) and time.monotonic() < deadline:
            assert parent.poll() is None, parent.communicate()
            time.sleep(0.2)
        assert selfpid.exists(), "the user's script never started"
        pids = [int(p) for p in pidfile.read_text().split()] + [int(selfpid.read_text())]
        parent.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal sends to devicelint
        out, err = parent.communicate(timeout=90)
    finally:
        if parent.poll() is None:
            parent.kill()
    assert "Traceback" not in err, err[-2000:]
    assert "interrupted" in out + err
    assert _wait_dead(pids) == [], "the child or its subprocesses outlived devicelint"
