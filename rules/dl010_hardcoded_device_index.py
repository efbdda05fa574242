from __future__ import annotations

import operator
import os
import re
from typing import Optional

import libcst as cst

from devicelint.tree import children
from devicelint.rule import Rule
from devicelint.source import in_package_directory
from devicelint.semantic.model import call_arg, int_value, keyword_arg, string_value

INDEXED_CUDA = re.compile(r"cuda:(\d+)")
# Calls whose integer argument is a CUDA device index: (position, keyword).
INDEX_CALLS = {
    "torch.cuda.set_device": (0, "device"),
    "torch.cuda.device": (0, "device"),
}
# Evidence that the file runs as one of several processes: each runs this same code.
DISTRIBUTED_PREFIX = "torch.distributed"
PROCESS_CALLS = {
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.multiprocessing.spawn",
    "torch.multiprocessing.start_processes",
    "torch.multiprocessing.Process",
}
# What launchers hand each process: the environment variables torchrun sets, and the
# argument torch.distributed.launch passes.
LAUNCHER_STRINGS = {"LOCAL_RANK", "--local_rank", "--local-rank"}
# Values that tell how many processes run, by where they come from (not what they are named).
WORLD_SIZE_SOURCES = {"env:WORLD_SIZE", "torch.distributed.get_world_size"}
RANK_SOURCES = {"env:LOCAL_RANK", "env:RANK", "torch.distributed.get_rank"}
# The process index torch.multiprocessing.spawn passes as the first argument of the function it
# starts: a rank whose GPU is its own index when the code sets it (`set_device(rank)`).
PROCESS_INDEX = "spawn:index"
SET_DEVICE = "torch.cuda.set_device"
NOT_DISTRIBUTED = {"torch.distributed.is_initialized", "torch.distributed.is_available"}
ENV_READS = {"os.environ.get", "os.getenv", "os.environ.__getitem__"}
# The environment variable that decides which GPUs a process sees, and renumbers them from 0.
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
ENV_WRITES = {"os.environ.setdefault", "os.putenv", "os.environ.__setitem__"}
DEVICE_COUNT = "torch.cuda.device_count"


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
    used as a value (an argument such as `.to("cuda:1")`, `torch.device("cuda:1")`,
    `map_location="cuda:0"`, an assignment, a parameter default), `torch.device("cuda", 1)`,
    `torch.device(1)`, `.cuda(1)`, `.to(1)`, `device=1` in a `torch.*` call,
    `torch.cuda.set_device(1)` and `with torch.cuda.device(1):`, under any import alias.

    **Index 0 only where several processes or callers may run the code.** In a
    single-process script `"cuda:0"` is the GPU that `"cuda"` would pick and always exists
    (`CUDA_VISIBLE_DEVICES` renumbers from 0): not a bug. Index 0 is flagged only with
    evidence in the file that it runs as one of several processes or as a library: it
    imports or calls `torch.distributed`, builds `DistributedDataParallel`, starts processes
    with `torch.multiprocessing.spawn`/`start_processes`/`Process`, reads `LOCAL_RANK` or
    declares `--local_rank` (what launchers hand each process), or it is a package module (its
    directory has an `__init__.py`, or it uses a relative import). The message names the
    evidence. Indices 1 and above are always flagged.

    Stays silent on computed indices (`f"cuda:{rank}"`, `torch.device("cuda", local_rank)`,
    `.cuda(args.gpu)`), on plain `"cuda"` (the current device), on strings in docstrings
    and other bare string statements, in comparisons (`device == "cuda:0"`), in dict
    literals (device remapping tables), in code under an `if` whose test uses
    `torch.cuda.device_count()` (directly or through a variable bound to it: a deliberate
    multi-GPU layout that checked the index exists), and, for index 0, in the branch a test
    says runs alone or as the process whose own GPU is 0, by what it reads:
    `not dist.is_initialized()`, a world size from `dist.get_world_size()` or the
    `WORLD_SIZE` environment variable compared with 1, a rank from `LOCAL_RANK`/`RANK` or
    `dist.get_rank()` that is -1 (no launcher) or 0 (`== 0`, `in (-1, 0)`, `< 1`, the `else`
    of `> 0`), `DistributedType.NO` (accelerate). A rank is also the process index that
    `torch.multiprocessing.spawn` passes to the function it starts, followed through the
    arguments the file's calls pass on, when the file sets each process's GPU to that index
    (`torch.cuda.set_device(rank)`, and no other `set_device`). Index 0 is also silent in a
    function the file calls only from such a branch, directly or a few calls up (the VITS
    training script's `evaluate()`, called under `if rank == 0:`), unless the function is
    referenced other than by a call, decorated, or in a package module (other callers may
    run it). Index 0 is also silent after the function that holds it has set
    `CUDA_VISIBLE_DEVICES` itself (`os.environ["CUDA_VISIBLE_DEVICES"] = ...`,
    `os.environ.setdefault`, `os.putenv`; ultralytics' `select_device()`): the function chose
    which GPUs the process sees, and 0 is the first of them. These are decided from values and qualified names, never from what variables
    are called.

    **Test files are exempt, by path**: files named `test_*.py`, `*_test.py` or
    `conftest.py`, and files under a `tests/` or `test/` directory. Tests routinely pin a
    device on purpose. The path also decides "package module"; both are the rule's only
    path-based decisions.

    ## Why is this bad?
    Device indices are relative to the devices a process can see. Under `torchrun` every
    rank runs the same code, so `"cuda:0"` puts all ranks on GPU 0 (out of memory, or N
    processes sharing one GPU while the others idle), and loading a checkpoint with
    `map_location="cuda:0"` does the same. Under `CUDA_VISIBLE_DEVICES=3` a process sees one
    device, so `"cuda:1"` fails with "invalid device ordinal". Library code cannot know
    which index its caller wants.
    A helper with `.cuda(0)` that every rank calls does the same, even when rank 0 also calls
    it from its own branch; and in rank 0's branch `.cuda(0)` is another process's GPU when
    rank 0 drives a GPU other than 0 (`torch.cuda.set_device(gpus[rank])`).

    ## Example
    ```python
    dist.init_process_group("nccl")
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
    There is no automatic fix: where the index should come from (a rank, a caller's
    argument) is the author's choice.
    """

    code = "DL010"
    name = "hardcoded-device-index"
    summary = "CUDA device index hard-coded (breaks under torchrun and CUDA_VISIBLE_DEVICES)"
    message = "hard-coded CUDA device index {index}"
    hint = "take the device from the caller or from `LOCAL_RANK`"
    zero_message = "hard-coded `cuda:0` in {evidence}: every process gets GPU 0"
    tokens = ("cuda",)

    @staticmethod
    def gate(facts) -> bool:
        """A `"cuda:N"` string that is not a docstring, or an integer literal passed to
        `.to`/`.cuda`, as `device=`, or to `torch.device`/`torch.cuda.set_device`/
        `torch.cuda.device` (by any import name) (devicelint/gate.py)."""
        return (facts.has_string(INDEXED_CUDA.fullmatch) or "device" in facts.int_keywords
                or bool(facts.int_arg_callees & ({"to", "cuda", "device", "set_device"} | facts.import_names)))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.exempt = is_test_path(ctx.path)
        self.candidates: list[tuple[cst.CSTNode, int]] = []
        self._evidence: Optional[str] = None
        self._evidence_known = False

    # -- candidates: literal indices -------------------------------------------------------
    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if self.exempt or "cuda:" not in node.value:
            return
        match = INDEXED_CUDA.fullmatch(string_value(node) or "")
        if match:
            self.candidates.append((node, int(match.group(1))))

    def visit_Call(self, node: cst.Call) -> None:
        if self.exempt or not any(int_value(arg.value) is not None for arg in node.args):
            return  # every call this rule flags passes an integer literal index
        func = node.func
        cheap = self.ctx.qualname(func)  # the import table: no flow analysis
        if isinstance(func, cst.Attribute) and func.attr.value in ("cuda", "to") and cheap is None:
            # a tensor's or module's method (not `torch.cuda`)
            if func.attr.value == "cuda":
                index = int_value(call_arg(node, 0, "device"))
            else:
                index = int_value(call_arg(node, 0, "\0"))
                if index is None:
                    index = int_value(keyword_arg(node, "device"))
            self._candidate(node, index)
            return
        if cheap is None or not cheap.startswith("torch."):
            return  # (names bound by assignment to torch functions are not followed here)
        if cheap == "torch.device":
            index = int_value(call_arg(node, 0, "type"))
            if index is None and string_value(call_arg(node, 0, "type")) == "cuda":
                index = int_value(call_arg(node, 1, "index"))
        elif cheap in INDEX_CALLS:
            position, keyword = INDEX_CALLS[cheap]
            index = int_value(call_arg(node, position, keyword))
        else:
            index = int_value(keyword_arg(node, "device"))
        if index is not None and self.ctx.semantic.resolved_qualname(func) == cheap:
            self._candidate(node, index)  # the import reaches this call: not shadowed

    def _candidate(self, node: cst.CSTNode, index: Optional[int]) -> None:
        if index is not None and index >= 0:
            self.candidates.append((node, index))

    # -- decision ----------------------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        for candidate, index in self.candidates:
            target = self._string_site(candidate) if isinstance(candidate, cst.SimpleString) \
                else candidate
            if target is None or self._checked_device_count(target):
                continue
            if index >= 1:
                self.report(target, self.message.format(index=index))
                continue
            evidence = self.evidence()
            if evidence is None or self._zero_is_right(target) or self._sets_visible_devices(target):
                continue
            self.report(target, self.zero_message.format(evidence=evidence))

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

    def _branches(self, node: cst.CSTNode):
        """(if or conditional expression, the part of it that holds `node`), innermost first,
        for the branches (not the tests) that hold `node`."""
        child = node
        for ancestor in self.ctx.ancestors(node):
            if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
                yield ancestor, child
            child = ancestor

    def _checked_device_count(self, node: cst.CSTNode) -> bool:
        """Under an `if` whose test asks `torch.cuda.device_count()`: the layout is chosen
        knowing how many GPUs there are."""
        return any(DEVICE_COUNT in self._sources(owner.test) for owner, _ in self._branches(node))

    def _sets_visible_devices(self, node: cst.CSTNode) -> bool:
        """The function that holds `node` sets `CUDA_VISIBLE_DEVICES` before it
        (`os.environ["CUDA_VISIBLE_DEVICES"] = ...`, `os.environ.setdefault(...)`,
        `os.putenv(...)`): the function chooses which GPUs the process sees, and index 0 is
        the first of the GPUs it chose (a `select_device()` helper)."""
        sem = self.ctx.semantic
        function = sem.function_of(node)
        if function is None:
            return False
        before = self.ctx.order(node)
        for statement in self.ctx.descendants(function, cst.Assign):
            if self.ctx.order(statement) >= before or sem.function_of(statement) is not function:
                continue
            for target in statement.targets:
                sub = target.target
                if isinstance(sub, cst.Subscript) and sem.resolved_qualname(sub.value) == "os.environ" \
                        and len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index) \
                        and string_value(sub.slice[0].slice.value) == VISIBLE_DEVICES:
                    return True
        for call in self.ctx.descendants(function, cst.Call):
            if self.ctx.order(call) < before and sem.function_of(call) is function \
                    and sem.resolved_qualname(call.func) in ENV_WRITES \
                    and string_value(call_arg(call, 0, "key")) == VISIBLE_DEVICES:
                return True
        return False

    def _zero_is_right(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Index 0 is this process's GPU wherever `node` runs: in a branch that says so, or
        in a function the file calls only from such places (`evaluate()` called only under
        `if rank == 0:`; a few calls deep). A package module's functions may have callers
        elsewhere: only its branches count."""
        if self._zero_is_right_branch(node):
            return True
        function = self.ctx.semantic.function_of(node)
        if function is None or depth >= 3 or self._package_module():
            return False
        calls = self._only_calls(function)
        return bool(calls) and all(self._zero_is_right(call, depth + 1) for call in calls)

    def _only_calls(self, function: cst.FunctionDef) -> list[cst.Call]:
        """The calls of `function` in the file when every reference to it is one (it is not
        decorated, handed to a spawn or stored as a callback: other code could run it);
        otherwise an empty list."""
        sem = self.ctx.semantic
        if function.decorators:
            return []
        is_method = isinstance(self.ctx.parent(self.ctx.parent(function)), cst.ClassDef)
        name = function.name.value
        calls = []
        for ref in self.ctx.iter_nodes(cst.Name):
            if ref.value != name or ref is function.name:
                continue
            parent = self.ctx.parent(ref)
            if isinstance(parent, cst.Attribute) and parent.attr is ref:
                if not is_method:
                    continue  # another object's attribute
                ref, parent = parent, self.ctx.parent(parent)  # `self.evaluate`
            elif isinstance(parent, cst.Param) and parent.name is ref \
                    or isinstance(parent, cst.Arg) and parent.keyword is ref:
                continue  # a parameter's or a keyword argument's name
            elif not any(d.node is function for d in sem.defs(ref)):
                continue  # another binding of the name
            if isinstance(parent, cst.Call) and parent.func is ref \
                    and sem.resolve_function(ref) is function:
                calls.append(parent)
                continue
            return []  # stored, passed on, or a call the file cannot tie to it
        return calls

    def _package_module(self) -> bool:
        if any(statement.relative for statement in self.ctx.iter_nodes(cst.ImportFrom)):
            return True
        return in_package_directory(self.ctx.disk_path)

    def _zero_is_right_branch(self, node: cst.CSTNode) -> bool:
        """In a branch that runs only in a single process, or only in the process whose own
        GPU is 0 (rank 0): there index 0 is right."""
        for owner, part in self._branches(node):
            right_when = self._zero_is_right_when(owner.test)
            if right_when is True and part is owner.body:
                return True
            if right_when is False and part is owner.orelse:
                return True
        return False

    def _zero_is_right_when(self, test: cst.BaseExpression) -> Optional[bool]:
        """The truth value of `test` under which index 0 is this process's GPU (it runs
        alone, or it is rank 0), or None when the test does not say."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            inner = self._zero_is_right_when(test.expression)
            return None if inner is None else not inner
        if isinstance(test, cst.BooleanOperation):
            sides = {self._zero_is_right_when(test.left), self._zero_is_right_when(test.right)}
            if isinstance(test.operator, cst.And) and True in sides:
                return True  # both hold, one of them is enough
            if isinstance(test.operator, cst.Or) and False in sides:
                return False
            return None
        if isinstance(test, cst.Call):
            if self.ctx.semantic.resolved_qualname(test.func) in NOT_DISTRIBUTED:
                return False
            return None
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            return self._compared_process(test.left, test.comparisons[0])
        return None

    def _compared_process(self, left, comparison: cst.ComparisonTarget) -> Optional[bool]:
        """A world size or a rank compared with numbers: evaluated on small values."""
        right = comparison.comparator
        op = type(comparison.operator).__name__
        if op in ("In", "NotIn"):
            numbers = _int_set(right)
            if not numbers:
                return None
            subject = left
            def holds(value: int) -> bool:
                return (value in numbers) == (op == "In")
        else:
            number, subject = int_value(right), left
            if number is None:
                number, subject = int_value(left), right
                op = _MIRRORED.get(op, op)
            if number is None or op not in _COMPARE:
                qual = self.ctx.semantic.resolved_qualname(right)
                if qual is not None and qual.startswith("accelerate.") \
                        and qual.endswith("DistributedType.NO"):
                    return {"Equal": True, "Is": True, "NotEqual": False, "IsNot": False}.get(op)
                return None
            numbers = {number}
            def holds(value: int) -> bool:
                return _COMPARE[op](value, number)
        sources = self._sources(subject)
        if PROCESS_INDEX in sources and self._process_index_is_gpu():
            sources = sources | {"env:RANK"}  # a rank, and GPU 0 is rank 0's
        if sources & WORLD_SIZE_SOURCES:
            lowest, right_values = 1, {1}  # one process
        elif sources & RANK_SOURCES:
            lowest, right_values = -1, {-1, 0}  # no launcher (-1), or the process whose GPU is 0
        else:
            return None
        domain = set(range(lowest, max(numbers) + 3))
        when_true = {value for value in domain if holds(value)}
        when_false = domain - when_true
        if when_true and when_true <= right_values:
            return True
        if when_false and when_false <= right_values:
            return False
        return None

    def _process_index_is_gpu(self) -> bool:
        """The file sets each spawned process's GPU to its process index: it calls
        `torch.cuda.set_device` with that index, and never with anything else."""
        sem = self.ctx.semantic
        set_devices = [call for call in self.ctx.iter_nodes(cst.Call)
                       if sem.resolved_qualname(call.func) == SET_DEVICE]
        return bool(set_devices) and all(
            isinstance(arg, cst.Name) and PROCESS_INDEX in self._sources(arg)
            for arg in (call_arg(call, 0, "device") for call in set_devices))

    def _sources(self, expr: cst.CSTNode, depth: int = 0) -> set[str]:
        """Where the value of `expr` comes from: the torch calls it is computed with
        (qualified names) and the environment variables it reads (`env:NAME`), through the
        bindings that reach the names it reads (a few steps deep); a parameter's, from what
        every call of its function in the file passes (`PROCESS_INDEX` for the process index
        a spawn passes)."""
        sem = self.ctx.semantic
        found: set[str] = set()
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Call):
                qual = sem.resolved_qualname(node.func)
                if qual is not None:
                    found.add(qual)
                    if qual in ENV_READS:
                        key = string_value(call_arg(node, 0, "key"))
                        if key is not None:
                            found.add(f"env:{key}")
            elif isinstance(node, cst.Subscript) and sem.resolved_qualname(node.value) == "os.environ":
                if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
                    key = string_value(node.slice[0].slice.value)
                    if key is not None:
                        found.add(f"env:{key}")
            elif isinstance(node, cst.Name) and depth < 3:
                for d in sem.defs(node):
                    if d.kind in ("assign", "annassign", "walrus", "augassign") and d.value is not None:
                        found |= self._sources(d.value, depth + 1)
                    elif d.kind == "param" and isinstance(d.node, cst.Param):
                        found |= self._param_sources(d.node, depth)
                continue
            if isinstance(node, (cst.Lambda, cst.FunctionDef)):
                continue
            stack.extend(children(node))
        return found

    def _param_sources(self, param: cst.Param, depth: int) -> set[str]:
        """What every call of the parameter's function passes is computed from (the sources
        all calls share)."""
        passed = self.ctx.semantic.passed_arguments(param)
        if passed is None:
            return set()
        args, process_index = passed
        shared: Optional[set[str]] = {PROCESS_INDEX} if process_index else None
        for arg in args:
            if process_index and int_value(arg) is not None:
                # `worker(0, ...)` runs the spawned function in this process as process 0
                sources = {PROCESS_INDEX}
            else:
                sources = self._sources(arg, depth + 1) if arg is not None else set()
            shared = sources if shared is None else shared & sources
        return shared or set()

    # -- evidence of several processes or callers ---------------------------------------------
    def evidence(self) -> Optional[str]:
        """Why index 0 is a bug in this file, or None for a single-process script."""
        if not self._evidence_known:
            self._evidence = self._find_evidence()
            self._evidence_known = True
        return self._evidence

    def _find_evidence(self) -> Optional[str]:
        ctx = self.ctx
        for statement in ctx.iter_nodes(cst.ImportFrom):
            if statement.relative:
                return f"a package module (relative import on {ctx.line_ref(statement)})"
        for target in ctx.imports.aliases.values():
            if target in PROCESS_CALLS or target == DISTRIBUTED_PREFIX \
                    or target.startswith(DISTRIBUTED_PREFIX + "."):
                return f"a file that imports `{target}` (several processes run it)"
        for call in ctx.iter_nodes(cst.Call):
            qual = ctx.qualname(call.func)
            if qual is not None and (qual in PROCESS_CALLS or qual.startswith(DISTRIBUTED_PREFIX + ".")):
                return f"a file that calls `{qual}` ({ctx.line_ref(call)}: several processes run it)"
        for string in ctx.iter_nodes(cst.SimpleString):
            if "rank" in string.value.lower() and string_value(string) in LAUNCHER_STRINGS:
                return (f"a file that reads `{string_value(string)}` ({ctx.line_ref(string)}: a launcher "
                        "starts several processes)")
        if in_package_directory(ctx.disk_path):
            return "a package module (library code: its callers choose the device)"
        return None


_COMPARE = {"Equal": operator.eq, "NotEqual": operator.ne, "LessThan": operator.lt,
            "LessThanEqual": operator.le, "GreaterThan": operator.gt,
            "GreaterThanEqual": operator.ge}
_MIRRORED = {"LessThan": "GreaterThan", "GreaterThan": "LessThan",
             "LessThanEqual": "GreaterThanEqual", "GreaterThanEqual": "LessThanEqual"}


def _int_set(node: cst.BaseExpression) -> Optional[set[int]]:
    """The integers of a literal tuple, list or set (`(-1, 0)`), or None."""
    if not isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return None
    values = {int_value(element.value) for element in node.elements}
    return None if None in values else values
