from __future__ import annotations

import os
import re
from typing import Optional

import libcst as cst

from devicelint.analysis import call_arg, keyword_arg
from devicelint.rule import Rule

INDEXED_CUDA = re.compile(r"cuda:\d+")
# Calls whose integer argument is a CUDA device index.
# Tests that say the branch runs in a single process: there index 0 is the only sensible
# choice and always exists (`CUDA_VISIBLE_DEVICES` renumbers from 0).
SINGLE_PROCESS = re.compile(
    r"DistributedType\.NO\b|world_size\s*==\s*1\b|local_rank\s*==\s*-1\b"
    r"|not\s+(torch\.)?(distributed|dist)\.is_initialized\(\)"
)
INDEX_CALLS = {
    "torch.cuda.set_device": (0, "device"),
    "torch.cuda.device": (0, "device"),
}


def is_test_path(path: str) -> bool:
    """Test code may pin a device: test_*.py, *_test.py, conftest.py, or under tests/ or
    test/ (the exemption the issue asks for)."""
    parts = re.split(r"[\\/]+", os.path.normpath(path))
    base = parts[-1] if parts else ""
    if base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py":
        return True
    return any(part in ("tests", "test") for part in parts[:-1])


class HardcodedDeviceIndex(Rule):
    """## What it does
    Flags a CUDA device index written into the code: the strings `"cuda:0"`, `"cuda:1"`, ...
    used as a value (an argument such as `.to("cuda:0")`, `torch.device("cuda:1")`,
    `map_location="cuda:0"`, an assignment, a parameter default), `torch.device("cuda", 1)`,
    `torch.device(1)`, `.cuda(1)`, `.to(0)`, `device=0` in a `torch.*` call,
    `torch.cuda.set_device(1)` and `with torch.cuda.device(1):`.

    Stays silent on computed indices (`f"cuda:{rank}"`, `torch.device("cuda", local_rank)`,
    `.cuda(args.gpu)`), on plain `"cuda"` (the current device), on strings in docstrings
    and other bare string statements, in comparisons (`device == "cuda:0"`), in dict
    literals (device remapping tables), in code under an `if` that tests
    `torch.cuda.device_count()` (a deliberate multi-GPU layout that checked the index
    exists), and, for index 0 only, in the true branch of a test saying the process is not
    distributed (`distributed_type == DistributedType.NO`, `world_size == 1`,
    `local_rank == -1`, `not dist.is_initialized()`): one process, and index 0 always
    exists.

    **Test files are exempt, by path**: files named `test_*.py`, `*_test.py` or
    `conftest.py`, and files under a `tests/` or `test/` directory. This is the one
    path-based decision in the rule; tests routinely pin a device on purpose.

    ## Why is this bad?
    Device indices are relative to the devices a process can see. Under `torchrun` every
    rank runs the same code, so `"cuda:0"` puts all ranks on GPU 0 (out of memory, or N
    processes sharing one GPU while the others idle), and loading a checkpoint with
    `map_location="cuda:0"` does the same. Under `CUDA_VISIBLE_DEVICES=3` a process sees one
    device, so `"cuda:1"` fails with "invalid device ordinal". Library code cannot know
    which index its caller wants.

    ## Example
    ```python
    model = Net().to("cuda:0")
    state = torch.load(path, map_location="cuda:0")
    ```

    ## Use instead
    ```python
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)  # or take a `device` argument
    model = Net().to(device)
    state = torch.load(path, map_location=device)
    ```
    """

    code = "DL010"
    name = "hardcoded-device-index"
    summary = "CUDA device index hard-coded (breaks under torchrun and CUDA_VISIBLE_DEVICES)"
    message = (
        "hard-coded CUDA device index: every torchrun rank would use this same GPU, and it "
        "may not exist under CUDA_VISIBLE_DEVICES; take the device from the caller or from "
        "LOCAL_RANK"
    )
    tokens = ("cuda",)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.exempt = is_test_path(ctx.path)
        self.candidates: list[cst.CSTNode] = []

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.exempt or "cuda:" not in node.value:
            return
        text = node.raw_value
        if INDEXED_CUDA.fullmatch(text):
            self.candidates.append(node)

    def visit_Call(self, node: cst.Call) -> None:
        if self.exempt:
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "cuda":
            if _is_int(call_arg(node, 0, "device")):
                self.candidates.append(node)
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            first = call_arg(node, 0, "\0")
            if _is_int(first) or _is_int(keyword_arg(node, "device")):
                self.candidates.append(node)
            return
        name = self.ctx.qualname(func)
        if name is None or not name.startswith("torch."):
            return
        if name == "torch.device":
            first = call_arg(node, 0, "type")
            if _is_int(first) or (_is_int(call_arg(node, 1, "index"))):
                self.candidates.append(node)
        elif name in INDEX_CALLS:
            index, keyword = INDEX_CALLS[name]
            if _is_int(call_arg(node, index, keyword)):
                self.candidates.append(node)
        elif _is_int(keyword_arg(node, "device")):
            self.candidates.append(node)

    def leave_Module(self, node: cst.Module) -> None:
        for candidate in self.candidates:
            if isinstance(candidate, cst.SimpleString):
                target = self._string_site(candidate)
                if target is None:
                    continue
            else:
                target = candidate
            if self._guarded(target, _index_zero(candidate)):
                continue
            self.report(target)

    def _string_site(self, node: cst.SimpleString) -> Optional[cst.CSTNode]:
        """Where to report a `"cuda:N"` literal, or None where it is not a device value."""
        parent = self.ctx.parent(node)
        if isinstance(parent, cst.Expr):
            return None  # a docstring or other bare string statement
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.DictElement,
                               cst.ConcatenatedString, cst.FormattedString)):
            return None
        container = parent
        while isinstance(container, (cst.Element, cst.Tuple, cst.List, cst.Set)):
            container = self.ctx.parent(container)  # `x in ("cuda:0", "cuda:1")`
        if container is not parent and isinstance(
            container, (cst.Comparison, cst.ComparisonTarget)
        ):
            return None
        if isinstance(parent, cst.Arg):
            call = self.ctx.parent(parent)
            if isinstance(call, cst.Call):
                return call
        return node

    def _guarded(self, node: cst.CSTNode, index_zero: bool) -> bool:
        """Under an `if` that checked `torch.cuda.device_count()`, or (for index 0) in the
        true branch of a test saying the process is not distributed."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
                test = self.ctx.code(ancestor.test)
                if "device_count" in test:
                    return True
                if index_zero and child is ancestor.body and SINGLE_PROCESS.search(test):
                    return True
            child = ancestor
        return False


def _index_zero(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.SimpleString):
        return node.raw_value == "cuda:0"
    if isinstance(node, cst.Call):
        return any(isinstance(a.value, cst.Integer) and a.value.value == "0" for a in node.args)
    return False


def _is_int(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Integer)
