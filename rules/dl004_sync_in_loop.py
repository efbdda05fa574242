from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from devicelint.rule import Rule
from devicelint.semantic import Kind, Place
from devicelint.semantic import dataflow, hoststep
from devicelint.semantic.modules import holds_state
from devicelint.semantic.syncs import COMPARING, STRING_ONLY as _STRING_ONLY
from devicelint.semantic.values import Value, join_all
from devicelint.runtime_spec import Find, LineRecord, ProbeRun, RuntimeSpec, Watch

_PASS_THROUGH = ("enumerate", "tqdm", "trange", "iter", "zip")
# How far evidence follows bindings and operands (a beam search goes ~10 deep: scores ->
# top_k_words -> next_word_inds -> an element of it).
_MAX_DEPTH = 24


@dataclass(frozen=True)
class Evidence:
    hint: bool = False          # rests on a name (`device` of a function nobody in the file calls)
    opaque: bool = False        # through a call the file does not show


class SyncInLoop(Rule):
    """## What it does
    Flags a host synchronisation or device→host round-trip that runs on every step of a
    training or inference loop: `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, `.to("cpu")`,
    `float(t)`/`int(t)`/`bool(t)` and the other Python functions that make a number of a
    tensor (`chr(t)`, `range(t)`, `math.log10(t)`, `math.isfinite(t)`), `print(t)`, an
    f-string of a tensor or printf-style formatting (`"%.4f" % t`, `fmt % (epoch, *losses)`), `max()`/`min()`/
    `sorted()` of device tensors (or of a list the code fills with them: each comparison is
    a truth value), the truth value of
    a tensor (`if t > 0:`, `while loss > eps:`, `assert t`, a comprehension's `if w != end`,
    once per element), writing `t` into a CPU tensor (`attentions[i] = t`), indexing a
    Python list or NumPy array with `t` (`counts[label] += 1` with `label = y[i]`; also an object
    whose element the code uses as text, which no tensor gives: `word = vocab.itos[t]` then
    `"<" in word`, `"".join(itos[i] for i in ids)`: `__index__`
    reads it), `.type(torch.FloatTensor)` (a CPU tensor type: a copy to the host),
    `torch.equal(a, b)`/`torch.allclose(a, b)`/`a.allclose(b)` (a Python bool of the data),
    TensorBoard's `writer.add_scalar(tag, t, step)` (also `add_histogram`, `add_image(s)`:
    `SummaryWriter` copies `t` to the host with make_np), and
    `torch.cuda.synchronize()`,
    where `t` is a value the code shows lives on the device (moved there, created there,
    computed from device values, or the output of a module that is on the device). What a
    call into code the file does not show returns for device tensors (a model passed in as
    a parameter, a loss from another module: `loss = criterion(model(x.to(device)), y)`, a
    function of another package or local module: `acc1, acc5 = accuracy(out, y, topk=(1, 5))`,
    unless that local module shows it returns a host value, or a host value at the
    part of a tuple it returns that the code unpacks) is taken to be on the device too, as is what a function of the file returns when what it computes is (`loss, n = train_batch(...)`: the returned loss, not the size; an element of a list it fills with device tensors: `prec1 = accuracy(out, y)[0]`) or what a method of an object made from a class of another local module returns where that file shows device tensors (`text, lengths = converter.encode(labels)` with `encode` ending in `.to(device)`; every class the object may be made from must say so), and so is a field of a module's output (`out.logits`) and
    the output of a module that holds no tensor (`nn.MSELoss()`) given device tensors, the
    builtin `sum()` of such values (`loss = sum(criterion(feats_s, feats_t))`), what joins
    or is given a list display holding one (`torch.cat([candidate, token], dim=1)`), a part
    of an element of a list whose elements the code builds as tuples of device tensors
    (`candidates = [(start, 0.0)]`, `new.append((torch.cat(...), score))`, `candidates =
    sorted(new, ...)[:k]`, then `candidates[0][0]` or `for cand, score in candidates`), what a
    `functools.partial` of such code returns when it binds device tensors, a dict
    comprehension over device values (`{k: v.detach() for k, v in losses.items()}`), and a
    dict bound empty that the function fills with device values (`logs = {}` then
    `logs["d"] = d_loss`), also when a helper of another local module hands it back
    (`reduce_loss_dict(logs)`, which returns its argument itself on one process, and no
    other return of it is shown to be host data), and the values of a module's output the
    code walks as a dict (`loss_dict = criterion(out, targets)`, then
    `sum(loss_dict.values())` or `loss_dict.items()`), what `next(fetcher)` returns for an
    object of a class of the file or of another local module (its `__next__`), and the
    attributes of a `Munch`, `EasyDict` or `SimpleNamespace` built from device tensors only
    (`inputs = Munch({k: v.to(device) ...})`, then `inputs.x_src`); what a
    model's own method returns (`net.detect(x)`: device tensors or NumPy arrays) is not
    assumed, unless the code then uses the result as a tensor (`prob = model.project(h)`
    then `torch.max(prob, dim=1)`, which raises on an array; also after indexing and
    reshaping it, which keep an array an array: `att = att[0, :, 1:].reshape(n, -1)` then
    `torch.sort(att)`) and the model is on the device
    (or is given device tensors): greedy decoding through `model.decode`/`model.project`.
    A model the code does not place, given an argument that one path moves to the device
    (`if args.gpu is not None: input = input.cuda(args.gpu)`), lives there: the branch does
    not move the model, and a model on the CPU would raise on the moved input, so its
    output is on the device on both paths (not a module that holds no tensor, which
    computes where its input is).
    The parameters of a model on the device (`for name, p in model.named_parameters():`,
    `p.grad`) live there, as do those of its children (`list(net.children())[-1]`) and of a
    model the function calls on device tensors (`outputs = net(images)`, `net` made by code
    the file does not show); with a GPU, `if use_gpu: model = model.cuda()` decides where the
    model is. A parameter of a function nothing in the file calls has its default's
    place (`device="cuda"` is the GPU, `device="cpu"` the host). Where the only sign of the
    device is a parameter's name (`device` without a default, in a function nothing in the
    file calls), the message says so.

    A loop runs once per step when its body trains (`.backward()`, `.step()` on an
    optimizer or GradScaler), calls a module (or code the file does not show, such as a model
    loaded with `torch.load`, on device tensors the loop carries: greedy decoding), or walks a
    DataLoader (once per batch, even with a decoding loop inside); this iteration's data is
    also what the loop changes in place from a value it carries (`z.data = z1 * alpha + z2 *
    (1 - alpha)` with `alpha += alpha`: a latent walk). Any other loop whose every
    iteration runs such a loop is an epoch loop, and what it runs outside the inner loop runs
    once per epoch (silent). A read under a throttle (`if step % log_every == 0:`,
    `if verbose:`, `if i in np.linspace(0, n, 10, dtype=int):`, the loop counter in a
    collection the loop does not build) whose body does not train is silent, and so is one
    under a budget of reports (`if shown < 5: shown += 1; print(...)`: at most five times;
    `if len(complete) > 0:` in a beam search that takes `len(complete)` from the beam count
    `k` on every iteration and ends when `k` reaches zero: at most `k` times per search),
    but not an `if` (with no `else:`) that is the whole body of a loop that is a step loop
    only because it calls a module (`for i in bar: if success: out = model(frame.cuda()) ...`:
    the iterations it skips do nothing, every step runs inside it); a GPU flag
    (`if use_cuda:`, bound to `torch.cuda.is_available()` or passed so by every call of the
    function, or bound to a literal and guarding a move to the device: `USE_CUDA = True`
    with `if USE_CUDA: model.cuda()`, or an attribute of the instance stored once, in
    `__init__`, from what the constructor is given and guarding such a move with no `else:`
    that moves too: `self.gpu_mode = args.gpu_mode` with `if self.gpu_mode: x_ = x_.cuda()`, or
    an attribute of the instance the class binds only to literal booleans, one of them True,
    no other class of the file storing that name: `self.cuda = False` in `__init__`, `self.cuda
    = True` in the `check_cuda` that moves the networks; or an attribute of an object a
    function is passed, stored once in the straight-line body of the function that makes and
    passes it, as a user's switch ANDed with a GPU test guarding a move: `args.cuda = not
    args.no_cuda and torch.cuda.is_available()` in `main()`, then `train(args, ...)`; not
    `args.cuda = False`; an attribute stored once under `if __name__ == "__main__":` counts
    as one stored at the top level: `params.cuda = torch.cuda.is_available()`, then `model =
    Net().cuda() if params.cuda else Net()`) is no throttle: with a GPU it holds on every step, and what the `else:` arm
    binds does not run. Under a condition whose body also
    trains (`if i % n_critic == 0:` around a generator update; or a call that changes the
    gradients the optimizer step uses in place: `if args.clip_grad: utils.clip_gradients(model, c)`
    whose helper, in this file or another local module, scales each `p.grad` with an in-place
    method), or under a flag whose two arms
    each run the model on this step's data (`if is_transformer: ... else: ...`), it runs per
    step and is reported. A read in a block that always ends by leaving the loop (its last
    statement a `break` of this loop, a `return`, a `raise` or `sys.exit(...)`, with no `try`
    between it and the loop) runs at most once: silent (`if not math.isfinite(loss.item()):
    print(loss.item()); sys.exit(1)`: the test is reported, the report before the exit is
    not); a block ending with `continue` runs per step. Several reads in one statement are one
    finding that counts them.
    Sorting a dict's keys (`sorted(losses.keys())`, as a distributed reduce does to order
    them) compares their names, not the tensors the dict holds: silent.

    A call of a function of the same file that reads its argument on the host (an
    `accuracy()` helper ending in `.item()`, a metric accumulator doing `float(v)`) is
    reported at the call in the step loop, naming the helper's line, when the argument it
    reads is on the device; so is a call of a module whose class the code shows (here or in
    another local module: `decoder(imgs, caps, lengths)` whose `forward` does
    `lengths.tolist()`; what the module's own submodules compute lives where the module
    is: `assert torch.equal(out[-1], h[0])` of `out, h = self.rnn(x)` in a model on the device
    waits whatever the call passes; a submodule's setting, `self.rnn.bidirectional`, is no data), of a method of the class an enclosing `if isinstance(obj, Cls):`
    names, and of a method of an object made from a class of another local module
    (`logger = utils.MetricLogger()` with `import util.misc as utils`, whose `update(**kwargs)`
    does `.item()` on each tensor it is given).

    A read whose host copy the loop hands to a method of an object the file does not show
    (`envs.step(actions)`, with `actions = q.argmax(1).cpu().numpy()`), when the loop copies
    what that call returns to the device and computes the read value from that copy (an
    environment loop: the simulator steps on the host and needs the action before it can
    return the next observation), is silent: no change of the loop avoids it. A read that
    only feeds a print, a list, or a call whose result does not come back to the device
    (`buffer.add(q.cpu().numpy())`) is reported.

    Silent on: reads after the step loop, reads of host values (dataset samples, tensors
    built without a device, NumPy arrays, Python numbers, and elements the loop walks that
    the code calls a method only strings have on: `pred.find('[s]')`, `gt.lower()`, decoded
    text compared with `if pred == gt:`), code in branches that run only
    without a GPU, `synchronize()` used as a timing fence (the loop, or the code around
    it, takes timestamps, or the loop walks an iterator the file does not show, which may
    time each step), and values the code does not place (silence over guessing). Not
    followed, so silent: the reads inside helpers of third-party packages (a torchnet
    meter's `add`), framework hooks whose step loop is the framework's (Lightning's
    `training_step` logging `.item()`), and methods of a model whose class the run does not
    show.

    ## Why is this bad?
    CUDA runs asynchronously: the CPU queues kernels and moves on. A read of a value on the
    host makes the CPU wait until the GPU has finished everything queued so far, so the
    queue drains every step and the CPU cannot run ahead to prepare the next one. What it
    costs depends on the step. Measured on an H200 for this project: a bare `.item()`
    costs ~10 µs; one `.item()` per step added 51% to a GPU-bound loop of 1024² matmuls but
    5% to a small MLP training step; a per-step `.cpu().numpy()` of a 64 MB tensor made a
    loop 1,246× slower. Run `devicelint confirm` on a GPU machine to measure your loop.

    ## Example
    ```python
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        running_loss += loss.item()        # waits for the GPU every step
    ```

    ## Use instead
    ```python
    running_loss = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        running_loss += loss.detach()      # stays on the device
        if step % log_every == 0:
            print(running_loss.item() / (step + 1))   # one sync per log line
    ```
    """

    code = "DL004"
    precision = "high"  # docs/audit.md: at least 20 judged cases, at least 95% right
    name = "sync-in-loop"
    summary = "Host sync (`.item()`, `.cpu()`, `print(t)`, ...) inside a training/inference step loop"
    message = "{what} {verb} for the GPU on every step of this loop"
    hint = "keep the value on the device; read it after the loop or every N steps"
    hint_note = " (a GPU known from its name only)"
    # A value on the GPU needs one of these in the file (`.to(device)`, `.cuda()`, `device=`).
    tokens = ("cuda", "device", ".to(")

    @staticmethod
    def gate(facts) -> bool:
        """A read in a step loop (a for/while loop) of a value on the device: the file puts
        one there (`device_placing`), or a whole-device wait (`torch.cuda.synchronize()`,
        the API table's `syncs` functions, by name), or calls code of another local module
        (a helper, a module's forward) whose reads that file's model decides
        (devicelint/gate.py). Without the first two, no value of the file is on the device
        (`device_placing`: the model's values reach the device only through those; what
        another module's function returns is taken from it only for device arguments,
        `_project_returned`), so every finding is a read that code of another module
        makes on a value on the device there (`SummaryRead.device`, `read_applies`; a
        `synchronize` there), or a method of an object of another module's class
        returning one (`_foreign_method_returns`): code that imported function or class
        runs as its model follows it, through the names it writes, into its module and
        further ones (`_helper_reads` of `foreign_function`), where something puts a
        value on the device or waits for it (`gate.may_place_through`). A function so
        used: called in a step loop (`call_reads`), or in a function of the file that a call
        in a step loop may run (its summary's `_helper_reads`: `may_call_own_in_loop`), or
        passed as a value (`_passed_function`); a class: built, passed or tested
        (`narrowed_method`'s `isinstance`) anywhere, not only named in an annotation."""
        if not facts.has_step_loop:
            return False
        if facts.device_placing() or facts.mentions("synchronize"):
            return True
        from devicelint.gate import IN_FUNCTION, IN_STEP_LOOP, VALUE_USE, may_place_through

        def places(symbol, flags: int, view) -> bool:
            if symbol.kind == "function" and not flags & (IN_STEP_LOOP | VALUE_USE) and not (
                    flags & IN_FUNCTION and facts.may_call_own_in_loop(IN_STEP_LOOP)):
                return False
            return may_place_through(symbol, view)

        return facts.uses_foreign(places)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.candidates: list[cst.CSTNode] = []
        # call node id -> (read node inside the helper, message): SARIF relatedLocations
        self.related: dict[int, list[tuple[cst.CSTNode, str]]] = {}
        self._judging: set[int] = set()   # bindings whose evidence is being judged (cycles)
        self._cycles = 0                   # how often a judgement came back to one of them

    # -- collection: nodes that may read on the host ------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        self.candidates.append(node)

    def visit_If(self, node: cst.If) -> None:
        self.candidates.append(node)

    def visit_While(self, node: cst.While) -> None:
        self.candidates.append(node)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self.candidates.append(node)

    def visit_Assert(self, node: cst.Assert) -> None:
        self.candidates.append(node)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self.candidates.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.candidates.append(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.candidates.append(node)

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        self.candidates.append(node)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is cst.Modulo:
            self.candidates.append(node)

    # -- judgement ------------------------------------------------------------------------
    def leave_Module(self, node: cst.Module) -> None:
        ctx = self.ctx
        sem = ctx.semantic
        syncs = sem.syncs
        helpers = sem.functions()
        groups: dict[int, list[tuple[cst.CSTNode, str]]] = {}
        for candidate in self.candidates:
            if not ctx.loops(candidate) and type(candidate) is not cst.While:
                continue
            found: list[tuple[cst.CSTNode, str]] = []
            for read in syncs.reads(candidate):
                loop = sem.loops.step_loop(read.node)
                if loop is None or not sem.on_gpu_path(read.node) or sem.loops.leaves_loop(read.node, loop):
                    continue
                if read.operand is None:
                    if not self._timing_fence(loop):
                        found.append((read.node, read.what, None))
                    continue
                if _compares_elements(read):
                    evidence = self._elements_on_device(read.operand)
                else:
                    evidence = self._on_device(read.operand, loop)
                if evidence is not None and hoststep.feeds_host_step(sem, read.node, read.operand, loop) is not None:
                    continue  # the action an environment loop hands to its host step: needed
                if evidence is not None:
                    found.append((read.node, read.what, evidence))
            if type(candidate) is cst.Call and (_last_name(candidate.func) in helpers
                                                    or syncs.runs_foreign_function(candidate)
                                                    or sem.loops.is_module_call(candidate)
                                                    or syncs.narrowed_method(candidate) is not None
                                                    or syncs.foreign_methods(candidate)):
                loop = sem.loops.step_loop(candidate)
                if loop is not None and sem.on_gpu_path(candidate) and not sem.loops.leaves_loop(candidate, loop):
                    shown = syncs.call_reads(candidate, self._arg_on_device(candidate, loop))
                    for inner in syncs.call_reads(candidate, self._arg_on_device(candidate, loop, hints=True)):
                        evidence = None if inner in shown else Evidence(hint=True)
                        if inner.where is not None:  # in another file of the project
                            place, at = inner.where.short(), inner.where
                        else:
                            place, at = ctx.line_ref(inner.node), inner.node
                        found.append((candidate, f"`{_called(candidate)}()` ({inner.what} at {place})", evidence))
                        self.related.setdefault(id(candidate), []).append(
                            (at, f"{inner.what} inside `{_called(candidate)}()`, run on every step"))
            for target, what, evidence in found:
                statement = _statement(ctx, target)
                groups.setdefault(id(statement), []).append((target, what, evidence))
        for reads in groups.values():
            reads.sort(key=lambda r: ctx.order(r[0]))
            if len(reads) == 1:
                what, verb = reads[0][1], "waits"
            else:
                counts: dict[str, int] = {}
                for _, w, _e in reads:
                    counts[w] = counts.get(w, 0) + 1
                parts = [w if n == 1 else f"{w} ×{n}" for w, n in counts.items()]
                what = f"{len(reads)} host reads ({', '.join(parts)})"
                verb = "wait"
            message = self.message.format(what=what, verb=verb)
            if all(e is not None and e.hint for _, _, e in reads):
                message += self.hint_note
            related = [r for target, _w, _e in reads for r in self.related.get(id(target), [])]
            self.report(reads[0][0], message, related=related)

    def _arg_on_device(self, call: cst.Call, loop: cst.CSTNode, hints: bool = False):
        """How to judge the arguments of a helper's call (of this file or another): as the
        reads in the loop are judged (what calls the file does not show return for device
        tensors counts: `metric.add(loss, n)` with the loss of a model called on device
        data); with `hints`, also where the device is known only from a name (the message
        then says so)."""
        return lambda arg: (lambda e: e is not None and (hints or not e.hint))(self._on_device(arg, loop))

    def _on_device(self, operand: cst.CSTNode, loop: cst.CSTNode) -> Optional[Evidence]:
        """Why the operand is on the device, or None when the code does not show it."""
        found = self._evidence(operand, 0)
        if found is not None:
            return found
        if isinstance(loop, cst.While) and self._within(operand, loop.test):
            # `while loss > eps:` reads, from the second iteration on, what the body assigned.
            sides = [operand] if not isinstance(operand, cst.Comparison) else \
                [operand.left] + [c.comparator for c in operand.comparisons]
            for side in sides:
                found = self._carried(side, loop)
                if found is not None:
                    return found
        return None

    def _carried(self, side: cst.CSTNode, loop: cst.While) -> Optional[Evidence]:
        sem = self.ctx.semantic
        if not isinstance(side, cst.Name):
            return None
        inside = [d for d in sem.defs(side) if self._within(d.node, loop.body)]
        if not inside:
            return None
        value = join_all(sem.def_value(d) for d in inside)
        if value.kind is Kind.TENSOR and value.place is Place.DEVICE:
            return Evidence(value.hint)
        return None

    def _evidence(self, node: cst.CSTNode, depth: int) -> Optional[Evidence]:
        """The value of `node` is on the device: the semantic model says so, or it is what a
        call the file does not show (a model passed in, a loss from another module) returns
        for device tensors (`outputs = model(x.to(device))`), carried through tensor methods,
        indexing and arithmetic."""
        sem = self.ctx.semantic
        if isinstance(node, cst.DictComp) and depth <= _MAX_DEPTH:
            # `{k: v * w for k, v in losses.items()}`: a mapping of what its values are.
            return self._evidence(node.value, depth + 1)
        value = sem.value(node)
        if value.place is Place.DEVICE and value.kind in (Kind.TENSOR, Kind.UNKNOWN):
            return Evidence(value.hint)
        if value.place is Place.UNKNOWN and depth <= _MAX_DEPTH and _builtin_sum(sem, node):
            # `loss = sum(loss_group)` of the losses a criterion the file does not show
            # returns: the sum of device tensors is a device tensor.
            return self._evidence(node.args[0].value, depth + 1)
        if isinstance(node, (cst.List, cst.Tuple)) and value.place is Place.UNKNOWN and depth <= _MAX_DEPTH:
            # `torch.cat([candidate, token], dim=1)`: a display that holds a device tensor
            # (what joins them, or code given them, computes on the device).
            for element in node.elements:
                found = self._evidence(element.value, depth + 1)
                if found is not None:
                    return found
            return None
        if value.place is not Place.UNKNOWN or value.kind not in (Kind.TENSOR, Kind.UNKNOWN) \
                or depth > _MAX_DEPTH:
            return None
        if isinstance(node, cst.Name):
            defs = sem.gpu_path_defs(sem.defs(node))
            found: list[Evidence] = []
            for d in defs:
                if id(d) in self._judging:
                    # Loop-carried (`tokens = f(model(tokens))`): this binding is what is being
                    # judged; the other bindings decide.
                    self._cycles += 1
                    continue
                self._judging.add(id(d))
                cycles = self._cycles
                try:
                    inner = self._def_evidence(d, depth + 1)
                finally:
                    self._judging.discard(id(d))
                if inner is None:
                    if self._cycles > cycles:
                        # Undecided only because it comes back to a binding being judged
                        # (`scores = top_k.expand_as(scores) + scores`, `top_k = scores.topk(k)`):
                        # what a step computes from a device value stays there; the bindings
                        # from outside the cycle decide.
                        continue
                    return None
                found.append(inner)
            if not found:
                if any(id(d) in self._judging for d in defs):
                    self._cycles += 1
                return None
            return Evidence(any(e.hint for e in found), any(e.opaque for e in found))
        if isinstance(node, cst.Call):
            own = sem.syncs.callee(node)
            if own is not None:
                # A function of the file: what its returns compute (`return loss.sum(), acc`
                # with `loss = criterion(net(x), y)` and `x` moved to the device).
                return self._returned_evidence(own[0], (), depth + 1)
            shown = self._foreign_method_returns(node, ())
            if shown is not None:
                # `converter.encode(labels)` of an object of another local module's class,
                # whose method returns device tensors there.
                return shown
            func = node.func
            bound = self._partial(func)
            if bound is not None:
                # `step = functools.partial(diffusion.losses, model, x)` then `step()`: a call
                # of code the file does not show, with the bound arguments and these.
                for arg in [*bound, *node.args]:
                    found = self._evidence(arg.value, depth + 1)
                    if found is not None:
                        return Evidence(found.hint, True)
                return None
            if self._model_method(node) is not None:
                # `model.generate(x)`: a method of the model's own may return NumPy arrays
                # as well as device tensors; the file does not show which (unless what the
                # code does with the result shows a tensor: `_def_evidence`).
                return None
            if isinstance(func, cst.Attribute):
                method = sem.api.method(func.attr.value)
                if method is not None and (method.place == "cpu" or method.result in (
                        "number", "host-list", "array", "none")):
                    return None  # `.item()`, `.size()`, `.numpy()`: a host value
                receiver = sem.value(func.value)
                if receiver.kind is Kind.TENSOR or receiver.kind is Kind.UNKNOWN:
                    found = self._evidence(func.value, depth + 1)
                    if found is not None:
                        return found
            callee = sem.value(func)
            qual = sem.qualname(func)
            spec = sem.api.function(qual) if qual else None
            # Code the file does not show: no qualified name (a parameter, an attribute), or a
            # function of another package or local module (`timm.utils.accuracy`,
            # `utils.gram_matrix`); PyTorch's own functions are judged by the API table.
            unseen = value.kind is Kind.UNKNOWN and sem.syncs.callee(node) is None and (
                qual is None or (spec is None and qual.split(".", 1)[0] != "torch"))
            foreign = sem.syncs.foreign_function(node) if unseen else None
            if foreign is not None:
                # A function of another local module: what it returns, as that file shows it.
                other, function = foreign
                returned = other.summary(function).returns
                if returned.kind not in (Kind.TENSOR, Kind.UNKNOWN) or returned.place is Place.CPU:
                    return None
            follows = spec is not None and spec.place == "input"   # `F.softmax(scores)`
            stateless = callee.kind is Kind.MODULE and holds_state(sem, callee) is False
            if unseen or follows or stateless or (callee.kind is Kind.MODULE and callee.place is Place.UNKNOWN):
                # A call into code the file does not show (or a module whose place it does
                # not show, or one that holds no tensor: `nn.MSELoss()`), given device tensors.
                for arg in node.args:
                    found = self._evidence(arg.value, depth + 1)
                    if found is not None:
                        return Evidence(found.hint, found.opaque or not follows)
                if (callee.kind is Kind.MODULE and not stateless) or (unseen and qual is None):
                    # A model the code does not place, given an argument that one path moves
                    # (`if args.gpu is not None: input = input.cuda(args.gpu)`): the branch
                    # does not move the model, and a model on the CPU raises on the moved
                    # input, so it lives on the device and so does what it returns (on the
                    # other path a DataParallel scatters the host batch there).
                    for arg in node.args:
                        moved = dataflow.conditional_move(sem, arg.value) \
                            if type(arg.value) is cst.Name else None
                        found = self._evidence(moved.value, depth + 1) if moved is not None else None
                        if found is not None:
                            return Evidence(found.hint, True)
            return None
        if isinstance(node, cst.Subscript):
            return self._evidence(node.value, depth + 1) or self._indexed_element(node, depth + 1)
        if isinstance(node, cst.Attribute) and node.attr.value in ("data", "values", "indices", "grad", "T"):
            return self._evidence(node.value, depth + 1)
        if isinstance(node, cst.BinaryOperation):
            return self._evidence(node.left, depth + 1) or self._evidence(node.right, depth + 1)
        if isinstance(node, cst.Comparison):
            for side in [node.left] + [c.comparator for c in node.comparisons]:
                found = self._evidence(side, depth + 1)
                if found is not None:
                    return found
        if isinstance(node, cst.UnaryOperation):
            return self._evidence(node.expression, depth + 1)
        return None

    def _def_evidence(self, d, depth: int) -> Optional[Evidence]:
        """The binding `d` gives a device value. `total += loss` is on the device when what
        it adds is, or when what it adds to already was (`total = 0.` then `+=` a device
        loss in an inner loop, then `total *= weight`)."""
        if d.value is None or depth > _MAX_DEPTH:
            return None
        if d.kind in ("assign", "annassign", "with", "walrus"):
            if d.path and isinstance(d.value, cst.Call):
                own = self.ctx.semantic.syncs.callee(d.value)
                if own is not None:   # `loss, acc = train_batch(...)`: the returned part
                    return self._returned_evidence(own[0], d.path, depth)
                shown = self._foreign_method_returns(d.value, d.path)
                if shown is not None:
                    return shown
                part = self._foreign_part(d.value, d.path)
                if part is not None:
                    # `inter, union = intersect_and_union(out, y)` of another local module:
                    # the part that file returns (a tuple's part on the host: silent).
                    if part.kind not in (Kind.TENSOR, Kind.UNKNOWN) or part.place is Place.CPU:
                        return None
                    return self._args_evidence(d.value, depth)
            owner = self._model_method(d.value)
            if owner is not None:
                return self._method_evidence(d, owner, depth)
            return self._evidence(d.value, depth)
        if d.kind in ("for", "comp"):
            # An element of what the loop walks: a row of a device tensor, an element of a
            # list of device tensors, lives where they do.
            value = self.ctx.semantic.def_value(d)
            if value.kind not in (Kind.TENSOR, Kind.UNKNOWN) or self._used_as_string(d):
                return None
            if value.place is Place.DEVICE:
                return Evidence(value.hint)
            source = _walked(d.value, d.path)
            if source is None:
                owner = _parameters_of(d.value, d.path)
                if owner is None and d.path:
                    # `for cand, score in candidates`: a part of each tuple the list holds.
                    return self._list_elements(d.value, d.path, depth + 1)
                return self._module_evidence(owner) if owner is not None else None
            return self._evidence(source, depth + 1)
        if d.kind == "augassign":
            found = self._evidence(d.value, depth)
            if found is not None:
                return found
            for prior in self.ctx.semantic.gpu_path_defs(list(d.prior)):
                if prior is not d:
                    found = self._def_evidence(prior, depth + 1)
                    if found is not None:
                        return found
        return None

    def _foreign_method_returns(self, call: cst.Call, path: tuple) -> Optional[Evidence]:
        """`text, length = converter.encode(labels)`, with `converter` an object of a class
        of another local module (one class per binding: `syncs.foreign_methods`): evidence
        when the method of every such class returns a device tensor (at `path` of a
        returned tuple: `return batch.to(device), lengths.to(device)`), as that file
        shows it; else None."""
        sem = self.ctx.semantic
        methods = sem.syncs.foreign_methods(call)
        if not methods:
            return None
        hints = []
        for other, method in methods:
            value = other.returned_value(method)
            for index in path:
                items = value.items if value.kind is Kind.SEQUENCE else None
                if not items or not isinstance(index, int) or not 0 <= index < len(items):
                    return None
                value = items[index]
            if value.kind is not Kind.TENSOR or value.place is not Place.DEVICE:
                return None
            hints.append(value.hint)
        return Evidence(any(hints), True)

    def _foreign_part(self, call: cst.Call, path: tuple) -> Optional[Value]:
        """The part at `path` of the fixed tuple that a top-level function of another local
        module returns (`return area_inter, area_union, area_target`), as that file's model
        shows it; None when `call` runs no such function or what it returns is no fixed
        tuple of that length."""
        sem = self.ctx.semantic
        if len(path) != 1 or sem.value(call).kind is not Kind.UNKNOWN:
            return None
        foreign = sem.syncs.foreign_function(call)
        if foreign is None:
            return None
        other, function = foreign
        returned = other.summary(function).returns
        items = returned.items if returned.kind is Kind.SEQUENCE else None
        if not items or not 0 <= path[0] < len(items):
            return None
        return items[path[0]]

    def _indexed_element(self, node: cst.Subscript, depth: int) -> Optional[Evidence]:
        """`candidates[0][0]`: a part (at literal indices) of an element of a list whose
        elements the code builds as tuples of device tensors (`candidates = [(start, 1)]`,
        then `new.append((torch.cat([cand, token], 1), score))`, `candidates =
        sorted(new, ...)[:k]`)."""
        indices = []
        current: cst.BaseExpression = node
        while isinstance(current, cst.Subscript):
            index = _literal_index(current)
            if index is None:
                return None
            indices.insert(0, index)
            current = current.value
        if not isinstance(current, cst.Name) or not indices:
            return None
        return self._list_elements(current, tuple(indices[1:]), depth)

    def _list_elements(self, expr: cst.BaseExpression, path: tuple, depth: int) -> Optional[Evidence]:
        """Every element of the list `expr` (its part at `path` of a tuple element) is on the
        device: a list display's elements, what the code adds to a list bound empty
        (`append`, `insert`, `extend` only), through `sorted()`/`list()`/`reversed()`, slices
        and the bindings of a name (loop-carried ones as `_evidence` takes them)."""
        sem = self.ctx.semantic
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            found = []
            for d in sem.gpu_path_defs(sem.defs(expr)):
                if id(d) in self._judging:
                    self._cycles += 1
                    continue
                if d.kind != "assign" or d.path or d.value is None:
                    return None
                self._judging.add(id(d))
                try:
                    if _empty_list(d.value):
                        inner = self._added_elements(expr, d, path, depth + 1)
                    else:
                        inner = self._list_elements(d.value, path, depth + 1)
                finally:
                    self._judging.discard(id(d))
                if inner is None:
                    return None
                found.append(inner)
            if not found:
                return None
            return Evidence(any(e.hint for e in found), any(e.opaque for e in found))
        if isinstance(expr, (cst.List, cst.Tuple)):
            found = []
            for element in expr.elements:
                if not isinstance(element, cst.Element):
                    return None
                inner = self._tuple_part(element.value, path, depth + 1)
                if inner is None:
                    return None
                found.append(inner)
            if not found:
                return None
            return Evidence(any(e.hint for e in found), any(e.opaque for e in found))
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) \
                and expr.func.value in ("sorted", "list", "reversed") and not sem.defs(expr.func) \
                and expr.args and expr.args[0].keyword is None and not expr.args[0].star:
            return self._list_elements(expr.args[0].value, path, depth + 1)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 \
                and isinstance(expr.slice[0].slice, cst.Slice):
            return self._list_elements(expr.value, path, depth + 1)
        return None

    def _added_elements(self, name: cst.Name, d, path: tuple, depth: int) -> Optional[Evidence]:
        """What the code adds to the list `d` binds empty (`xs = []`), each at `path`."""
        sem = self.ctx.semantic
        found = []
        for kind, change in dataflow.changes(sem, name, sem.scope_of(name)):
            if kind != "method" or not isinstance(change.func, cst.Attribute):
                return None
            receiver = change.func.value
            if not isinstance(receiver, cst.Name) or not any(x is d for x in sem.defs(receiver)):
                continue   # another binding of the name (a list made on another pass)
            method = change.func.attr.value
            given = [a.value for a in change.args if a.keyword is None and not a.star]
            if method in ("append", "insert") and given:
                inner = self._tuple_part(given[-1], path, depth + 1)
            elif method == "extend" and len(given) == 1:
                inner = self._list_elements(given[0], path, depth + 1)
            else:
                return None
            if inner is None:
                return None
            found.append(inner)
        if not found:
            return None
        return Evidence(any(e.hint for e in found), any(e.opaque for e in found))

    def _tuple_part(self, expr: cst.BaseExpression, path: tuple, depth: int) -> Optional[Evidence]:
        """The part of the tuple display `expr` at `path` is on the device (`expr` itself with
        no path)."""
        for index in path:
            if not isinstance(expr, (cst.Tuple, cst.List)) or not -len(expr.elements) <= index < len(expr.elements):
                return None
            element = expr.elements[index]
            if not isinstance(element, cst.Element) or any(
                    not isinstance(e, cst.Element) for e in expr.elements):
                return None
            expr = element.value
        return self._evidence(expr, depth)

    def _module_evidence(self, node: cst.BaseExpression, depth: int = 0) -> Optional[Evidence]:
        """The module `node` holds is on the device with a GPU: its bindings that run then
        (`model = Net()` replaced by `model = model.cuda()` under `if use_gpu:`) all put it
        there, so its parameters and their gradients live there."""
        sem = self.ctx.semantic
        value = sem.value(node)
        if isinstance(node, cst.Name) and value.place is Place.UNKNOWN:
            value = self._gpu_path_value(sem.defs(node), 0)
        if value.place is Place.DEVICE and (value.kind is Kind.MODULE or sem.moved_callable(value)):
            return Evidence(value.hint)
        if isinstance(node, cst.Name) and value.place is Place.UNKNOWN and depth < 4:
            # `last_layer = list(net.children())[-1]`: a submodule of a module on the device.
            defs = sem.gpu_path_defs(sem.defs(node))
            owners = [_submodule_owner(d.value) if d.kind == "assign" and not d.path else None
                      for d in defs]
            if owners and all(o is not None for o in owners):
                found = [self._module_evidence(o, depth + 1) for o in owners]
                if all(e is not None for e in found):
                    return Evidence(any(e.hint for e in found))
        if isinstance(node, cst.Name) and value.kind in (Kind.MODULE, Kind.UNKNOWN) and value.place is Place.UNKNOWN:
            # `outputs = net(images)` with `images` on the device, in this function (asked of
            # what the code walks the parameters or children of): a module
            # whose call succeeds on device tensors holds its parameters there (one that holds
            # none has no parameters to walk).
            scope = sem.scope_of(node)
            for call in self.candidates:
                if isinstance(call, cst.Call) and isinstance(call.func, cst.Name) \
                        and call.func.value == node.value and sem.scope_of(call) is scope \
                        and sem.defs(call.func) == sem.defs(node) and sem.on_gpu_path(call):
                    for arg in call.args:
                        found = self._evidence(arg.value, 0)
                        if found is not None and not found.hint:
                            return Evidence(False, found.opaque)
        return None

    def _gpu_path_value(self, defs, depth: int) -> Value:
        """The join of the bindings that reach a read with a GPU, also through statements
        that change the object in place (`model.eval()` after `if use_gpu: model =
        model.cuda()`: what reached `model.eval()` with a GPU, then the effect)."""
        sem = self.ctx.semantic
        values = []
        for d in sem.gpu_path_defs(defs):
            if d.kind == "effect" and d.prior and depth < 8:
                prior = self._gpu_path_value(list(d.prior), depth + 1)
                values.append(sem.in_place_effect(prior, d.value))
            else:
                values.append(sem.def_value(d))
        return join_all(values)

    def _model_method(self, node) -> Optional[Value]:
        """The model whose own method `node` calls (`model.decode(memory, tgt)`: not a
        submodule, not `nn.Module`'s API), or None."""
        sem = self.ctx.semantic
        if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
            return None
        func = node.func
        if sem.value(func).kind is Kind.MODULE or func.attr.value in sem.api.module_api_methods:
            return None
        owner = sem.value(func.value)
        if owner.kind is Kind.MODULE or sem.moved_callable(owner):
            return owner
        return None

    def _method_evidence(self, d, owner: Value, depth: int) -> Optional[Evidence]:
        """A method of a model's own (`prob = model.project(h)`) returns a device tensor
        when the code then uses the result as a tensor (`torch.max(prob, dim=1)`: a NumPy
        array raises there) and the model is on the device, or is given device tensors
        (greedy decoding: `model.decode(memory, mask, tokens)` with `tokens` moved there)."""
        sem = self.ctx.semantic
        if not dataflow.used_as_tensor(sem, d):
            return None
        if owner.place is Place.DEVICE:
            return Evidence(owner.hint, True)
        if owner.place is Place.CPU:
            return None
        return self._args_evidence(d.value, depth)

    def _args_evidence(self, call, depth: int):
        """Device evidence of the first argument of `call` that has any (what the call gives
        back follows its arguments), else None."""
        for arg in call.args:
            found = self._evidence(arg.value, depth + 1)
            if found is not None:
                return Evidence(found.hint, True)
        return None

    def _used_as_string(self, d) -> bool:
        """The code calls a method only strings have on what binding `d` holds (`for gt, pred
        in zip(labels, preds_str):` then `pred.find('[s]')`): decoded text, not a tensor,
        whatever call of code the file does not show produced it."""
        sem = self.ctx.semantic
        for name in dataflow.uses(sem, d):
            method = sem.parent(name)
            if isinstance(method, cst.Attribute) and method.value is name \
                    and method.attr.value in _STRING_ONLY:
                call = sem.parent(method)
                if isinstance(call, cst.Call) and call.func is method:
                    return True
        return False

    def _returned_evidence(self, function: cst.FunctionDef, path: tuple,
                           depth: int) -> Optional[Evidence]:
        """Every value `function` returns (the part at `path` of a returned tuple) is on
        the device; None when one is not shown to be, or the function yields."""
        sem = self.ctx.semantic
        flow = sem.flow(function)
        if flow.yields or not flow.returns or id(function) in self._judging or depth > _MAX_DEPTH:
            return None
        self._judging.add(id(function))
        try:
            found = []
            for ret in flow.returns:
                part = ret.value
                for index in path:
                    if not isinstance(part, cst.Tuple) or not 0 <= index < len(part.elements) \
                            or not isinstance(part.elements[index], cst.Element):
                        return None
                    part = part.elements[index].value
                if part is None:
                    return None
                evidence = self._evidence(part, depth + 1)
                if evidence is None:
                    return None
                found.append(evidence)
        finally:
            self._judging.discard(id(function))
        return Evidence(any(e.hint for e in found), any(e.opaque for e in found))

    def _elements_on_device(self, iterable: cst.CSTNode) -> Optional[Evidence]:
        """The elements of `iterable` live on the device: the rows of a device tensor, or a
        list made empty (`[]`, `list()`) that the code only grows (`append`, `extend`,
        `insert`) with device values (`scores.extend(top_k_scores[done])`)."""
        sem = self.ctx.semantic
        found = self._evidence(iterable, 0)
        if found is None:
            value = sem.value(iterable)
            element = value.element
            if value.kind is Kind.SEQUENCE and element is not None and element.kind is Kind.TENSOR \
                    and element.place is Place.DEVICE:
                found = Evidence(element.hint)   # `sorted(loss_dict.values())`
        if found is not None or not isinstance(iterable, cst.Name):
            return found
        defs = sem.defs(iterable)
        if not defs or not all(d.kind == "assign" and not d.path and _empty_list(d.value) for d in defs):
            return None
        added = []
        for kind, change in dataflow.changes(sem, iterable, sem.scope_of(iterable)):
            if kind != "method" or not isinstance(change.func, cst.Attribute):
                return None
            method = change.func.attr.value
            given = [a.value for a in change.args if a.keyword is None and not a.star]
            if method in ("append", "insert") and given:
                found = self._evidence(given[-1], 0)
            elif method == "extend" and len(given) == 1:
                found = self._elements_on_device(given[0]) if isinstance(given[0], cst.Name) \
                    else self._evidence(given[0], 0)
            else:
                return None
            if found is None:
                return None
            added.append(found)
        if not added:
            return None
        return Evidence(any(e.hint for e in added), any(e.opaque for e in added))

    def _partial(self, func: cst.BaseExpression) -> Optional[list]:
        """The arguments `functools.partial(target, *args)` binds, when every binding of
        the name called is such a partial of code the file does not show."""
        sem = self.ctx.semantic
        if not isinstance(func, cst.Name):
            return None
        defs = sem.defs(func)
        bound: list = []
        for d in defs:
            made = d.value
            if d.kind != "assign" or d.path or not isinstance(made, cst.Call) or not made.args \
                    or sem.qualname(made.func) != "functools.partial":
                return None
            target = made.args[0].value
            qual = sem.qualname(target)
            if sem.resolve_function(target) is not None or (qual is not None and qual.startswith("torch.")):
                return None
            bound.extend(a for a in made.args[1:] if not a.star)
        return bound if defs else None

    def _within(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        current: Optional[cst.CSTNode] = node
        while current is not None:
            if current is container:
                return True
            current = self.ctx.parent(current)
        return False

    def _timing_fence(self, loop: cst.CSTNode) -> bool:
        """`synchronize()` that fences a timed region: the loop takes timestamps, or a stamp
        before and one after the loop bracket it, or the loop walks an iterator the file
        does not show (a metric logger's `log_every(loader)` times each step)."""
        ctx = self.ctx
        sem = ctx.semantic
        stamps = self._stamps()
        scope = sem.scope_of(loop)
        start = ctx.order(loop)
        before = after = False
        for stamp in stamps:
            if self._within(stamp, loop):
                return True
            if sem.scope_of(stamp) is not scope:
                continue
            if ctx.order(stamp) < start:
                before = True
            else:
                after = True
        if before and after:
            return True
        if isinstance(loop, cst.For):
            iterable = loop.iter
            while isinstance(iterable, cst.Call) and _last_name(iterable.func) in _PASS_THROUGH \
                    and iterable.args:
                iterable = iterable.args[0].value
            if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) \
                    and sem.qualname(iterable.func) is None \
                    and sem.value(iterable).kind is Kind.UNKNOWN \
                    and sem.value(iterable.func.value).kind is Kind.UNKNOWN \
                    and sem.syncs.callee(iterable) is None:
                return True
        return False

    def _stamps(self) -> list[cst.Call]:
        found = getattr(self, "_stamp_calls", None)
        if found is None:
            sem = self.ctx.semantic
            found = []
            for call in self.candidates:
                if not isinstance(call, cst.Call):
                    continue
                if self.ctx.qualname(call.func) in sem.api.stamps \
                        and sem.qualname(call.func) in sem.api.stamps:
                    found.append(call)
                elif isinstance(call.func, cst.Attribute) and call.func.attr.value in ("record", "elapsed_time") \
                        and sem.value(call.func.value).kind is Kind.EVENT:
                    found.append(call)
            self._stamp_calls = found
        return found

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        syncs = rec.syncs
        count = syncs.count
        if not count:
            return run.base("refuted", "the line ran but read nothing back from the GPU (values "
                            "on the CPU)", count=0)
        if run.estimated:
            blocked = count * run.table["item_us"] / 1000
        else:
            blocked = syncs.seconds * 1000
        figures = dict(count=count, kinds=syncs.kinds, measured_ms=round(blocked, 4))
        span = (rec.last - rec.first) * 1000 if rec.first is not None else 0.0
        if count >= 2 and span > 0 and not run.estimated:
            # Reads moved out: the host stops waiting at each step and pays one read at the end.
            per_read = blocked / count
            figures["loop_ms"] = round(span, 4)
            figures["counterfactual_ms"] = round(max(span - blocked + per_read, 0.0), 4)
            figures["counterfactual_is_estimate"] = True
        if count < 2:
            return run.base("refuted", "one host read per run of the line: not per step",
                            **figures)
        what = ", ".join(f"{n}x {k}" for k, n in sorted(syncs.kinds.items()))
        return run.base("confirmed", f"{count:,} host syncs ({what}), host blocked "
                        f"{blocked:.3f} ms", **figures)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.SYNCS, Watch.MOVES), finds=(Find.HOST_READS,))


