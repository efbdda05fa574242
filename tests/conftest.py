import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    try:  # imported only when GPU tests were collected: torch takes seconds to import
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine)")
    for item in gpu_items:
        if not has_cuda:
            item.add_marker(skip)


# Modules whose every test is marked `slow`. When the run deselects slow tests (the default:
# pyproject.toml's addopts `-m "not slow"`), they are not even imported: test_fuzz builds a
# grammar-based program generator at import time (about 10 s of CPU), and deselection by
# marker happens only after a module was imported.
SLOW_MODULES = {"test_fuzz.py", "test_confirm_fixtures.py", "test_packaging.py"}


def pytest_ignore_collect(collection_path, config):
    if collection_path.name in SLOW_MODULES and config.getoption("markexpr", "") == "not slow":
        return True
    return None
