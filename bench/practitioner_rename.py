"""Renaming check on the practitioner corpus: which findings rest on identifier names?

    .venv/bin/python bench/practitioner_rename.py [--devicelint PATH] [--repo NAME ...]

Copies every materialised repo of bench/practitioner.py to a temporary directory, renaming in
each file every identifier the file binds itself (assignment, loop, `with`/`except` targets,
comprehension variables, function and class names, parameters, `global`/`nonlocal` names) to
`v0`, `v1`, ... consistently within the file. Imports, attributes and keyword-argument names are
left alone, so `model = Net().to(device)` becomes `v3 = v1().to(v2)` and `optimizer.step()`
becomes `v7.step()`: the code does the same thing. Line numbers do not change, so findings are
compared on (repo, path, line, code) before and after, and the labelled true positives of
bench/practitioner_labels.tsv that disappear are listed. Notebooks are renamed cell by cell with
the names bound anywhere in the notebook; a cell that does not parse is left as it is.

Uses libcst (a devicelint dependency), so run it with the project's venv. It only reads the
corpus; nothing under bench/.corpora is changed.
"""

from __future__ import annotations

import argparse
import builtins
import collections
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import libcst as cst

sys.path.insert(0, str(Path(__file__).resolve().parent))
import practitioner  # noqa: E402

KEEP = set(dir(builtins)) | {"self", "cls", "__name__", "__file__", "__all__"}


class Bindings(cst.CSTVisitor):
    """Names a module binds itself (not through imports)."""

    def __init__(self) -> None:
        self.bound: set[str] = set()
        self.imported: set[str] = set()

    def _targets(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.Name):
            self.bound.add(node.value)
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._targets(element.value)
        elif isinstance(node, cst.StarredElement):
            self._targets(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._targets(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._targets(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._targets(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._targets(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        # `with ... as x`, `except E as x`; import aliases are collected as imports below.
        self._targets(node.name)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.bound.add(node.name.value)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.bound.add(node.name.value)

    def visit_Param(self, node: cst.Param) -> None:
        self.bound.add(node.name.value)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.bound.add(item.name.value)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.bound.add(item.name.value)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = alias.asname.name if alias.asname else alias.name
            while isinstance(name, cst.Attribute):
                name = name.value
            if isinstance(name, cst.Name):
                self.imported.add(name.value)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.asname.name if alias.asname else alias.name
            if isinstance(name, cst.Name):
                self.imported.add(name.value)


class Rename(cst.CSTTransformer):
    """Renames Name nodes in the mapping, except attribute names and keyword-argument names."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping
        self.protected: set[int] = set()

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.protected.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.protected.add(id(node.keyword))

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        if id(original) in self.protected:
            return updated
        new = self.mapping.get(original.value)
        return updated.with_changes(value=new) if new else updated


def mapping_for(sources: list[str]) -> dict[str, str]:
    visitor = Bindings()
    for source in sources:
        try:
            cst.parse_module(source).visit(visitor)
        except Exception:  # a cell or file that does not parse binds nothing we can see
            continue
    names = sorted(visitor.bound - visitor.imported - KEEP)
    return {name: f"v{i}" for i, name in enumerate(names)}


def rename_source(source: str, mapping: dict[str, str]) -> str:
    try:
        return cst.parse_module(source).visit(Rename(mapping)).code
    except Exception:
        return source


def rename_file(src: Path, dst: Path) -> None:
    if src.suffix == ".ipynb":
        notebook = json.loads(src.read_text(encoding="utf-8"))
        cells = [c for c in notebook.get("cells", []) if c.get("cell_type") == "code"]
        texts = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]
        mapping = mapping_for(texts)
        for cell, text in zip(cells, texts):
            cell["source"] = rename_source(text, mapping).splitlines(keepends=True)
        dst.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
        return
    text = src.read_text(encoding="utf-8", errors="replace")
    dst.write_text(rename_source(text, mapping_for([text])), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", action="append")
    parser.add_argument("--devicelint", default=shutil.which("devicelint") or "devicelint")
    parser.add_argument("--labels", type=Path, default=practitioner.LABELS)
    args = parser.parse_args(argv)
    repos = [practitioner.BY_NAME[n] for n in args.repo] if args.repo else list(practitioner.REPOS)
    practitioner.ensure(repos)
    labels = practitioner.read_labels(args.labels) if args.labels.exists() else []

    before: set[tuple[str, str, str, str]] = set()
    after: set[tuple[str, str, str, str]] = set()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for repo in repos:
            for finding in practitioner.lint(repo, args.devicelint, None):
                before.add(practitioner.finding_key(repo, finding))
            base = practitioner.ROOT / repo.name
            for file in practitioner.corpus_files(repo):
                dst = root / repo.name / file.relative_to(base)
                dst.parent.mkdir(parents=True, exist_ok=True)
                rename_file(file, dst)
            (root / repo.name / ".complete").write_text(repo.commit)
        saved_root = practitioner.ROOT
        practitioner.ROOT = root
        try:
            for repo in repos:
                for finding in practitioner.lint(repo, args.devicelint, None):
                    after.add(practitioner.finding_key(repo, finding))
        finally:
            practitioner.ROOT = saved_root

    per_rule: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for key in before:
        per_rule[key[3]]["before"] += 1
        per_rule[key[3]]["kept" if key in after else "lost"] += 1
    for key in after - before:
        per_rule[key[3]]["new"] += 1
    print("rule\tbefore\tkept\tlost\tnew")
    for code in sorted(per_rule):
        r = per_rule[code]
        print(f"{code}\t{r['before']}\t{r['kept']}\t{r['lost']}\t{r['new']}")
    print(f"ALL\t{len(before)}\t{len(before & after)}\t{len(before - after)}\t{len(after - before)}")

    # Labelled true positives (and found misses) whose every finding disappears after renaming.
    names = {r.name for r in repos}
    lost = []
    for label in labels:
        if label.repo not in names or label.verdict == "FP":
            continue
        span = practitioner.line_span(label.line)
        def hits(keys: set) -> bool:
            for repo, path, line, code in keys:
                if (repo, path) != (label.repo, label.path) or code not in label.codes:
                    continue
                s = practitioner.line_span(line)
                if s and span and s[0] == span[0] and span[1] <= s[1] <= span[2]:
                    return True
            return False
        if hits(before) and not hits(after):
            lost.append(label)
    print(f"\nlabelled real cases found before renaming that disappear after it: {len(lost)}")
    by_rule = collections.Counter(l.rule for l in lost)
    if by_rule:
        print("  by rule: " + ", ".join(f"{c} {n}" for c, n in sorted(by_rule.items())))
    for label in lost:
        print(f"  {label.repo}\t{label.path}\t{label.line}\t{'|'.join(label.codes)}\t{label.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