def _walked(iterable: cst.BaseExpression, path: tuple) -> Optional[cst.BaseExpression]:
    """The expression whose elements a loop target's part takes: `x` for `for row in x`,
    and for the second name of `for i, row in enumerate(x)`, and for `a` in `for a, b in zip(x, y)`."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute) and not iterable.args:
        # `for k, v in losses.items()` / `for v in losses.values()`: the mapping's values.
        method = iterable.func.attr.value
        if method == "items" and path[:1] == (1,):
            return iterable.func.value if len(path) == 1 else None
        if method == "values":
            return iterable.func.value if not path else None
        return None
    while isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.args:
        name = iterable.func.value
        if name == "enumerate" and path[:1] == (1,):
            iterable, path = iterable.args[0].value, path[1:]
        elif name == "zip" and path and path[0] < len(iterable.args):
            iterable, path = iterable.args[path[0]].value, path[1:]
        else:
            break
    return iterable if not path else None


def _parameters_of(iterable: cst.BaseExpression, path: tuple) -> Optional[cst.BaseExpression]:
    """The module whose parameters (or buffers) a loop target takes: `model` for `for p in
    model.parameters()` and for the tensor of `for name, p in model.named_parameters()`."""
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)) or iterable.args:
        return None
    method = iterable.func.attr.value
    if (method in ("parameters", "buffers") and not path) \
            or (method in ("named_parameters", "named_buffers") and path == (1,)):
        return iterable.func.value
    return None


def _submodule_owner(expr) -> Optional[cst.BaseExpression]:
    """`net` for `list(net.children())[-1]`, `net.children()`, `list(net.modules())[i]`: the
    module whose submodules `expr` gives (they are moved with it), else None."""
    while True:
        if isinstance(expr, cst.Subscript):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) \
                and expr.func.value in ("list", "tuple") and len(expr.args) == 1:
            expr = expr.args[0].value
        else:
            break
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args \
            and expr.func.attr.value in ("children", "modules"):
        return expr.func.value
    return None


def _literal_index(node: cst.Subscript) -> Optional[int]:
    """`x[2]` / `x[-1]`: the literal integer index, else None."""
    if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return None
    value = node.slice[0].slice.value
    negative = False
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        negative, value = True, value.expression
    if not isinstance(value, cst.Integer):
        return None
    number = int(value.value, 0)
    return -number if negative else number


def _builtin_sum(sem, node: cst.CSTNode) -> bool:
    """`sum(xs)` or `sum(xs, start)` of Python's builtin (no binding of `sum` in the file)."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "sum" \
        and not sem.defs(node.func) and bool(node.args) and node.args[0].keyword is None \
        and not node.args[0].star


def _compares_elements(read) -> bool:
    """`max(xs)`, `min(xs)`, `sorted(xs)`: one operand, whose elements are compared."""
    call = read.node
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) \
        and call.func.value in COMPARING and read.operand is not None \
        and len([a for a in call.args if a.keyword is None and not a.star]) == 1


def _empty_list(value) -> bool:
    if isinstance(value, cst.List):
        return not value.elements
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
        and value.func.value == "list" and not value.args


def _last_name(func: cst.BaseExpression) -> Optional[str]:
    if type(func) is cst.Name:
        return func.value
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return None


def _called(call: cst.Call) -> str:
    from devicelint.names import dotted_name

    return dotted_name(call.func) or _last_name(call.func) or "helper"


def _statement(ctx, node: cst.CSTNode) -> cst.CSTNode:
    """The statement `node` belongs to (a simple statement, or a compound statement's header)."""
    current = node
    while current is not None:
        if isinstance(current, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
            return current
        current = ctx.parent(current)
    return node
