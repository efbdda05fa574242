"""Does swapping libcst node classes' __init__ on every parse (libcst_core.QuickInits) slow
later attribute access once the classes have been modified many times (type version tags), as
it could in a long-lived process such as the language server? Prints the time of a parse and a
full visit of one file, best of 5, after more and more swaps, as a ratio of the first.

    python bench/quick_inits_wear.py devicelint/semantic/model.py
"""
import sys
import timeit

import libcst as cst

from devicelint import libcst_core

src = open(sys.argv[1], encoding="utf-8").read()


class Count(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes = 0

    def on_visit(self, node) -> bool:
        self.nodes += 1
        return True


def work() -> int:
    counter = Count()
    cst.parse_module(src).visit(counter)
    return counter.nodes


def best(repeat: int = 5) -> float:
    return min(timeit.repeat(work, number=1, repeat=repeat))


quick = libcst_core.QuickInits()
print(sys.version.split()[0], "classes swapped:", len(quick.swaps))
before = best()
for n in (500, 1500, 5000):
    for _ in range(n):
        quick.install()
        quick.remove()
    now = best()
    print(f"after {n} more swaps: parse+visit {now:.4f} s vs {before:.4f} s before (x{now / before:.2f})")
