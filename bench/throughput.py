"""Throughput of devicelint against TorchFix and ruff on real PyTorch code.

    python bench/throughput.py [--runs 3] [--tools-venv DIR] [--skip-scale]

Needs `torchfix` and `ruff` in a separate environment (they pin their own libcst):

    python3 -m venv /tmp/benchenv && /tmp/benchenv/bin/pip install torchfix ruff

Corpora (pinned, `pip download --no-deps`, see bench/corpus.py): the main corpus is
torchvision + pytorch-lightning sources copied to a temporary directory; the scale curve
uses 1/4, 1/2 and all of transformers. Every tool runs on the same files, alternating,
`--runs` times; the table shows medians of whole-process wall time and peak RSS.
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

DEVICELINT = [sys.executable, "-m", "devicelint"]


def count_lines(root: Path) -> tuple[int, int]:
    files = list(root.rglob("*.py"))
    return len(files), sum(f.read_bytes().count(b"\n") for f in files)


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of the process tree's largest member."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{cmd} exited {code}")
    return wall, usage.ru_maxrss / 1024


def copy_tree(sources: list[Path], target: Path) -> Path:
    for source in sources:
        shutil.copytree(source, target / source.name, ignore=shutil.ignore_patterns(".complete"))
    return target


def measure(label: str, cmd: list[str], cwd: Path, runs: int, before=None) -> dict:
    walls, rss = [], []
    for _ in range(runs):
        if before:
            before()
        wall, peak = timed(cmd, cwd)
        walls.append(wall)
        rss.append(peak)
    return {"label": label, "wall": statistics.median(walls), "rss": max(rss), "walls": walls}


def table(rows: list[dict], lines: int, files: int, reference: dict[str, float]) -> str:
    out = [
        f"{'tool':<34} {'files':>6} {'lines':>8} {'seconds':>8} {'lines/s':>9} "
        f"{'vs TorchFix':>11} {'vs ruff':>8} {'peak RSS':>9}"
    ]
    for row in rows:
        rate = lines / row["wall"]
        vs_torchfix = rate / (lines / reference["torchfix"]) if "torchfix" in reference else float("nan")
        vs_ruff = row["wall"] / reference["ruff"] if "ruff" in reference else float("nan")
        out.append(
            f"{row['label']:<34} {files:>6} {lines:>8} {row['wall']:>8.2f} {rate:>9.0f} "
            f"{vs_torchfix:>10.1f}x {vs_ruff:>7.2f}x {row['rss']:>7.0f}MB"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tools-venv", default="/tmp/benchenv")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--only-scale", action="store_true", help="Only the transformers scale curve.")
    args = parser.parse_args()
    tools = Path(args.tools_venv) / "bin"
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; corpora: "
          + ", ".join(f"{k}=={v}" for k, v in CORPORA.items()))

    with tempfile.TemporaryDirectory() as tmp:
        if args.only_scale:
            scale_curve(Path(tmp), tools)
            return
        main_corpus = copy_tree([corpus("torchvision"), corpus("pytorch-lightning")], Path(tmp) / "main")
        files, lines = count_lines(main_corpus)
        cache = main_corpus / ".devicelint_cache"
        touched = next(main_corpus.rglob("*.py"))

        def clear_cache() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        def touch_one() -> None:
            touched.write_text(touched.read_text() + f"\n# touched {time.time()}\n")

        rows = []
        reference: dict[str, float] = {}
        # Alternate tools run by run so that machine noise hits all of them alike.
        plan = [
            ("devicelint cold (--no-cache)", DEVICELINT + ["--no-cache", "-q", "."], None),
            ("ruff check --select ALL --no-cache", [str(tools / "ruff"), "check", "--select", "ALL",
                                                   "--no-cache", "--exit-zero", "-q", "."], None),
        ]
        if not args.skip_torchfix:
            plan.append(("torchfix", [str(tools / "torchfix"), "."], None))
        results: dict[str, list] = {label: [] for label, _, _ in plan}
        for _ in range(args.runs):
            for label, cmd, before in plan:
                results[label].append(timed(cmd, main_corpus))
        for label, _, _ in plan:
            walls = [w for w, _ in results[label]]
            rows.append({"label": label, "wall": statistics.median(walls),
                         "rss": max(r for _, r in results[label]), "walls": walls})
        for row in rows:
            if row["label"].startswith("ruff"):
                reference["ruff"] = row["wall"]
            if row["label"] == "torchfix":
                reference["torchfix"] = row["wall"]
        clear_cache()
        timed(DEVICELINT + ["-q", "."], main_corpus)  # prime the cache
        rows.append(measure("devicelint warm (cache, no change)", DEVICELINT + ["-q", "."], main_corpus, args.runs))
        rows.append(measure("devicelint warm, one file touched", DEVICELINT + ["-q", "."], main_corpus,
                            args.runs, before=touch_one))
        print(f"\nMain corpus: torchvision + pytorch-lightning, {files} files, {lines:,} lines\n")
        print(table(rows, lines, files, reference))

        small = Path(tmp) / "one.py"
        small.write_text("import torch\nx = torch.zeros(3)\n")
        startup = measure("devicelint one small file", DEVICELINT + ["--no-cache", str(small)], Path(tmp), 10)
        print(f"\nStart-up on one small file: median {startup['wall']:.3f} s, peak RSS {startup['rss']:.0f} MB")

        if not args.skip_scale:
            scale_curve(Path(tmp), tools)


def scale_curve(tmp: Path, tools: Path) -> None:
    if True:
        source = corpus("transformers")
        all_files = sorted(source.rglob("*.py"))
        print("\nScale curve (transformers, cold, no cache):")
        print(f"{'fraction':<10} {'files':>6} {'lines':>9} {'devicelint s':>13} {'lines/s':>9} {'ruff s':>8} {'ratio':>6} {'RSS':>7}")
        for fraction in (4, 2, 1):
            subset = tmp / f"tf-{fraction}"
            for path in all_files[: len(all_files) // fraction]:
                target = subset / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
            n_files, n_lines = count_lines(subset)
            dl = measure("devicelint", DEVICELINT + ["--no-cache", "-q", "."], subset, 1)
            rf = measure("ruff", [str(tools / "ruff"), "check", "--select", "ALL", "--no-cache",
                                  "--exit-zero", "-q", "."], subset, 1)
            print(f"1/{fraction:<8} {n_files:>6} {n_lines:>9,} {dl['wall']:>13.2f} {n_lines / dl['wall']:>9.0f} "
                  f"{rf['wall']:>8.2f} {dl['wall'] / rf['wall']:>5.1f}x {dl['rss']:>5.0f}MB")
            shutil.rmtree(subset)


if __name__ == "__main__":
    main()
