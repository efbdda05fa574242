from __future__ import annotations

import libcst as cst

from devicelint.rule import Rule
from devicelint.runtime_spec import Find, LineRecord, ProbeRun, RuntimeSpec, Watch

EMPTY_CACHE = {"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"}


class EmptyCacheInLoop(Rule):
    """## What it does
    Flags `torch.cuda.empty_cache()` that runs on every step of a training or inference
    loop. A loop runs once per step when its body trains (`.backward()`, `.step()` on an
    optimizer or GradScaler), calls a module, or walks a DataLoader, whatever its
    variables are called; a loop whose every iteration runs such a loop is an epoch loop,
    and a call in its body outside the inner loop runs once per epoch (silent).

    Stays silent on a call after the loop (once after training), in an `except` handler
    (the out-of-memory recovery idiom), under a throttle whose body does not train
    (`if step % 100 == 0:`, a flag), in loops over models, layers or experiments whose
    body does not itself run a step, and in branches that run only without a GPU.

    ## Why is this bad?
    PyTorch's caching allocator keeps freed GPU blocks to reuse them on the next step.
    `empty_cache()` hands all unused cached blocks back to the driver, so the next step
    pays `cudaMalloc`/`cudaFree` again (each can take milliseconds and synchronises the
    device), and it does not give the program more memory: tensors still referenced stay
    allocated. The seed tutorial (seed 001 §7.7 item 4) itself notes memory "is generally
    managed automatically by PyTorch". The cost depends on the model; `devicelint confirm`
    can measure it on your GPU.

    ## Example
    ```python
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
    ```

    ## Use instead
    ```python
    for x, y in loader:
        loss = loss_fn(model(x.to(device)), y.to(device))
        loss.backward()
        optimizer.step()
    torch.cuda.empty_cache()  # once, e.g. before evaluation or another experiment
    ```
    To fight fragmentation, try `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`.
    """

    code = "DL011"
    name = "empty-cache-in-loop"
    summary = "`torch.cuda.empty_cache()` every step defeats the caching allocator"
    message = "`torch.cuda.empty_cache()` on every step of a loop"
    hint = "call it once outside the loop (or in an OOM handler)"
    tokens = ("empty_cache",)

    @staticmethod
    def gate(facts) -> bool:
        """`torch.cuda.empty_cache` (its name is in the imports or the code) in a step loop
        (a for/while loop) (devicelint/gate.py)."""
        return facts.has_step_loop and facts.mentions("empty_cache")

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in EMPTY_CACHE:
            return
        sem = self.ctx.semantic
        if sem.qualname(node.func) not in EMPTY_CACHE:
            return  # the import is shadowed
        loop = sem.loops.step_loop(node)
        if loop is None or not sem.on_gpu_path(node) or self._in_handler(node, loop):
            return
        self.report(node)

    def _in_handler(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """In an `except` clause between the loop and the call: out-of-memory recovery."""
        current = self.ctx.parent(node)
        while current is not None and current is not loop:
            if isinstance(current, (cst.ExceptHandler, cst.ExceptStarHandler)):
                return True
            current = self.ctx.parent(current)
        return False

    # -- devicelint confirm. Not whole_file: the runtime counts empty_cache calls but cannot
    # tell a step loop from an epoch loop or a sweep, which is all the rule's distinction is.
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        calls = rec.empty_cache
        if calls.count < 2:
            return run.base("refuted", f"empty_cache ran {calls.count} time(s): not per step",
                            count=calls.count)
        if run.estimated:
            measured = calls.count * run.table["empty_cache_us"] / 1000
        else:
            measured = calls.seconds * 1000
        return run.base("confirmed", f"empty_cache ran {calls.count} times, {measured:.3f} ms; "
                        "the allocator then had to cudaMalloc its blocks again",
                        count=calls.count, measured_ms=round(measured, 4), counterfactual_ms=0.0)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.EMPTY_CACHE,), finds=(Find.EMPTY_CACHE,))
