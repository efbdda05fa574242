"""Speed of devicelint against ruff and TorchFix (and against an earlier devicelint) on real
PyTorch code. A script, not a test: it prints ratios.

    python bench/throughput.py [--runs 3] [--tools-venv DIR] [--baseline-site DIR]
                               [--corpora torchvision,pytorch-lightning,timm] [--scale]

Needs `ruff` and `torchfix` in a separate environment (TorchFix pins its own libcst):

    python3 -m venv /tmp/benchenv && /tmp/benchenv/bin/pip install torchfix ruff

`--index-off`: also this devicelint with the project index off (`project_index.ENABLED =
False`, the "without the index" of issue 13), so that the semantic model's own cost (index
off against the baseline) and the index's share (on against off) come from the same run.

`--baseline-site DIR`: a directory holding another devicelint (e.g. `pip install --no-deps
--target DIR <wheel of an older commit>`); it runs as `PYTHONPATH=DIR python -m devicelint`
beside the current one, so before/after ratios come from one run on one machine.

Rows, per corpus (pinned in bench/corpus.py, copied to a temporary directory): cold wall and
CPU time of every tool, run alternately so that machine noise hits all alike, medians of
`--runs`. Then, on the last corpus: devicelint warm (cache primed, nothing changed) and warm
with one file touched; TorchFix lines/s against devicelint's on 40 timm model files; one small
file uncached (start-up included); peak RSS on one ~4.9 MB file (copies of timm's
vision_transformer.py); with `--scale`, a curve over 1/4, 1/2 and all of transformers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CORPORA, corpus  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEVICELINT = [sys.executable, "-m", "devicelint"]
BIG_FILE_BYTES = 4_900_000  # under the default max-file-size (5,000,000)


def count_lines(root: Path) -> tuple[int, int]:
    files = list(root.rglob("*.py")) if root.is_dir() else [root]
    return len(files), sum(f.read_bytes().count(b"\n") for f in files)


def timed(cmd: list[str], cwd: Path, env: dict | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system of the process and the children it waited
    for) and peak RSS in MB of the largest process."""
    start = time.perf_counter()
    before = os.times()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    after = os.times()
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{cmd} exited {code}: {stderr[-2000:]}")
    # wait4 gives the direct child's usage; its workers are in the grandchildren that the
    # child waited for, which os.times() counts for this process's children.
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    cpu = max(cpu, usage.ru_utime + usage.ru_stime)
    return wall, cpu, usage.ru_maxrss / 1024


# `python -m devicelint` with the project index off (bench/project_index_cost.py does the same).
INDEX_OFF = ("import sys\nimport devicelint.project_index as index\nindex.ENABLED = False\n"
             "from devicelint.cli import run\nsys.argv[0] = 'devicelint'\nrun()\n")


class Tool:
    def __init__(self, label: str, cmd: list[str], env: dict | None = None) -> None:
        self.label, self.cmd, self.env = label, cmd, env


def tools_for(args: argparse.Namespace) -> list[Tool]:
    tools = Path(args.tools_venv) / "bin"
    found = [Tool("devicelint", DEVICELINT + ["--no-cache", "-q", "."])]
    if args.index_off:
        found.append(Tool("devicelint (index off)", [sys.executable, "-c", INDEX_OFF, "--no-cache", "-q", "."]))
    if args.baseline_site:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [args.baseline_site, *filter(None, [os.environ.get("PYTHONPATH")])]))
        found.append(Tool("devicelint (baseline)", DEVICELINT + ["--no-cache", "-q", "."], env))
    found.append(Tool("ruff --select ALL", [str(tools / "ruff"), "check", "--select", "ALL",
                                            "--no-cache", "--exit-zero", "-q", "."]))
    return found


def alternate(tools: list[Tool], cwd: Path, runs: int) -> dict[str, dict]:
    results: dict[str, list] = {tool.label: [] for tool in tools}
    for _ in range(runs):
        for tool in tools:
            results[tool.label].append(timed(tool.cmd, cwd, tool.env))
    return {label: {"wall": statistics.median(r[0] for r in rows),
                    "cpu": statistics.median(r[1] for r in rows),
                    "rss": max(r[2] for r in rows), "walls": [round(r[0], 2) for r in rows]}
            for label, rows in results.items()}


