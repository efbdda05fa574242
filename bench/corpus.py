"""Pinned real-world corpora for the precision audit and the benchmarks.

    python bench/corpus.py            # download (pip download --no-deps) and unpack, print paths

Each wheel is unpacked once under bench/.corpora/<name>-<version>/ (git-ignored); only its
Python sources are kept.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

CORPORA = {
    "torchvision": "0.24.1",
    "transformers": "5.23.0",
    "pytorch-lightning": "2.6.6",
    # Packages with real training / evaluation / inference step loops (the audit's "loop" group).
    "ultralytics": "8.4.190",
    "pytorch-ignite": "0.5.5",
    "timm": "1.0.31",
    "sentence-transformers": "6.2.0",
}
ROOT = Path(__file__).resolve().parent / ".corpora"


def corpus(name: str) -> Path:
    """The unpacked sources of one pinned package (downloaded on first use)."""
    version = CORPORA[name]
    target = ROOT / f"{name}-{version}"
    if (target / ".complete").exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--quiet", "-d", tmp, f"{name}=={version}"],
            check=True,
        )
        wheel = next(Path(tmp).glob("*.whl"))
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.endswith(".py") and ".dist-info/" not in member:
                    archive.extract(member, target)
    (target / ".complete").write_text(version)
    return target


def all_corpora() -> dict[str, Path]:
    return {name: corpus(name) for name in CORPORA}


if __name__ == "__main__":
    for name, path in all_corpora().items():
        files = list(path.rglob("*.py"))
        lines = sum(f.read_bytes().count(b"\n") for f in files)
        print(f"{name}=={CORPORA[name]}: {path} ({len(files)} files, {lines:,} lines)")
