"""Order probe: does the semantic model's answer depend on which question was asked first?

For each file (a .py, or a notebook's code cells), two models of the same tree are asked the
same questions: every expression's value (names, attributes, calls, subscripts, binary
operations), every call's `on_gpu_path` and step loop, every `if`'s truth with a GPU; one in
source order, the other in reverse order. Any answer that differs is an order-dependent memo
(a memo keyed on less than its answer depends on, or a provisional answer kept). Rules see
such a difference only where it reaches a finding (bench/rule_isolation.py compares findings);
this shows it at its source. No project index (each file alone).

    python bench/order_probe.py fixtures                  # every file under fixtures/
    python bench/order_probe.py bench/.corpora/practitioner/nanoGPT --show 3

Prints each differing answer (`--show` per file) and the totals; exit status 1 when any.
"""

from __future__ import annotations

import argparse
import os
import sys

import libcst as cst

from devicelint import notebook, safe_parse
from devicelint.context import FileContext

TYPES = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BinaryOperation)


def signature(value, depth: int = 0):
    if value is None or depth > 4:
        return None
    layout = value.layout
    return (value.kind, value.place, value.pinned, value.shape, layout.state, layout.perm, layout.strides,
            value.origin, value.cls if isinstance(value.cls, str) else None, value.hint, repr(value.literal)[:40],
            value.collated, signature(value.element, depth + 1),
            tuple(signature(v, depth + 1) for v in value.items) if value.items is not None else None)


def answers(ctx: FileContext, nodes: list, reverse: bool) -> dict:
    sem = ctx.semantic
    out = {}
    for index in (range(len(nodes) - 1, -1, -1) if reverse else range(len(nodes))):
        node = nodes[index]
        try:
            if isinstance(node, TYPES):
                out[(index, "value")] = signature(sem.value(node))
            if isinstance(node, cst.Call):
                out[(index, "gpu path")] = sem.on_gpu_path(node)
                out[(index, "step loop")] = sem.loops.step_loop(node) is not None
            if isinstance(node, (cst.If, cst.IfExp)):
                out[(index, "truth")] = sem.gpu_truth(node.test)
        except RecursionError:
            out[(index, "error")] = "recursion"
    return out


def probe(path: str, show: int) -> int:
    data = open(path, "rb").read()
    try:
        source = notebook.load(data).source if path.endswith(".ipynb") else data.decode("utf-8-sig")
        if "torch" not in source:
            return 0
        module = safe_parse.parse_module(source)
    except Exception:  # noqa: BLE001 - not a file the model reads
        return 0
    contexts = []
    for _ in range(2):
        ctx = FileContext(path, source, module)
        ctx.walk({}, {})
        contexts.append(ctx)
    nodes = [n for n in contexts[0]._nodes if isinstance(n, TYPES + (cst.If, cst.IfExp))]
    forward = answers(contexts[0], nodes, reverse=False)
    backward = answers(contexts[1], nodes, reverse=True)
    differ = [key for key in forward if forward[key] != backward.get(key)]
    for index, what in differ[:show]:
        node = nodes[index]
        code = " ".join(contexts[0].code(node).split())[:70]
        print(f"{path}:{contexts[0].position(node)[0]}: {what} of `{code}`\n"
              f"    in source order:  {forward[(index, what)]}\n    in reverse order: {backward.get((index, what))}")
    if differ:
        print(f"== {path}: {len(differ)} differing answers")
    return len(differ)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--show", type=int, default=3)
    args = parser.parse_args()
    files = []
    for root in args.paths:
        if os.path.isfile(root):
            files.append(root)
            continue
        for folder, _dirs, names in os.walk(root):
            files += [os.path.join(folder, n) for n in names if n.endswith((".py", ".ipynb"))]
    total = bad = 0
    for path in sorted(files):
        found = probe(path, args.show)
        total += found
        bad += bool(found)
    print(f"{total} differing answers in {bad} of {len(files)} files")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