def print_corpus(name: str, files: int, lines: int, rows: dict[str, dict]) -> None:
    ruff = rows.get("ruff --select ALL")
    base = rows.get("devicelint (baseline)")
    print(f"\n{name}: {files} files, {lines:,} lines")
    print(f"{'tool':<24} {'wall s':>7} {'cpu s':>7} {'lines/s':>9} {'vs ruff':>8} "
          f"{'vs baseline':>11} {'peak RSS':>9}  walls")
    for label, row in rows.items():
        vs_ruff = f"{row['wall'] / ruff['wall']:.2f}x" if ruff else "-"
        vs_base = f"{row['wall'] / base['wall']:.2f}x" if base and label.startswith("devicelint") else "-"
        print(f"{label:<24} {row['wall']:>7.2f} {row['cpu']:>7.2f} {lines / row['wall']:>9.0f} "
              f"{vs_ruff:>8} {vs_base:>11} {row['rss']:>7.0f}MB  {row['walls']}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tools-venv", default="/tmp/benchenv")
    parser.add_argument("--baseline-site", default=None)
    parser.add_argument("--corpora", default="torchvision,pytorch-lightning,timm")
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--index-off", action="store_true", help="Also devicelint with the project index off.")
    parser.add_argument("--scale", action="store_true", help="Also the transformers scale curve.")
    args = parser.parse_args()
    print(f"machine: {len(os.sched_getaffinity(0))} usable cores of {os.cpu_count()}, "
          f"Python {sys.version.split()[0]}; corpora: "
          + ", ".join(f"{k}=={CORPORA[k]}" for k in args.corpora.split(",")))
    tools = tools_for(args)
    as_installed(args.baseline_site)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        last = tmp
        for name in args.corpora.split(","):
            target = tmp / name
            shutil.copytree(corpus(name), target, ignore=shutil.ignore_patterns(".complete"))
            files, lines = count_lines(target)
            print_corpus(name, files, lines, alternate(tools, target, args.runs))
            last = target
        warm(last, args.runs)
        if not args.skip_torchfix and "timm" in args.corpora.split(","):
            versus_torchfix(tmp / "timm", tmp, Path(args.tools_venv) / "bin", tools[:1])
        startup(tmp)
        big_file(tmp)
        if args.scale:
            scale_curve(tmp, Path(args.tools_venv) / "bin")


def warm(root: Path, runs: int) -> None:
    cmd = DEVICELINT + ["-q", "."]
    shutil.rmtree(root / ".devicelint_cache", ignore_errors=True)
    timed(cmd, root)  # prime the cache
    time.sleep(3.5)  # the copy's files are new: a run is recorded once nothing changed for 3 s
    first = timed(cmd, root)  # every file served from the results file; records the run
    unchanged = [timed(cmd, root) for _ in range(runs)]  # served from the run's record
    touched_file = sorted(root.rglob("*.py"))[0]
    touched = []
    for _ in range(runs):
        touched_file.write_text(touched_file.read_text() + f"\n# touched {time.time()}\n")
        touched.append(timed(cmd, root))
    print(f"\nwarm on {root.name} (cache primed): nothing changed: first run {first[0]:.2f} s wall "
          f"({first[1]:.2f} s CPU), then median {statistics.median(w for w, _, _ in unchanged):.2f} s wall "
          f"({statistics.median(c for _, c, _ in unchanged):.2f} s CPU); one file touched median "
          f"{statistics.median(w for w, _, _ in touched):.2f} s wall")


def versus_torchfix(timm: Path, tmp: Path, tools: Path, devicelint: list[Tool]) -> None:
    models = tmp / "timm-models-40"
    models.mkdir()
    for path in sorted((timm / "timm" / "models").glob("*.py"))[:40]:
        shutil.copyfile(path, models / path.name)
    files, lines = count_lines(models)
    rows = alternate([*devicelint, Tool("torchfix", [str(tools / "torchfix"), "."])], models, 1)
    dl, tf = rows["devicelint"]["wall"], rows["torchfix"]["wall"]
    print(f"\n40 timm model files ({lines:,} lines): devicelint {dl:.2f} s ({lines / dl:,.0f} lines/s), "
          f"TorchFix {tf:.2f} s ({lines / tf:,.0f} lines/s): devicelint {tf / dl:.1f}x TorchFix's lines/s")


# A small training script as users write them: a model, a loader, a loop, `.to(device)`,
# a logged `.item()` (devicelint reports DL008 and DL004 in it). Kept here, not as a file of
# the repository, which devicelint lints too.
TRAIN_SCRIPT = """\
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, features=20, hidden=64, classes=4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.body(x)


def train(epochs=3):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = TensorDataset(torch.randn(1024, 20), torch.randint(0, 4, (1024,)))
    loader = DataLoader(data, batch_size=64, shuffle=True)
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        start = time.time()
        total = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: loss {total / len(loader):.3f} in {time.time() - start:.2f} s")
    return model


if __name__ == "__main__":
    train()
"""


