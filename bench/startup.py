"""Start-up of one small file, uncached (issue 17), for this checkout against another commit:
CPU (user + system) and wall time of whole runs, alternated run by run so that a loaded
machine's noise hits both alike.

    python bench/startup.py [--baseline REV] [--runs 10] [FILE ...]

Each tree (this checkout's working files, and REV's) is copied as it installs (rules/ as
devicelint/rules), compiled, and its dataclass table and parsed API table written
(`python -m devicelint.dataclass_code`), as a normal install and its first run leave them;
each run is `python -S -m devicelint --no-cache -q FILE` with PYTHONPATH=<tree>:<the
site-packages of this interpreter>. Default files: bench/throughput.py's 40-line training
script, fixtures/DL001/bad_dataset_samples.py, and a file no rule's tokens match.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from throughput import TRAIN_SCRIPT  # noqa: E402


def tree(rev: str | None, dest: Path) -> Path:
    """An installed-like copy of `rev` (None: the working files), compiled, tables written."""
    dest.mkdir(parents=True)
    if rev is None:
        for name in ("devicelint", "rules"):
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        archive = subprocess.run(["git", "archive", rev, "devicelint", "rules"], cwd=ROOT,
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest)
    shutil.rmtree(dest / "devicelint" / "rules", ignore_errors=True)
    (dest / "rules").rename(dest / "devicelint" / "rules")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(dest)], stdout=subprocess.DEVNULL, check=True)
    env = environment(dest)
    # From the tree's folder: `-m` puts the working directory first on sys.path.
    subprocess.run([sys.executable, "-S", "-m", "devicelint.dataclass_code"], env=env, cwd=dest,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # absent before ad11ffc
    return dest


def environment(root: Path) -> dict:
    return {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{sysconfig.get_paths()['purelib']}"}


def once(root: Path, path: Path) -> tuple[float, float]:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-S", "-m", "devicelint", "--no-cache", "-q", path.name],
                            cwd=path.parent, env=environment(root),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"devicelint failed on {path} ({root})")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="HEAD", help="a git revision to compare with")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        files = [Path(f).resolve() for f in args.files]
        if not files:
            (tmp / "files").mkdir()
            files = [tmp / "files" / "train.py", tmp / "files" / "bad_dataset_samples.py", tmp / "files" / "one.py"]
            files[0].write_text(TRAIN_SCRIPT)
            files[1].write_text((ROOT / "fixtures" / "DL001" / "bad_dataset_samples.py").read_text(encoding="utf-8"))
            files[2].write_text("import torch\nx = torch.zeros(3)\n")
        trees = {args.baseline: tree(args.baseline, tmp / "baseline"), "this checkout": tree(None, tmp / "now")}
        for root in trees.values():  # the rule catalogue of each tree, written once
            once(root, files[0])
        print(f"{len(os.sched_getaffinity(0))} usable cores, load {os.getloadavg()[0]:.1f}, "
              f"Python {sys.version.split()[0]}; {args.runs} runs alternated; CPU and wall in ms, min / median")
        for path in files:
            times: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
            for _ in range(args.runs):
                for label, root in trees.items():
                    times[label].append(once(root, path))
            for label, rows in times.items():
                cpu = [c * 1e3 for c, _ in rows]
                wall = [w * 1e3 for _, w in rows]
                print(f"{path.name:<28} {label:<16} CPU {min(cpu):6.1f} / {statistics.median(cpu):6.1f}"
                      f"   wall {min(wall):6.1f} / {statistics.median(wall):6.1f}")


if __name__ == "__main__":
    main()
