"""Message lengths of devicelint and of ruff on the same code (issue 15: messages as short
as ruff's). Prints the count, median and maximum length of the one-line message of every
finding, for devicelint (--select ALL) and ruff (its default rules, and --select ALL).

    .venv/bin/python bench/message_lengths.py bench/.corpora/practitioner/PyTorch-GAN
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path


def _messages(command: list[str]) -> list[str]:
    out = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    if out.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)}: exit {out.returncode}: {out.stderr[-500:]}")
    return [item["message"] for item in json.loads(out.stdout or "[]")]


def _row(name: str, messages: list[str]) -> str:
    if not messages:
        return f"{name:<28} findings 0"
    lengths = sorted(len(m) for m in messages)
    return (f"{name:<28} findings {len(lengths):>4}  median {statistics.median(lengths):>5.0f}  "
            f"max {lengths[-1]:>4}  longest: {max(messages, key=len)[:100]}")


def main(target: str) -> None:
    bin_dir = Path(sys.executable).parent
    devicelint = str(bin_dir / "devicelint")
    ruff = shutil.which("ruff", path=str(bin_dir)) or shutil.which("ruff")
    print(_row("devicelint --select ALL",
               _messages([devicelint, "--no-cache", "--select", "ALL", "--output-format", "json", target])))
    if ruff is None:
        print("ruff: not installed (pip install ruff)")
        return
    for label, extra in (("ruff (default rules)", []), ("ruff --select ALL", ["--select", "ALL"])):
        print(_row(label, _messages([ruff, "check", "--isolated", "--no-cache", *extra,
                                     "--output-format", "json", target])))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