def as_installed(baseline_site: str | None = None) -> None:
    """Bytecode and devicelint's dataclass table written, as a normal install and its first
    run leave them: where PYTHONDONTWRITEBYTECODE is set (the device machine), neither is
    written by the runs themselves. Done before anything is timed (cold, warm and start-up
    runs alike), for the baseline's folder too: until session 7 it came just before the
    start-up runs, so the device's cold and warm runs compiled every module they imported."""
    # devicelint.rules too: an editable install (the device machine's) maps it to the
    # checkout's rules/, outside devicelint's folder, and every run compiled the rules it
    # imported (a pip-installed devicelint has them compiled in site-packages).
    where = subprocess.run(DEVICELINT[:1] + ["-c", "import click, devicelint, devicelint.rules, libcst, os; print("
                           "'\\n'.join(os.path.dirname(m.__file__) for m in (click, devicelint, devicelint.rules, libcst)))"],
                           capture_output=True, text=True, check=True).stdout.split()
    if baseline_site:
        where.append(baseline_site)
    subprocess.run(DEVICELINT[:1] + ["-m", "compileall", "-q", *where], stdout=subprocess.DEVNULL, check=False)
    subprocess.run(DEVICELINT[:1] + ["-m", "devicelint.dataclass_code"], check=False)


def startup(tmp: Path) -> None:
    # Three small files: one no rule's tokens match (libcst is never imported), a short
    # fixture and a training script the rules parse (libcst's import, the engine and the
    # rules whose tokens occur in it). The install was compiled first (main: as_installed).
    small = tmp / "one.py"
    small.write_text("import torch\nx = torch.zeros(3)\n")
    fixture = tmp / "train_small.py"
    fixture.write_text((ROOT / "fixtures" / "DL001" / "bad_dataset_samples.py").read_text(encoding="utf-8"))
    script = tmp / "train.py"
    script.write_text(TRAIN_SCRIPT)
    for label, path in (("one small file, uncached", small),
                        ("one small file the rules parse (fixtures/DL001/bad_dataset_samples.py), uncached", fixture),
                        ("a 40-line training script the rules parse, uncached", script)):
        walls = [timed(DEVICELINT + ["--no-cache", str(path)], tmp) for _ in range(10)]
        print(f"\n{label}: median {statistics.median(w for w, _, _ in walls):.3f} s wall "
              f"(min {min(w for w, _, _ in walls):.3f}), median {statistics.median(c for _, c, _ in walls):.3f} s CPU, "
              f"peak RSS {max(r for _, _, r in walls):.0f} MB")


def big_file(tmp: Path) -> None:
    source = corpus("timm") / "timm" / "models" / "vision_transformer.py"
    text = source.read_text(encoding="utf-8")
    copies = max(1, BIG_FILE_BYTES // len(text.encode("utf-8")))
    big = tmp / "big" / "copies.py"
    big.parent.mkdir()
    big.write_text(text * copies, encoding="utf-8")
    wall, cpu, rss = timed(DEVICELINT + ["--no-cache", "-q", str(big)], tmp)
    print(f"\none {big.stat().st_size / 1e6:.1f} MB file ({copies} copies of vision_transformer.py): "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU, peak RSS {rss:.0f} MB")


def scale_curve(tmp: Path, tools: Path) -> None:
    source = corpus("transformers")
    all_files = sorted(source.rglob("*.py"))
    print("\nScale curve (transformers, cold, no cache):")
    print(f"{'fraction':<10} {'files':>6} {'lines':>9} {'devicelint s':>13} {'lines/s':>9} {'ruff s':>8} "
          f"{'ratio':>6} {'RSS':>7}")
    for fraction in (4, 2, 1):
        subset = tmp / f"tf-{fraction}"
        for path in all_files[: len(all_files) // fraction]:
            target = subset / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        n_files, n_lines = count_lines(subset)
        dl = timed(DEVICELINT + ["--no-cache", "-q", "."], subset)
        rf = timed([str(tools / "ruff"), "check", "--select", "ALL", "--no-cache", "--exit-zero",
                    "-q", "."], subset)
        print(f"1/{fraction:<8} {n_files:>6} {n_lines:>9,} {dl[0]:>13.2f} {n_lines / dl[0]:>9.0f} "
              f"{rf[0]:>8.2f} {dl[0] / rf[0]:>5.1f}x {dl[2]:>5.0f}MB")
        shutil.rmtree(subset)


if __name__ == "__main__":
    main()
