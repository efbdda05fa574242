from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.analysis import (
    CPU,
    call_arg,
    device_kind,
    is_device_kind,
    keyword_arg,
    method_name,
    to_call_device,
)
from devicelint.builders import reindent
from devicelint.rule import Rule
from devicelint.runtime_spec import LineRecord, ProbeContext, RuntimeSpec, Watch

# Factories that fill a new tensor themselves (so `device=` makes the fill happen there).
DETERMINISTIC = {
    f"torch.{name}"
    for name in ("zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye")
}
RANDOM = {f"torch.{name}" for name in ("rand", "randn", "randint", "randperm")}
FACTORIES = DETERMINISTIC | RANDOM
# `.to()` keywords the fix may drop: a fresh device fill has no host copy to overlap.
DROPPABLE = {"non_blocking"}
NO_SPACE = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))


class CreateThenMove(Rule):
    """## What it does
    Flags a tensor factory (`torch.zeros`, `ones`, `empty`, `full`, `arange`, `linspace`,
    `logspace`, `eye`, `rand`, `randn`, `randint`, `randperm`) called without `device=`
    and immediately moved with `.to(device)` or `.cuda()`: `torch.zeros(n, d).to(dev)`.

    ## Why is this bad?
    The tensor is first allocated and filled by the CPU, then copied over PCIe, then the
    CPU copy is thrown away. With `device=` the accelerator allocates and fills it in one
    kernel and the host does nothing. Measured on an H200 (torch 2.11): a 4096x4096
    `zeros` took 16.7 ms via the CPU vs 17 us with `device=` (~960x), `randn` 133 ms vs
    44 us, `arange(10**6)` 913 us vs 14 us; even a 64-element `zeros` costs 17 us vs 12 us.

    `torch.tensor(data).to(dev)` and `torch.as_tensor(data).to(dev)` are deliberately not
    flagged: the data lives in host memory either way, and `torch.tensor(data,
    device=dev)` itself builds the tensor on the CPU and copies it; measured on the same
    H200 both spellings cost the same (31 vs 32 us for 64 floats, 18.7 vs 18.9 ms for
    100,000). Moves to the CPU, dtype-only `.to(torch.float16)`, `.to(other_tensor)` and
    factories that already pass `device=` are not flagged.

    ## Example
    ```python
    mask = torch.ones(seq_len, seq_len).to(device)
    noise = torch.randn(batch, dim).cuda()
    ```

    ## Use instead
    ```python
    mask = torch.ones(seq_len, seq_len, device=device)
    noise = torch.randn(batch, dim, device="cuda")
    ```

    ## Fix safety
    The fix moves the target into the factory: `.to(dev)` becomes `device=dev`, `.cuda()`
    becomes `device="cuda"` and `.cuda(1)` `device="cuda:1"`. `non_blocking=True` is
    dropped: a fill on the device has no host copy to overlap, and the new tensor is
    ready in stream order either way. The fix is safe for the deterministic factories when
    `.to` only names a device. It is unsafe when:
    - the factory is random (`rand`, `randn`, `randint`, `randperm`): the values then come
      from the device's generator instead of the CPU's, so seeded runs produce different
      numbers (with `generator=` there is no fix: a CPU generator cannot drive a device
      fill);
    - `.to` also converts the dtype (`.to(dev, torch.float16)`), which then happens in the
      factory and can round differently;
    - the factory passes `requires_grad=True`: the moved tensor is a non-leaf whose `.grad`
      stays None, and the fix makes it a leaf (usually what was meant, but a change);
    - `.cuda(x)` names a device through a variable.
    There is no fix with `copy=`/`memory_format=`, `pin_memory=` or `out=` arguments.
    """

    code = "DL007"
    name = "create-then-move"
    summary = "Tensor created on the CPU and then moved: pass `device=` to the factory"
    message = (
        "`{factory}(...)` fills a CPU tensor that is then copied to the device; pass "
        "`device=` to create it there (measured on an H200: a 4096x4096 `zeros` 16.7 ms "
        "this way vs 17 us with `device=`)"
    )
    tokens = (".to(", ".cuda(")
    fixable = True

    def leave_Call(self, node: cst.Call) -> None:
        # On leaving, the arguments have been visited: their scope and bindings resolve.
        method = method_name(node)
        if method not in ("to", "cuda"):
            return
        factory_call = node.func.value  # type: ignore[union-attr]
        if not isinstance(factory_call, cst.Call):
            return
        factory = self.ctx.qualname(factory_call.func)
        if factory not in FACTORIES:
            return
        if keyword_arg(factory_call, "device") is not None or keyword_arg(factory_call, "out"):
            return
        if any(arg.star == "**" for arg in factory_call.args):
            return  # the device may be among the keyword arguments
        if any(arg.star for arg in node.args):
            return
        if not is_device_kind(to_call_device(self.ctx, node)):
            return
        message = self.message.format(factory=factory)
        fix = self._fix(node, factory_call, factory, method)
        if fix is None:
            self.report(node, message)
        else:
            replacement, safe = fix
            self.report(
                node, message, replacement=reindent(self.ctx, node, replacement), safe=safe,
                fix_description="Create the tensor on the device with `device=`",
            )

    def _fix(
        self, node: cst.Call, factory_call: cst.Call, factory: str, method: str
    ) -> Optional[tuple[cst.Call, bool]]:
        safe = True
        for arg in factory_call.args:
            if arg.keyword is not None and arg.keyword.value in ("pin_memory", "generator"):
                return None
        requires_grad = keyword_arg(factory_call, "requires_grad")
        if requires_grad is not None and not (
            isinstance(requires_grad, cst.Name) and requires_grad.value == "False"
        ):
            safe = False
        if factory in RANDOM:
            safe = False
        extra: list[cst.Arg] = []
        if method == "cuda":
            target = call_arg(node, 0, "device")
            others = [a for a in node.args if a.value is not target]
            if any(a.keyword is None or a.keyword.value not in DROPPABLE for a in others):
                return None
            if target is None:
                device: cst.BaseExpression = cst.SimpleString('"cuda"')
            elif isinstance(target, cst.Integer):
                device = cst.SimpleString(f'"cuda:{target.value}"')
            else:
                device, safe = target, False
        else:
            device_arg = keyword_arg(node, "device")
            positional = [a for a in node.args if a.keyword is None]
            dtype = keyword_arg(node, "dtype")
            if device_arg is None:
                device_arg = positional[0].value if positional else None
                positional = positional[1:]
            if device_arg is None or device_kind(self.ctx, device_arg) == CPU:
                return None
            if positional:
                if len(positional) > 1 or dtype is not None:
                    return None
                dtype = positional[0].value
            for arg in node.args:
                if arg.keyword is not None and arg.keyword.value not in (
                    "device", "dtype", *DROPPABLE
                ):
                    return None
            device = device_arg
            if dtype is not None:
                if keyword_arg(factory_call, "dtype") is not None:
                    return None
                safe = False
                extra.append(cst.Arg(keyword=cst.Name("dtype"), value=dtype, equal=NO_SPACE))
        args = list(factory_call.args)
        new = [cst.Arg(keyword=cst.Name("device"), value=device, equal=NO_SPACE)] + extra
        if args and isinstance(args[-1].comma, cst.Comma):
            # `torch.zeros(\n    n,\n)`: lay the new arguments out like the others and
            # keep the author's trailing comma at the very end.
            last = args[-1]
            if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma):
                separator = args[-2].comma
            elif isinstance(factory_call.whitespace_before_args, cst.ParenthesizedWhitespace):
                separator = cst.Comma(
                    whitespace_after=factory_call.whitespace_before_args.with_changes(
                        first_line=cst.TrailingWhitespace(), empty_lines=()
                    )
                )
            else:
                separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            args[-1] = last.with_changes(comma=separator)
            new = [a.with_changes(comma=separator) for a in new[:-1]] + [
                new[-1].with_changes(comma=last.comma)
            ]
        replacement = factory_call.with_changes(
            args=args + new, lpar=node.lpar, rpar=node.rpar
        )
        return replacement, safe

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(ctx: ProbeContext, rec: LineRecord) -> dict:
        copies = rec.copies.get("h2d")
        if copies is None:
            return ctx.base("refuted", "the line ran but made no host-to-device copy", count=0)
        count, nbytes = copies.count, copies.bytes
        measured = ctx.copy_ms(copies, "h2d")
        fill = ctx.time_fill(nbytes // count) * count
        return ctx.base("confirmed", f"{count} CPU-built tensor(s) copied to the GPU, "
                        f"{nbytes:,} B, {measured:.3f} ms; built on the device: {fill:.3f} ms",
                        count=count, bytes=nbytes, measured_ms=round(measured, 4),
                        counterfactual_ms=round(fill, 4))

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES, Watch.FACTORIES))
