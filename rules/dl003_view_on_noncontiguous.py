from __future__ import annotations

from dataclasses import asdict

import libcst as cst

from devicelint.gate import WITH_ARGS, api_names
from devicelint.rule import Rule
from devicelint.semantic import Kind
from devicelint.semantic.shapes import FAILS, MAYBE, OK, view_outcome, view_shape
from devicelint.semantic.values import LAYOUT_PERMUTED
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch


class ViewOnNoncontiguous(Rule):
    """## What it does
    Flags `.view(...)` on a tensor that came from `.transpose`, `.permute`, `.t()`, `.T`,
    `.mT`, `.swapaxes`, `.movedim`, `.expand` or `.narrow` (or a step slice such as
    `x[:, ::2]`) with no `.contiguous()` in between, directly chained or through a local
    variable of the same function. Elementwise results (`eq`, `+`, `*`, comparisons) keep
    their first operand's transposed layout, as PyTorch lays them out, and so does a slice of
    the leading dimension: the ImageNet `accuracy()` helper's
    `correct = pred.t().eq(...)` then `correct[:k].view(-1)` raises for `k > 1`.

    The shapes decide whether the view fails, so the rule reasons about them where the
    code shows them: a view that merges dimensions the transpose separated
    (`y.transpose(1, 2).view(B, T, H * D)`, `.view(B, -1)`, `.view(-1)`) is reported as
    failing; a view that only splits a dimension or keeps the permuted shape
    (`q.view(B, T, H, D).transpose(1, 2).view(B, H, T, D // 2, 2)`) is not reported; a
    permute of a tensor that was itself permuted upstream (which may restore the layout)
    is not reported. Sizes the code spells as symbols count as products of their factors:
    after `transpose(1, 2)`, `view(n, h * w, h, w)` keeps dims 0-1 and only splits the last,
    which PyTorch allows (not reported), while `view(n, h, w * c)` merges `w` with `c`, which
    the transpose put apart (reported); dims of size 1 do not count. After a transpose or
    permute, a view whose shapes do not tell (the rank is unknown, a size is not a product
    of the others, `transposed_param.view(1, -1)` of a tensor the code does not show) is not
    reported. After `expand`, `narrow`, a step slice or a split the message says the view
    *may* fail when the shapes cannot be decided. Sizes passed through a starred argument (`view(B, C, *size)`) hide how many
    dimensions the view has, so a merge cannot be told from a split there: such a view is
    reported only when a size it shows is a product (`view(B * T, *size)`).

    ## Why is this bad?
    `view` never copies: it needs the requested shape to be expressible with the input's
    strides. After a transpose the memory order no longer matches the dimension order,
    and merging the swapped dimensions raises `RuntimeError: view size is not compatible
    with input tensor's size and stride (at least one dimension spans across two
    contiguous subspaces). Use .reshape(...) instead.` (same message on CPU and CUDA).
    Whether it raises depends on the sizes: `x.transpose(1, 2).view(B, T, H * D)` passes
    when T == 1 (a decode step, a unit test with one token) and crashes when T > 1, so
    the bug tends to surface late, in production shapes.

    ## Example
    ```python
    y = att @ v                                   # (B, H, T, D)
    y = y.transpose(1, 2).view(B, T, H * D)       # fails for T > 1
    ```

    ## Use instead
    ```python
    y = y.transpose(1, 2).reshape(B, T, H * D)    # copies only when it must
    # or, to make the copy explicit:
    y = y.transpose(1, 2).contiguous().view(B, T, H * D)
    ```

    ## Fix safety
    The fix renames `.view` to `.reshape`. `reshape` returns exactly the same view
    whenever `view` would have succeeded and copies only where `view` would have raised,
    so it never changes a run that worked. It is safe when the rule has shown that the
    view merges dimensions the transpose separated (the original code raises for every
    shape where those dimensions are larger than 1). Where the rule could not decide
    ("may fail"), the fix is unsafe: code that writes into the view's result expecting to
    modify the original tensor would silently write into a copy instead of raising.
    `.view(dtype)` reinterpretations are never reported.
    """

    code = "DL003"
    name = "view-on-noncontiguous"
    summary = "`.view()` on a transposed/permuted (non-contiguous) tensor"
    message = "`.view(...)` merges dimensions that `{label}` separated"
    hint = "use `.reshape(...)` or `.contiguous().view(...)`"
    maybe_message = "`.view(...)` after `{label}` may fail, depending on the shapes"
    tokens = (".view(",)

    @staticmethod
    def gate(facts) -> bool:
        """Reported at a `.view(...)` call with arguments on a tensor whose layout is known
        not contiguous: something in the file transposes, permutes, expands or narrows
        (the API table's layouts, `.T`/`.mT`/`.H`/`.mH`, a step slice) (devicelint/gate.py)."""
        if not facts.calls_method(("view",), WITH_ARGS):
            return False
        changes = api_names(layouts=("transpose", "permute", "expand", "narrow")) | {"T", "mT", "H", "mH"}
        if not facts.has_step_slice and not facts.mentions(*changes):
            return False
        return facts.views_strided()
    fixable = True

    def leave_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is not cst.Attribute or func.attr.value != "view" or not node.args:
            return
        sem = self.ctx.semantic
        receiver = sem.value(func.value)
        if receiver.kind is not Kind.TENSOR or receiver.layout.contiguous:
            return
        if len(node.args) == 1 and not node.args[0].star:
            argument = sem.value(node.args[0].value)
            if argument.kind in (Kind.DTYPE, Kind.STRING):
                return  # `.view(torch.int8)`: a dtype reinterpretation, no shape involved
        outcome = view_outcome(receiver, view_shape(node, sem))
        if outcome == OK or outcome == MAYBE and receiver.layout.state == LAYOUT_PERMUTED:
            return  # a transposed tensor's sizes that do not tell: not ours to judge
        certain = outcome == FAILS
        label = receiver.layout.label or "a transpose"
        text = (self.message if certain else self.maybe_message).format(label=label)
        self.report(
            node, text,
            replacement=cst.Name("reshape"), replace=func.attr,
            safe=certain, fix_description="Use `.reshape(...)`",
        )

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        views = rec.views
        failed = [s for s in views.samples if s.failed]
        shapes = [asdict(s) for s in views.samples[:5]]
        if failed:
            sample = failed[0]
            message = next((e.message for e in rec.errors if "view size" in e.message),
                           "view size is not compatible with input tensor's size and stride")
            return run.base("confirmed", f".view{tuple(sample.target)} on size {sample.size} "
                            f"stride {sample.stride} raised: {message}", count=views.failed,
                            error=message, shapes=[asdict(s) for s in failed[:5]])
        if not views.count:
            return run.base("inconclusive", "the line ran but no Tensor.view call was seen on it")
        for sample in views.samples:
            latent = run.latent_view_failure(sample)
            if latent is not None:
                return run.base(
                    "confirmed",
                    f"latent: .view{tuple(sample.target)} passed on size {sample.size} only "
                    f"because a dim has size 1; with size {latent['size']} it raises: "
                    f"{latent['error']}",
                    count=views.count, latent=latent, shapes=shapes)
        return run.base("refuted", f"the view succeeded for every shape seen ({views.count} "
                        "calls) and no size-1 dim hides a failure", count=views.count,
                        shapes=shapes)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.VIEWS,), whole_file=True)
