"""Where the project index reads local modules from when the files lie outside the project
root (a `--config` kept elsewhere, as bench/practitioner.py runs): under the directory the
user named, so a repository whose code all lies in `pkg/` still resolves `from pkg.utils
import ...` when it is linted as `.` (PyTorch-YOLOv3's layout)."""

from __future__ import annotations

import os
from pathlib import Path

from devicelint.runner import Overrides, lint_paths

LOSS = '''\
import torch


def to_cpu(t):
    return t.detach().cpu()


def compute_loss(output, target):
    loss = (output - target).pow(2).mean()
    return loss, to_cpu(loss)
'''

TRAIN = '''\
import torch
from pkg.utils.loss import compute_loss


def train(model, loader, opt, device):
    model = model.to(device)
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss, logged = compute_loss(model(x), y)
        loss.backward()
        opt.step()
'''


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg" / "utils").mkdir(parents=True)
    for init in ("pkg/__init__.py", "pkg/utils/__init__.py"):
        (repo / init).write_text("")
    (repo / "pkg" / "utils" / "loss.py").write_text(LOSS)
    (repo / "pkg" / "train.py").write_text(TRAIN)
    config = tmp_path / "elsewhere" / "pyproject.toml"
    config.parent.mkdir()
    config.write_text("")
    return repo


def test_a_package_repository_linted_as_dot_resolves_its_absolute_imports(tmp_path: Path, monkeypatch) -> None:
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo)
    overrides = Overrides(select=["DL004"], config=str(tmp_path / "elsewhere" / "pyproject.toml"))
    run = lint_paths(["."], overrides, use_cache=False, jobs=1)
    found = {(f.path.replace(os.sep, "/"), f.line, f.code) for f in run.findings}
    assert ("pkg/train.py", 9, "DL004") in found  # compute_loss's to_cpu, one call away


def test_naming_the_package_alone_keeps_its_own_root(tmp_path: Path, monkeypatch) -> None:
    # Only `pkg/` named: `pkg.utils` is not a module under it, so nothing is followed (silence).
    repo = _repo(tmp_path)
    monkeypatch.chdir(repo)
    overrides = Overrides(select=["DL004"], config=str(tmp_path / "elsewhere" / "pyproject.toml"))
    run = lint_paths(["pkg"], overrides, use_cache=False, jobs=1)
    assert not [f for f in run.findings if f.line == 9]
