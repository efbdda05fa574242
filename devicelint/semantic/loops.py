"""Loop roles, decided by what a loop's body does, never by what its variables are called.

- A *step loop* runs one training or inference step per iteration: its body (outside nested
  loops) trains (`.backward()`, `.step()` on an optimizer or a GradScaler), or calls a module,
  or the loop walks a DataLoader (or sends each element it walks to the device, unless a
  training loop runs on every iteration: then it walks models or ops, an epoch-like loop).
- An *epoch loop* contains a step loop that runs on every one of its iterations (not under a
  gate, not a fetch-one-batch `for ...: break`) and neither trains itself nor walks a
  DataLoader (a loop over batches with a decoding loop inside runs once per batch): what it
  runs once per iteration runs once per epoch.
- A *throttle* is an `if` inside a step loop whose test is a `%` schedule, an equality, or a
  plain flag, and whose body does not train: what it guards runs every N steps. A bare flag
  whose body runs a `torch.distributed` collective (`if args.multiprocessing_distributed:
  dist.all_reduce(count); n = count.item()`) is no throttle: every rank must make the call
  each time any rank does, so the flag picks the distributed way of running every step (a
  `%` schedule around a collective still throttles: all ranks reach it at the same steps).
  A *budget*
  (`if shown < 5: shown += 1; ...`, the counter counted up only there) runs its body at most
  N times per run of the loop.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from devicelint.names import and_operands, call_arg, keyword_arg
from devicelint.semantic import dataflow
from devicelint.semantic.values import Kind, Origin, Place

LOOPS = (cst.For, cst.While)
_NESTED_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
# The walks below test every node's exact type (the parser makes only concrete classes):
# isinstance() against libcst's ABC-based classes costs a Python-level check per miss.
_NESTED_TYPES = frozenset(_NESTED_SCOPES)
_LOOP_TYPES = frozenset(LOOPS)
# What _body_parts lists from a loop body, and where it does not look inside.
_PART_TYPES = (cst.Call, cst.If) + LOOPS
_NOT_ENTERED = _NESTED_SCOPES + LOOPS

STEP, EPOCH, OTHER = "step", "epoch", "other"


@dataclass
class LoopFacts:
    trains: bool = False           # backward / optimizer or scaler step in the body itself
    calls_module: bool = False     # a module is called in the body itself
    walks_loader: bool = False
    moves_only: bool = False       # walks_loader only because each element is sent to the device
    runs_once: bool = False        # `for ...: ...; break` fetches one element
    nested: list = field(default_factory=list)   # (loop, gated) for loops directly inside
    train_nodes: list = field(default_factory=list)
    step_calls: list = field(default_factory=list)   # (call, gated): calls of helpers that run a step loop


@dataclass
class HelperFacts:
    """What one call of a function of the file does, outside the loops of its own."""

    trains: bool = False           # `.backward()` / an optimizer step (`train_batch(net, X, y)`)
    calls_module: bool = False     # calls a module (`calc_loss(x, y, model)`)
    runs_steps: bool = False       # runs a step or epoch loop of its own (`train_one_epoch()`)


class LoopModel:
    def __init__(self, model) -> None:
        self.model = model
        self._facts: dict[int, LoopFacts] = {}
        self._roles: dict[int, str] = {}
        self._helpers: dict[int, Optional[HelperFacts]] = {}
        self._grad_writers: dict = {}   # function (id, or (path, name) in another module) -> bool

    # -- facts -------------------------------------------------------------------------
    def facts(self, loop: cst.CSTNode) -> LoopFacts:
        found = self._facts.get(id(loop))
        if found is None:
            found = self._collect(loop)
            self._facts[id(loop)] = found
        return found

    def _collect(self, loop) -> LoopFacts:
        facts = LoopFacts()
        model = self.model
        if isinstance(loop, cst.For):
            element = model.iteration_element(loop.iter)
            iterated = model.value(_unwrapped(loop.iter, model))
            facts.walks_loader = element.origin is Origin.BATCH or iterated.kind is Kind.LOADER
        body = loop.body
        facts.runs_once = _ends_with_break(body)
        for node, gated in self._body_parts(body):
            if type(node) in _LOOP_TYPES:
                facts.nested.append((node, gated))
            else:
                if not facts.walks_loader and self._moves_element(node, loop):
                    facts.walks_loader = True   # each iteration sends a batch to the device
                    facts.moves_only = True
                if self.is_training_call(node):
                    facts.trains = True
                    facts.train_nodes.append(node)
                elif self._runs_model(node, loop):
                    facts.calls_module = True
                else:
                    helper = self.helper_facts(node)
                    if helper is not None:
                        if helper.trains:
                            facts.trains = True
                            facts.train_nodes.append(node)
                        elif helper.calls_module and self._on_iteration_data(node, loop):
                            facts.calls_module = True
                        if helper.runs_steps:
                            facts.step_calls.append((node, gated))
        return facts

    def _body_parts(self, body: cst.CSTNode) -> list[tuple[cst.CSTNode, bool]]:
        """The calls and loops in a loop's `body`, not inside a nested loop, function or
        class, each with whether an `if` between gates it (the call is in the `if`'s body
        or `else`, not its test). In the order of a walk that takes the last child first
        (_body_parts_walk, which the facts were first collected with: helpers are asked in
        that order), which is the reverse of a post-order: by the end of each one's
        sub-tree, last first, then by start. Found from the slices of the file's index."""
        ctx = self.model.ctx
        if ctx.span(body) is None:
            return self._body_parts_walk(body)
        order, end = ctx.order, ctx.end
        found = []
        ifs: list[tuple[int, int, int]] = []  # the ifs around: (end, test start, test end)
        for node in ctx.descendants(body, _PART_TYPES, _NOT_ENTERED):
            start = order(node)
            while ifs and ifs[-1][0] <= start:
                ifs.pop()
            if type(node) is cst.If:
                test_start, test_end = ctx.span(node.test)
                ifs.append((end(start), test_start, test_end))
                continue
            gated = any(not test_start <= start < test_end for _end, test_start, test_end in ifs)
            found.append((-end(start), start, node, gated))
        found.sort()  # (end, start) pairs differ: the nodes are never compared
        return [(node, gated) for _end, _start, node, gated in found]

    def _body_parts_walk(self, body: cst.CSTNode) -> list[tuple[cst.CSTNode, bool]]:
        """_body_parts by a walk of the tree, for a body the file's index does not hold."""
        model = self.model
        found = []
        stack = [(child, False) for child in model.children(body)]
        while stack:
            node, gated = stack.pop()
            kind = type(node)
            if kind in _NESTED_TYPES:
                continue
            if kind in _LOOP_TYPES or kind is cst.Call:
                found.append((node, gated))
                if kind is not cst.Call:
                    continue
            is_if = kind is cst.If
            child_gated = gated or is_if
            for child in model.children(node):
                stack.append((child, child_gated if not (is_if and child is node.test) else gated))
        return found

    def helper_facts(self, call: cst.Call) -> Optional[HelperFacts]:
        """What calling the file's own function at `call` does (None for other calls)."""
        found = self.model.syncs.callee(call)
        if found is None:
            return None
        function = found[0]
        key = id(function)
        if key in self._helpers:
            return self._helpers[key] or HelperFacts()   # recursion: nothing more
        self._helpers[key] = None
        facts = HelperFacts()
        if not self.model.flow(function).yields:
            for node, _gated in self._body_parts(function.body):
                if type(node) in _LOOP_TYPES:
                    if self.role(node) in (STEP, EPOCH) and not self.facts(node).runs_once:
                        facts.runs_steps = True
                else:
                    if self.is_training_call(node):
                        facts.trains = True
                    elif self.is_module_call(node):
                        facts.calls_module = True
                    else:
                        inner = self.helper_facts(node)
                        if inner is not None:
                            facts.trains |= inner.trains
                            facts.calls_module |= inner.calls_module
                            facts.runs_steps |= inner.runs_steps
        self._helpers[key] = facts
        return facts

    def is_training_call(self, call: cst.Call) -> bool:
        """`loss.backward()`, `optimizer.step()`, `scaler.step(opt)`, `accelerator.backward(loss)`."""
        func = call.func
        if type(func) is not cst.Attribute:
            return False
        method = func.attr.value
        if method == "backward":
            receiver = self.model.value(func.value)
            if receiver.kind in (Kind.TENSOR, Kind.UNKNOWN, Kind.SCALER):
                return True
        if method == "step":
            receiver = self.model.value(func.value)
            if receiver.kind in (Kind.OPTIMIZER, Kind.SCALER):
                return True
            if receiver.kind is Kind.UNKNOWN and isinstance(func.value, cst.Name):
                # `optimizer = torch.optim.SGD(...)` then, under a flag, `model, optimizer =
                # amp.initialize(model, optimizer)`: an optimizer or what wraps it.
                kinds = {self.model.def_value(d).kind for d in self.model.defs(func.value)}
                return Kind.OPTIMIZER in kinds and kinds <= {Kind.OPTIMIZER, Kind.UNKNOWN}
        return False

    def _moves_element(self, call: cst.Call, loop) -> bool:
        """`call` copies what the loop walks to the device: `x.to(device)`/`x.cuda()` of a
        name the loop's target binds, or a call of the file's function that moves the
        parameter such a name is passed to (`calc_loss_batch(x, y, model, device)` doing
        `x.to(device)`). A loop that sends each element to the device walks batches, whatever
        the iterable is (a parameter, an iterator the file does not show)."""
        model = self.model
        func = call.func
        if type(func) is cst.Attribute and func.attr.value in ("to", "cuda"):
            if not self._reads_target(func.value, loop):
                return False
            if func.attr.value == "cuda":
                return model.value(func.value).kind in (Kind.TENSOR, Kind.UNKNOWN)
            target = keyword_arg(call, "device")
            if target is None:
                target = call_arg(call, 0, "\0")
            return model.device_place(target)[0] is Place.DEVICE
        found = model.syncs.callee(call)
        if found is None:
            return False
        function, bound = found
        moved = model.summary(function).moves
        return any(self._reads_target(arg, loop) for name in moved for arg in bound.get(name, ()))

    def _reads_target(self, node: cst.CSTNode, loop) -> bool:
        """`node` is, or indexes into, an element the loop walks: a name bound by its
        target, or by `next(iterator)` in its body (`while ...: batch = next(data)`)."""
        while isinstance(node, (cst.Subscript, cst.Attribute)):
            node = node.value
        if not isinstance(node, cst.Name):
            return False
        for d in self.model.defs(node):
            if d.kind == "for" and d.node is loop:
                return True
            if d.kind == "assign" and isinstance(d.value, cst.Call) and isinstance(d.value.func, cst.Name) \
                    and d.value.func.value == "next" and not self.model.defs(d.value.func) \
                    and self._inside(d.node, loop):
                return True
        return False

    def _runs_model(self, call: cst.Call, loop) -> bool:
        """`call` runs a model on this iteration's data: a module called on it, or code the
        file does not show (a model passed in or loaded with `torch.load`) called on a device
        tensor the loop binds (`logits = model(idx)` with `idx = torch.cat((idx, nxt), 1)`
        carried from the last iteration: a decoding loop)."""
        if self._calls_own_element(call, loop) or not self._on_iteration_data(call, loop):
            return False
        if self.is_module_call(call):
            return True
        model = self.model
        callee = model.value(call.func)
        if callee.kind is not Kind.UNKNOWN or model.qualname(call.func) is not None \
                or model.syncs.callee(call) is not None:
            return False
        if isinstance(call.func, cst.Name) and not model.defs(call.func):
            return False  # a builtin (`float(t)`, `len(x)`): not a model
        if isinstance(call.func, cst.Attribute) and model.value(call.func.value).kind is not Kind.UNKNOWN:
            return False  # a method of a value the model knows (a tensor's, a list's)
        return any(self._carries_device_data(arg.value) and self._on_iteration_data_expr(arg.value, loop)
                   for arg in call.args)

    def _carries_device_data(self, node: cst.CSTNode) -> bool:
        """A tensor on the device, or a name that one of its bindings makes a device tensor
        and none a CPU one (`tokens = torch.zeros(..., device=dev)` before the loop, then
        `tokens = out.softmax(-1)` of an unknown model's output inside it)."""
        model = self.model
        value = model.value(node)
        if value.kind is Kind.TENSOR and value.place is Place.DEVICE:
            return True
        if not isinstance(node, cst.Name) or value.kind not in (Kind.TENSOR, Kind.UNKNOWN):
            return False
        places = set()
        for d in model.defs(node):
            bound = model.def_value(d)
            if bound.kind not in (Kind.TENSOR, Kind.UNKNOWN) or bound.hint:
                return False
            places.add(bound.place)
        return Place.DEVICE in places and Place.CPU not in places

    def _calls_own_element(self, call: cst.Call, loop) -> bool:
        """`for layer in self.layers: x = layer(x)`: calling what the loop walks is a walk
        over modules (layers, ensemble members), not one step per iteration."""
        head = call.func
        while type(head) is cst.Attribute:
            head = head.value
        if type(head) is not cst.Name:
            return False
        return any(d.kind == "for" and d.node is loop for d in self.model.defs(head))

    def _on_iteration_data(self, call: cst.Call, loop) -> bool:
        """A module called on this iteration's data: an argument reads a name the loop binds
        (its target, or an assignment in its body: a loop-carried `h = rnn(h)` counts). A module
        called on the same input every iteration (`for _ in range(3): model(x)`, a timing
        loop) runs no step."""
        return any(self._on_iteration_data_expr(a.value, loop) for a in call.args)

    def _on_iteration_data_expr(self, expr: cst.CSTNode, loop, _seen: Optional[set] = None) -> bool:
        """`expr` reads a name the loop binds, or one whose value the loop changes in place
        from such data (`z.data = z1 * alpha + z2 * (1 - alpha)` with `alpha` carried by the
        loop, `x[:] = ...`, `x.copy_(y)`: the same object, new data on every iteration)."""
        stack: list = [expr]
        seen = _seen if _seen is not None else set()
        while stack:
            node = stack.pop()
            kind = type(node)
            if kind is cst.Name:
                defs = self.model.defs(node)
                for d in defs:
                    if d.node is loop or self._inside(d.node, loop):
                        return True
                if defs and node.value not in seen and self._changed_from_iteration_data(node, loop, seen):
                    return True
                continue
            if kind in _NESTED_TYPES:
                continue
            stack.extend(self.model.children(node))
        return False

    def _changed_from_iteration_data(self, name: cst.Name, loop, seen: set) -> bool:
        """The loop's body changes the value `name` holds in place (a store into it: `x.data
        = ...`, `x[i] = ...`; an in-place method or `out=`) with what reads this iteration's
        data."""
        seen.add(name.value)
        model = self.model
        for kind, node in dataflow.changes(model, name, loop.body):
            if kind == "store":
                statement = model.parent(node)
                while statement is not None and not isinstance(statement, (cst.Assign, cst.AugAssign)):
                    statement = model.parent(statement)
                if statement is not None and self._on_iteration_data_expr(statement.value, loop, seen):
                    return True
            elif kind in ("method", "out") and any(
                    self._on_iteration_data_expr(a.value, loop, seen) for a in node.args):
                return True
        return False

    def _inside(self, node: cst.CSTNode, loop) -> bool:
        current = self.model.parent(node)
        while current is not None:
            if current is loop:
                return True
            if type(current) in _NESTED_TYPES:
                return False
            current = self.model.parent(current)
        return False

    def is_module_call(self, call: cst.Call) -> bool:
        value = self.model.value(call.func)
        if value.kind is Kind.MODULE or self.model.moved_callable(value):
            return True
        if type(call.func) is cst.Attribute and call.func.attr.value not in self.model.api.module_api_methods:
            # `model.forward(x)`, `model.decode(ys, memory)`: a module's own code, not
            # nn.Module's API (`.parameters()`, `.train()`, `.state_dict()`).
            receiver = self.model.value(call.func.value)
            return receiver.kind is Kind.MODULE or self.model.moved_callable(receiver)
        return False

    # -- roles -------------------------------------------------------------------------
    def role(self, loop: cst.CSTNode) -> str:
        found = self._roles.get(id(loop))
        if found is not None:
            return found
        self._roles[id(loop)] = OTHER
        facts = self.facts(loop)
        if facts.runs_once:
            role = OTHER
        elif facts.trains or facts.walks_loader and not (
                facts.moves_only and any(not gated and not self.facts(inner).runs_once
                                         and self.facts(inner).trains for inner, gated in facts.nested)):
            # A loop over a DataLoader's batches runs once per batch, whatever runs inside
            # it (a beam search per image, a decoding loop per batch): a step loop. A loop
            # that only sends each element to the device (no loader seen) and runs a
            # training loop on every iteration walks models, ops or tasks (a profiler's
            # loop over ops around its timed forward/backward loop): an epoch loop.
            role = STEP
        elif any(self.role(inner) in (STEP, EPOCH) and not gated and not self.facts(inner).runs_once
                 for inner, gated in facts.nested) or any(not gated for _call, gated in facts.step_calls):
            role = EPOCH  # also `for epoch in ...: train_one_epoch(...)`
        elif facts.walks_loader or facts.calls_module:
            role = STEP
        else:
            role = OTHER
        self._roles[id(loop)] = role
        return role

    def enclosing_loops(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """For/While loops whose body runs `node` on every iteration, innermost first, up
        to the enclosing function."""
        found = []
        child = node
        parent = self.model.parent(node)
        while parent is not None and type(parent) not in _NESTED_TYPES:
            kind = type(parent)
            if kind is cst.For and child is parent.body:
                found.append(parent)
            elif kind is cst.While and (child is parent.body or child is parent.test):
                found.append(parent)
            child = parent
            parent = self.model.parent(parent)
        return found

    def step_loop(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The step loop that runs `node` once (or more) per step, unless a throttle between
        them gates it; None when `node` does not run per step."""
        for loop in self.enclosing_loops(node):
            role = self.role(loop)
            if role == STEP:
                return None if self.throttled(node, loop) else loop
            if role == EPOCH:
                return None
        return None

    def throttled(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """An `if` between `loop` and `node` that runs its body only every N steps (or on a
        flag) and does not train in that body."""
        child = node
        parent = self.model.parent(node)
        while parent is not None and parent is not loop:
            if isinstance(parent, cst.If) and child is parent.body \
                    and (self._budget(parent, loop) or self._spent_budget(parent, loop)) \
                    and not self._trains_in(parent.body):
                return True
            if isinstance(parent, cst.If) and child is not parent.test:
                if self._gates(parent, loop) and not (
                        child is parent.orelse and self._first_pass_only(parent, loop)) \
                        and not self._holds_every_step(parent, loop):
                    return True
            elif isinstance(parent, cst.Else):
                owner = self.model.parent(parent)
                if isinstance(owner, cst.If) and self._gates(owner, loop) \
                        and not self._first_pass_only(owner, loop):
                    return True
            child = parent
            parent = self.model.parent(parent)
        return False

    def _holds_every_step(self, branch: cst.If, loop: cst.CSTNode) -> bool:
        """`branch` (no `else`) is the whole body of `loop`, a loop that is a step loop only
        because it calls a module on its iteration's data (`for i in bar: if success: out =
        model(frame.cuda()); ...; success, frame = cap.read()`): the iterations it skips do
        nothing, so each step runs inside it and what it guards runs on every step."""
        body = loop.body
        if branch.orelse is not None or not isinstance(body, cst.IndentedBlock) \
                or len(body.body) != 1 or body.body[0] is not branch:
            return False
        facts = self.facts(loop)
        return facts.calls_module and not facts.trains and not facts.walks_loader \
            and not facts.step_calls

    def _first_pass_only(self, branch: cst.If, loop: cst.CSTNode) -> bool:
        """`branch` tests that a collection from before the loop is still empty (`len(xs) ==
        0`, `not xs`) and its body grows it (`xs.append(...)`), which nothing else in the loop
        undoes: the body runs on the first pass only, the `else:` on every later one."""
        test = branch.test
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
        elif isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
                and isinstance(test.comparisons[0].operator, cst.Equal) \
                and isinstance(test.comparisons[0].comparator, cst.Integer) \
                and test.comparisons[0].comparator.value == "0":
            test = test.left
        else:
            return False
        if isinstance(test, cst.Call) and isinstance(test.func, cst.Name) and test.func.value == "len" \
                and not self.model.defs(test.func) and len(test.args) == 1:
            test = test.args[0].value
        if not isinstance(test, cst.Name):
            return False
        defs = self.model.defs(test)
        if not defs or any(d.node is loop or self._inside(d.node, loop) for d in defs):
            return False  # rebound in the loop
        grows = False
        for kind, node in dataflow.changes(self.model, test, loop):
            if kind == "method" and node.func.attr.value in ("append", "extend", "insert"):
                grows = grows or self._within(node, branch.body)
            elif kind != "store":
                return False  # emptied, or handed to code that may empty it
        return grows

    def _within(self, node: cst.CSTNode, outer: cst.CSTNode) -> bool:
        current = node
        while current is not None:
            if current is outer:
                return True
            current = self.model.parent(current)
        return False

    def leaves_loop(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """`node` sits in a block, inside `loop`, that always ends by leaving it: its last
        statement is a `break` of this loop, a `return`, a `raise` or a call that ends the
        program (`sys.exit(1)`, `os._exit`, `exit()`), with no `try` in between to catch it.
        Such a block runs at most once per run of the loop (`if not math.isfinite(loss):
        print(loss.item()); sys.exit(1)`), not on every step."""
        model = self.model
        child = node
        parent = model.parent(node)
        leaves = None  # "break" or "exit" once a block that ends by leaving is found
        while parent is not None and parent is not loop:
            if type(parent) in (cst.Try, cst.TryStar, cst.ExceptHandler, cst.FunctionDef, cst.Lambda):
                return False  # a handler between the block and the loop may catch the raise
            if type(parent) in (cst.For, cst.While) and leaves == "break":
                return False  # that `break` leaves an inner loop only
            if leaves is None and isinstance(parent, cst.IndentedBlock) and parent.body and child in parent.body:
                leaves = self._leaves(parent.body[-1])
            child = parent
            parent = model.parent(parent)
        return leaves is not None and parent is loop

    def _leaves(self, statement: cst.CSTNode) -> Optional[str]:
        """"break" for a `break`, "exit" for a `return`, a `raise` or a call that ends the
        program, else None."""
        if not isinstance(statement, cst.SimpleStatementLine):
            return None
        for small in statement.body:
            if isinstance(small, cst.Break):
                return "break"
            if isinstance(small, (cst.Return, cst.Raise)):
                return "exit"
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                func = small.value.func
                name = self.model.qualname(func)
                if name in ("sys.exit", "os._exit", "os.abort") or (
                        isinstance(func, cst.Name) and func.value in ("exit", "quit") and not self.model.defs(func)):
                    return "exit"
        return None

    def _gates(self, branch: cst.If, loop: cst.CSTNode) -> bool:
        """`branch` runs what it guards only every N steps or on a flag: its test is a
        throttle, its body does not train, and it is not a choice between two ways of running
        the step (`if is_transformer: out = model(x) ... else: out, h = model(x, h)`: each arm
        calls a module on this iteration's data, so one of them runs on every step; or a test
        that reads nothing the loop binds, with an `else` where both arms use this
        iteration's data: `if n_classes == 1: ... else: ...`)."""
        if not self.is_throttle(branch.test) or self._trains_in(branch):
            return False
        if isinstance(branch.test, (cst.Name, cst.Attribute)) and self._runs_collective(branch.body):
            # `if args.multiprocessing_distributed: dist.all_reduce(count); n = count.item()`:
            # a collective must run on every rank each time any rank runs it, so a bare flag
            # guarding one picks the distributed way of running each step; it throttles nothing.
            return False
        orelse = branch.orelse
        if orelse is None:
            return True
        arm = orelse.body if isinstance(orelse, cst.Else) else orelse
        if self._steps_in(branch.body, loop) and self._steps_in(arm, loop):
            return False
        # A setting the loop does not change (`if net.n_classes == 1:`, not a step counter)
        # choosing how to handle this iteration's data: one arm or the other runs every step.
        # Not a bare flag (`if not options.on_gpu:` may pick the arm that runs without a GPU).
        test = branch.test
        while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test = test.expression
        return isinstance(test, (cst.Name, cst.Attribute)) or not dataflow.invariant(self.model, test, loop) or not (
            self._on_iteration_data_expr(branch.body, loop) and self._on_iteration_data_expr(arm, loop))

    def _budget(self, branch: cst.If, loop: cst.CSTNode) -> bool:
        """`if shown < 5: shown += 1; print(...)` (also as a part of an `and`): a counter
        tested against a bound the loop does not change, which the loop changes only by
        counting it up in this very body: the body runs at most that many times per run of
        the loop (a budget of reports), not on every step."""
        for part in and_operands(branch.test):
            if not isinstance(part, cst.Comparison) or len(part.comparisons) != 1:
                continue
            operator = part.comparisons[0].operator
            if isinstance(operator, (cst.LessThan, cst.LessThanEqual)):
                counter, bound = part.left, part.comparisons[0].comparator
            elif isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)):
                counter, bound = part.comparisons[0].comparator, part.left
            else:
                continue
            if isinstance(counter, cst.Name) and dataflow.invariant(self.model, bound, loop) \
                    and self._counted_up_only_in(counter, branch.body, loop):
                return True
        return False

    def _spent_budget(self, branch: cst.If, loop: cst.CSTNode) -> bool:
        """`if len(done) > 0: ...` in a loop that takes `len(done)` from a counter on every
        iteration (`k -= len(done)`, a statement of the loop's own body, with `done` bound
        before the `if` and not after), changes the counter nowhere else, and is left when
        the counter reaches zero (`if k == 0: break` in its body, or `while k > 0:`): each
        run of the body takes at least one from the counter, so it runs at most the
        counter's starting value times per run of the loop (a beam search setting finished
        beams aside), not on every step."""
        done = self._nonempty_test(branch.test)
        body = loop.body
        if done is None or not isinstance(body, cst.IndentedBlock):
            return False
        model = self.model
        scope = model.scope_of(branch)
        stores = [n for n in dataflow._names_in(model, loop, done)
                  if dataflow._is_store(model, n) and model.scope_of(n) is scope]
        if not stores or any(model.ctx.order(n) > model.ctx.order(branch) for n in stores):
            return False
        for statement in body.body:
            small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) \
                and len(statement.body) == 1 else None
            if not (isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.SubtractAssign)
                    and isinstance(small.target, cst.Name) and self._len_of(small.value) == done):
                continue
            counter = small.target.value
            counter_stores = [n for n in dataflow._names_in(model, loop, counter)
                              if dataflow._is_store(model, n) and model.scope_of(n) is scope]
            if any(n is not small.target for n in counter_stores):
                return False
            return self._left_at_zero(loop, counter)
        return False

    def _nonempty_test(self, test: cst.BaseExpression) -> Optional[str]:
        """The name `s` of a test `len(s) > 0` / `len(s) >= 1` / `len(s) != 0` / `len(s)`."""
        if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
            operator, bound = test.comparisons[0].operator, test.comparisons[0].comparator
            if not isinstance(bound, cst.Integer):
                return None
            limit = int(bound.value, 0)
            if (isinstance(operator, cst.GreaterThan) and limit == 0) \
                    or (isinstance(operator, cst.GreaterThanEqual) and limit == 1) \
                    or (isinstance(operator, cst.NotEqual) and limit == 0):
                return self._len_of(test.left)
            return None
        return self._len_of(test)

    def _len_of(self, node: cst.BaseExpression) -> Optional[str]:
        """`s` of the builtin `len(s)` (a name), else None."""
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" \
                and not self.model.defs(node.func) and len(node.args) == 1 and not node.args[0].star \
                and node.args[0].keyword is None and isinstance(node.args[0].value, cst.Name):
            return node.args[0].value.value
        return None

    def _left_at_zero(self, loop: cst.CSTNode, counter: str) -> bool:
        """`loop` ends when `counter` reaches zero: `while counter > 0:` / `while counter:`, or
        a statement of its body `if counter == 0: break` (also `<= 0`, `not counter`)."""
        def zero_test(test, positive: bool) -> bool:
            if positive:
                if isinstance(test, cst.Name):
                    return test.value == counter
                return isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
                    and isinstance(test.left, cst.Name) and test.left.value == counter \
                    and isinstance(test.comparisons[0].operator, cst.GreaterThan) \
                    and isinstance(test.comparisons[0].comparator, cst.Integer) \
                    and int(test.comparisons[0].comparator.value, 0) == 0
            if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
                return isinstance(test.expression, cst.Name) and test.expression.value == counter
            return isinstance(test, cst.Comparison) and len(test.comparisons) == 1 \
                and isinstance(test.left, cst.Name) and test.left.value == counter \
                and isinstance(test.comparisons[0].operator, (cst.Equal, cst.LessThanEqual)) \
                and isinstance(test.comparisons[0].comparator, cst.Integer) \
                and int(test.comparisons[0].comparator.value, 0) == 0

        if isinstance(loop, cst.While) and zero_test(loop.test, True):
            return True
        for statement in loop.body.body:
            if isinstance(statement, cst.If) and statement.orelse is None and zero_test(statement.test, False):
                first = statement.body.body[0] if isinstance(statement.body, cst.IndentedBlock) else None
                if isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Break):
                    return True
        return False

    def _counted_up_only_in(self, counter: cst.Name, body: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """Every store of `counter` in `loop` is `counter += <a positive integer>` in `body`,
        and there is one."""
        model = self.model
        scope = model.scope_of(counter)
        stores = [n for n in dataflow._names_in(model, loop, counter.value)
                  if dataflow._is_store(model, n) and model.scope_of(n) is scope]
        if not stores:
            return False
        for name in stores:
            statement = model.parent(name)
            if not (isinstance(statement, cst.AugAssign) and statement.target is name
                    and isinstance(statement.operator, cst.AddAssign)
                    and isinstance(statement.value, cst.Integer) and int(statement.value.value, 0) > 0
                    and dataflow.within(model, statement, body)):
                return False
        # Nothing else in the loop may change it (a call handed it cannot: it is a number).
        return all(d.kind in ("assign", "augassign") for d in model.defs(counter))

    def _steps_in(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """`node` calls a module on this iteration's data of `loop`."""
        stack = list(self.model.children(node))
        while stack:
            current = stack.pop()
            if type(current) in _NESTED_TYPES:
                continue
            if type(current) is cst.Call and self._runs_model(current, loop):
                return True
            stack.extend(self.model.children(current))
        return False

    def _runs_collective(self, node: cst.CSTNode) -> bool:
        """`node` calls a `torch.distributed` collective (torch_api.toml's `[distributed]`)
        itself, outside nested functions."""
        collectives = self.model.api.collectives
        stack = list(self.model.children(node))
        while stack:
            current = stack.pop()
            if type(current) in _NESTED_TYPES:
                continue
            if type(current) is cst.Call and self.model.qualname(current.func) in collectives:
                return True
            stack.extend(self.model.children(current))
        return False

    def _trains_in(self, node: cst.CSTNode) -> bool:
        """A call under `node`, outside nested functions and classes, trains (a slice of
        the file's node index, not a walk: a loop's gates ask it of each branch)."""
        return any(self.is_training_call(call) or self.changes_gradients(call)
                   for call in self.model.ctx.descendants(node, cst.Call, skip=_NESTED_SCOPES))

    def changes_gradients(self, call: cst.Call) -> bool:
        """`call` changes in place the gradients the optimizer step uses, so a body that runs
        it trains (a gradient clip: `utils.clip_gradients(model, c)` whose loop over the
        parameters does `p.grad.data.mul_(clip_coef)`): an in-place tensor method (its name
        ends in `_`, PyTorch's convention) on a parameter's `.grad`, in the call itself or in
        the body of the function it runs (of this file, or of another local module, read
        with `ast` there: that module's model is not built)."""
        if _on_grad_in_place(call.func):
            return True
        memo = self._grad_writers
        model = self.model
        found = model.syncs.callee(call)
        if found is not None:
            function = found[0]
            key = id(function)
            if key not in memo:
                memo[key] = any(_on_grad_in_place(node.func)
                                for node in model.ctx.descendants(function.body, cst.Call))
            return memo[key]
        dotted = model.syncs._foreign_dotted(call)
        view = model.project
        where = view.function_module(dotted) if dotted is not None else None
        if where is None:
            return False
        key = (where[0].path, where[1])
        if key not in memo:
            statement = view.index.function_def(*where)
            memo[key] = statement is not None and any(
                isinstance(node, ast.Call) and _on_grad_in_place_ast(node.func) for node in ast.walk(statement))
        return memo[key]

    def is_throttle(self, test: cst.BaseExpression) -> bool:
        """`step % N == 0`, `i == last`, `if verbose:`, `args.log and ...`: a schedule or a
        flag, not a condition on a tensor."""
        if isinstance(test, cst.BooleanOperation):
            return self.is_throttle(test.left) or self.is_throttle(test.right)
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self.is_throttle(test.expression)
        if self.model.gpu_truth(test) is not None:
            # `if use_cuda:` (bound to `torch.cuda.is_available()`): the same on every step
            # of a run, so not a throttle; with a GPU it runs what it guards every time.
            return False
        value = self.model.value(test)
        if value.kind is Kind.TENSOR:
            return False
        stack = [test]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.BinaryOperation) and isinstance(current.operator, cst.Modulo):
                return True
            if isinstance(current, cst.Comparison) and any(
                    isinstance(c.operator, cst.Equal) for c in current.comparisons):
                return True
            if isinstance(current, cst.Comparison) and self._counter_in_fixed_steps(current):
                return True
            stack.extend(self.model.children(current))
        if isinstance(test, (cst.Name, cst.Attribute)):
            return True  # a flag
        return False

    def _counter_in_fixed_steps(self, comparison: cst.Comparison) -> bool:
        """`i in np.linspace(0, n, 10, dtype=int)`, `step in {100, 500}`: a loop counter (a
        number a `for` target binds) tested for membership in a collection the loop does not
        build, so the test holds on a few chosen iterations, a schedule like `%`."""
        if len(comparison.comparisons) != 1 or not isinstance(comparison.comparisons[0].operator, cst.In):
            return False
        counter, steps = comparison.left, comparison.comparisons[0].comparator
        model = self.model
        if not isinstance(counter, cst.Name) or model.value(counter).kind is not Kind.NUMBER:
            return False
        counter_defs = model.defs(counter)
        if not counter_defs or any(d.kind != "for" for d in counter_defs):
            return False
        if model.value(steps).kind is Kind.TENSOR:
            return False
        loops = [d.node for d in counter_defs]
        stack = [steps]
        while stack:   # the collection reads nothing the loop binds
            current = stack.pop()
            if type(current) is cst.Name and any(
                    d.node in loops or any(self._inside(d.node, loop) for loop in loops)
                    for d in model.defs(current)):
                return False
            stack.extend(model.children(current))
        return True


def _in_place(attr: str) -> bool:
    return attr.endswith("_") and not attr.startswith("_")


def _on_grad_in_place(func: cst.BaseExpression) -> bool:
    """`func` is an in-place tensor method of a `.grad` (`p.grad.data.mul_`, `p.grad.mul_`,
    `p.grad[mask].zero_`): through attributes and subscripts, not through a call (what
    `p.grad.clone()` returns is a copy)."""
    if not isinstance(func, cst.Attribute) or not _in_place(func.attr.value):
        return False
    node = func.value
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Attribute) and node.attr.value == "grad":
            return True
        node = node.value
    return False


def _on_grad_in_place_ast(func: ast.expr) -> bool:
    """_on_grad_in_place for another module's `ast`."""
    if not isinstance(func, ast.Attribute) or not _in_place(func.attr):
        return False
    node = func.value
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and node.attr == "grad":
            return True
        node = node.value
    return False


def _unwrapped(node: cst.BaseExpression, model) -> cst.BaseExpression:
    from devicelint.names import dotted_name

    while isinstance(node, cst.Call) and node.args and node.args[0].keyword is None:
        name = model.qualname(node.func) or dotted_name(node.func) or ""
        if name.rsplit(".", 1)[-1] in ("enumerate", "tqdm", "iter", "track", "islice", "cycle"):
            node = node.args[0].value
        else:
            break
    return node


def _ends_with_break(body) -> bool:
    statements = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite)) else []
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return any(isinstance(s, cst.Break) for s in last.body)
    if isinstance(last, cst.Break):
        return True
    return False
