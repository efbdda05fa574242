"""Snippet mode (`devicelint confirm --snippets PATHS`): for each finding, a small standalone
reproduction built from the code around it, so that a finding can be confirmed without the
program's data, its command line or hours of training. Torch-free: this only writes scripts;
the sandbox (launch.py, child.py) runs them.

A reproduction is a backward slice: the flagged statement, the statements of its function
(and of the module) that produce the values it uses, the loops and `with` blocks around it
(the `if`/`try` arms that hold it are taken unconditionally), and the classes and functions
of the file it calls. What comes from outside is synthesized from the semantic model's facts
(devicelint/semantic/): a parameter, or a binding computed from data the run does not have
(a file, a dataset on disk), becomes a tensor of the known rank and place, a module of the
file's class built with the literal arguments the code passes, a list of a few synthetic
batches for a loader. Where a parameter cannot be synthesized, the reproduction starts from
a call site of the function in the file instead (the caller's slice, the function whole).
Where neither works, the finding is `inconclusive: cannot synthesize X`, never a guess.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from devicelint.context import FileContext
from devicelint.names import dotted_name
from devicelint.runtime.slicer import (
    Slicer, binds, block_of, blocks_of, import_names, is_compound, names_in, pass_statement,
    reads, walk,
)
from devicelint.semantic.values import Kind, Place, Value

DEFAULT_SIZE = 4      # a dimension the code does not show: > 1, so merged dims show their layout
DEFAULT_BATCHES = 3   # synthetic batches standing for a loader
CALLER_DEPTH = 3      # how far up the file's call sites a reproduction may start
MARK = "devicelint: flagged"

# Calls that read what a reproduction does not have (files, datasets on disk, the network):
# a binding computed from them is synthesized, or the finding says it cannot be.
OUTSIDE_CALLS = frozenset({
    "open", "input", "numpy.load", "numpy.loadtxt", "numpy.genfromtxt", "numpy.fromfile",
    "numpy.memmap", "torch.load", "torch.hub.load", "json.load", "pickle.load", "h5py.File",
    "scipy.io.loadmat", "cv2.imread", "imageio.imread", "PIL.Image.open", "joblib.load",
    "datasets.load_dataset", "torchvision.io.read_image", "pandas.read_csv",
    "pandas.read_parquet", "pandas.read_json", "pandas.read_pickle", "pandas.read_table",
    "pandas.read_excel", "pandas.read_hdf", "pandas.read_feather",
})
OUTSIDE_PREFIXES = ("torchvision.datasets.", "torchtext.datasets.", "tensorflow_datasets.")


class CannotSynthesize(Exception):
    """What a reproduction would need and the facts do not give (the finding's reason)."""


@dataclass
class Synthesized:
    name: str
    code: str          # the Python expression that builds it
    what: str          # e.g. "tensor (4, 16) on cuda, float32"


@dataclass
class Reproduction:
    finding: object
    script: Optional[str] = None
    line: int = 0                 # the flagged line in the script
    end_line: int = 0
    synthesized: list[Synthesized] = field(default_factory=list)
    reason: Optional[str] = None  # why none could be built: "cannot synthesize X"
    entry: str = ""               # what the script calls: "by_index(scale)", "the module"
    watched: list = field(default_factory=list)  # [(line, end_line, code)]: other flagged lines


@dataclass
class Options:
    sizes: dict[str, object] = field(default_factory=dict)   # NAME -> int or tuple of ints
    import_user_code: bool = False
    batches: int = DEFAULT_BATCHES

    def dim(self, name) -> int:
        if isinstance(name, int) and name > 0:
            return name
        if isinstance(name, str):
            size = self.sizes.get(name)
            if isinstance(size, int):
                return size
        size = self.sizes.get("default")
        return size if isinstance(size, int) else DEFAULT_SIZE


def parse_sizes(entries) -> dict[str, object]:
    """`B=32`, `x=64,128` (a synthesized value's whole shape), `default=8`, `batches=2`;
    ValueError on anything else."""
    sizes: dict[str, object] = {}
    for entry in entries:
        name, sep, text = str(entry).partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ValueError(f"{entry!r}: expected NAME=N or NAME=N,M,...")
        try:
            numbers = tuple(int(part) for part in text.split(","))
        except ValueError:
            raise ValueError(f"{entry!r}: sizes are integers") from None
        if not numbers or any(n < 1 for n in numbers):
            raise ValueError(f"{entry!r}: sizes are integers >= 1")
        sizes[name] = numbers[0] if len(numbers) == 1 else numbers
    return sizes


# -- building one file's reproductions ------------------------------------------------------

class FileReproductions:
    """The reproductions of one file's findings (one parse and one semantic model)."""

    def __init__(self, path: str, source: str, options: Options) -> None:
        from devicelint import safe_parse

        self.path = path
        self.options = options
        self.module = safe_parse.parse_module(source)
        self.ctx = FileContext(path, source, self.module)
        self.ctx.walk({}, {})
        self.sem = self.ctx.semantic
        self._statements: Optional[list] = None
        self.flagged: list = []  # (line, end_line, code) of every finding of the file
        self._tainted: Optional[set] = None
        self._outside_defs: Optional[dict] = None
        self._stand_ins: dict = {}
        self._computed: dict = {}

    # where things are
    def statements(self) -> list:
        """Every statement of the file with its position, outermost first."""
        if self._statements is None:
            found = []
            stack = list(reversed(self.module.body))
            while stack:
                node = stack.pop()
                if not isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                    continue
                found.append(node)
                inner = []
                for part in blocks_of(node):
                    inner.extend(block_of(part) if isinstance(part, cst.SimpleStatementSuite)
                                 else part.body)
                stack.extend(reversed(inner))
            self._statements = found
        return self._statements

    def statement_at(self, line: int):
        """The innermost statement whose text holds `line` (a compound statement when the
        line is in its header)."""
        best = None
        for statement in self.statements():
            start, _, end, _ = self.ctx.position(statement)
            if start <= line <= end:
                if isinstance(statement, cst.BaseCompoundStatement) and not isinstance(
                        statement.body, cst.SimpleStatementSuite):
                    body_start = self.ctx.position(statement.body.body[0])[0] \
                        if statement.body.body else end + 1
                    if line >= body_start and not isinstance(statement, (cst.FunctionDef,
                                                                          cst.ClassDef)):
                        best = statement
                        continue
                    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)) and line >= body_start:
                        continue
                best = statement
        return best

    def _function_of(self, node) -> Optional[cst.FunctionDef]:
        return self.ctx.function(node)

    def _contains(self, outer, inner) -> bool:
        node = inner
        while node is not None:
            if node is outer:
                return True
            node = self.ctx.parent(node)
        return False


    def owner(self, function) -> Optional[cst.ClassDef]:
        """The class a method belongs to (not for static methods)."""
        parent = self.ctx.parent(function)
        owner = self.ctx.parent(parent) if parent is not None else None
        if not isinstance(owner, cst.ClassDef):
            return None
        if any(dotted_name(d.decorator) == "staticmethod" for d in function.decorators):
            return None
        return owner

    def instance(self, owner: cst.ClassDef) -> str:
        """`Net(3, 4)`: the class built as the file builds it, with literal arguments (or
        names bound at module level), else with its defaults."""
        module_names = self.ctx.bindings(self.module)
        for call in self.ctx.iter_nodes(cst.Call):
            if dotted_name(call.func) != owner.name.value:
                continue
            if all(_literal(a.value) or (names_in(a.value) and names_in(a.value) <= set(
                    module_names)) for a in call.args):
                return self.ctx.code(call)
        init = _methods(owner).get("__init__")
        required = [p for p in (_params(init)[1:] if init is not None else [])
                    if p.default is None and p.star == ""]
        if required:
            raise CannotSynthesize(
                f"self (an instance of {owner.name.value}: no call in the file builds one "
                f"with literal arguments)")
        return f"{owner.name.value}()"

    def callers(self, function) -> list[cst.Call]:
        """The file's calls of `function`: `f(...)`, `self.f(...)`, `obj.f(...)`; for
        `forward`, calls of a module of its class; for `__init__`, the class's constructions."""
        owner = self.owner(function)
        found = []
        for call in self.ctx.iter_nodes(cst.Call):
            if self._contains(function, call) or self._in_lambda(call):
                continue  # recursion; a lambda's call is not a statement that runs
            try:
                if owner is not None and function.name.value in ("forward", "__init__"):
                    if function.name.value == "__init__":
                        if dotted_name(call.func) == owner.name.value:
                            found.append(call)
                        continue
                    func = call.func
                    if isinstance(func, cst.Call) and dotted_name(func.func) == owner.name.value:
                        found.append(call)
                        continue
                    value = self.sem.value(func)
                    if value.kind is Kind.MODULE and value.cls == owner.name.value:
                        found.append(call)
                    continue
                resolved = self.sem.syncs.callee(call)
                if resolved is not None and resolved[0] is function:
                    found.append(call)
                elif owner is not None and isinstance(call.func, cst.Attribute) \
                        and call.func.attr.value == function.name.value:
                    # `obj.method(...)` on a module of the method's class
                    value = self.sem.value(call.func.value)
                    if value.kind is Kind.MODULE and value.cls == owner.name.value:
                        found.append(call)
            except Exception:  # noqa: BLE001 - an unanswered question is not a caller
                continue
        return found

    def param_value(self, function, param) -> Value:
        """The semantic model's value of a parameter; a tensor whose place it leaves open is
        on the CPU when every call site in the file passes one made by factories alone
        (`torch.rand(2, 3)`: the model keeps factories' place open)."""
        from devicelint.semantic.dataflow import fresh_fill

        value = self.sem.value(param.name)
        if value.kind is not Kind.TENSOR or value.place is not Place.UNKNOWN:
            return value
        passed = []
        for call in self.ctx.iter_nodes(cst.Call):
            try:
                resolved = self.sem.syncs.callee(call)
            except Exception:  # noqa: BLE001 - an unanswered question is not a call site
                resolved = None
            if resolved is not None and resolved[0] is function:
                passed.extend(resolved[1].get(param.name.value, []))
        if passed and all(fresh_fill(self.sem, node) is not None or self._host_literal(node)
                          for node in passed):
            return value.with_(place=Place.CPU)
        return value

    def _host_literal(self, node) -> bool:
        """`torch.tensor([2, 3])`: a tensor of literal values, built where factories build
        (the CPU unless a default device is set)."""
        return isinstance(node, cst.Call) and self._qual(node.func) in (
            "torch.tensor", "torch.as_tensor") and bool(node.args) and _literal(
                node.args[0].value) and self.sem.built_place(node) is Place.CPU

    def _in_lambda(self, node) -> bool:
        current = self.ctx.parent(node)
        while current is not None and not isinstance(
                current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            if isinstance(current, cst.Lambda):
                return True
            current = self.ctx.parent(current)
        return False

    def initialises_cuda(self, statement) -> bool:
        """A statement that starts the CUDA driver (`torch.cuda.is_available()`, ...): the
        device state every later line runs in, kept in a slice as data is."""
        if self.ctx.parent(statement) is None or isinstance(
                statement, (cst.FunctionDef, cst.ClassDef)):
            return False
        wanted = self.sem.api.cuda_initialising | {"torch.cuda.device_count"}
        for sub in walk(_header_or_self(statement) if is_compound(statement) else statement):
            if isinstance(sub, cst.Call) and self._qual(sub.func) in wanted:
                return True
        return False

    def stamps(self, statement) -> bool:
        """Whether a statement reads a clock (`time.perf_counter()`, ...): what it measures
        is the work queued before it, so a slice keeps every statement before it."""
        return any(isinstance(sub, cst.Call) and self._qual(sub.func) in self.sem.api.stamps
                   for sub in walk(statement))

    def statement_of(self, node):
        current = node
        while current is not None and not isinstance(
                current, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            current = self.ctx.parent(current)
        return current

    def check_import(self, statement) -> None:
        """An import of the user's own modules runs their top-level code: only when asked."""
        if isinstance(statement, cst.ImportFrom) and statement.relative:
            raise CannotSynthesize(
                f"{', '.join(sorted(import_names(statement)))} (a relative import: run the "
                f"whole program with `devicelint confirm -- python ...` instead)")
        modules = [dotted_name(statement.module)] if isinstance(statement, cst.ImportFrom) else \
            [dotted_name(alias.name) for alias in statement.names]
        folder = os.path.dirname(os.path.abspath(self.path))
        for module in modules:
            top = (module or "").split(".")[0]
            local = any(os.path.exists(os.path.join(base, top + suffix))
                        for base in (folder, os.getcwd()) for suffix in (".py", ""))
            if local and top and not self.options.import_user_code:
                raise CannotSynthesize(
                    f"{', '.join(sorted(import_names(statement)))} (imported from the user's "
                    f"module {module}: pass --import-user-code to import it in the sandbox)")


    def build(self, finding) -> Reproduction:
        """The reproduction of one finding of this file (its `reason` when none)."""
        repro = Reproduction(finding)
        flagged = self.statement_at(finding.line)
        if flagged is None or isinstance(flagged, (cst.FunctionDef, cst.ClassDef)):
            repro.reason = "cannot synthesize the flagged line (it is not inside a statement " \
                           "that runs)"
            return repro
        builder = _Builder(self)
        try:
            body, needed, entry = builder.start(flagged)
            script, line, watched = self._script(finding, flagged, body, needed,
                                                 builder.synthesized)
        except CannotSynthesize as error:
            repro.reason = f"cannot synthesize {error}"
            return repro
        except (cst.ParserSyntaxError, RecursionError, ValueError) as error:
            repro.reason = f"cannot synthesize a reproduction ({type(error).__name__})"
            return repro
        repro.script, repro.line, repro.watched = script, line, watched
        repro.end_line = line + max(0, finding.end_line - finding.line)
        repro.synthesized = builder.synthesized
        repro.entry = entry
        return repro

    def _script(self, finding, flagged, body, needed, synthesized) -> tuple[str, int, list]:
        """(the script, its flagged line, [(line, end_line, code)] of the file's other
        findings whose statements the slice holds: watched too, as in a whole-file run,
        since a probe may judge one line by what another did)."""
        others = []
        for line, end_line, code in self.flagged:
            if line == finding.line and code == finding.code:
                continue
            statement = self.statement_at(line)
            if statement is not None and not isinstance(statement, (cst.FunctionDef,
                                                                    cst.ClassDef)):
                others.append((statement, line, end_line, code))
        # Where each mark lands relative to its finding's line, from the original text.
        statements = [flagged]
        for other in others:
            if all(other[0] is not s for s in statements):
                statements.append(other[0])
        original = self.module.visit(_Marker(statements)).code
        deltas = {i: _mark_line(original, i) for i in range(len(statements))}
        module = cst.Module(body=body)
        # The flagged statement is in the slice as itself, or rebuilt (a flagged loop header).
        target = _find_same(module, flagged)
        if target is None:
            raise CannotSynthesize("the flagged line (the slice lost it)")
        kept = [target] + statements[1:]
        code = module.visit(_Marker(kept)).code
        prologue = [f'"""devicelint reproduction of {finding.path}:{finding.line} '
                    f'{finding.code} ({finding.name}).', "",
                    "Built by `devicelint confirm --snippets` from the statements of the file "
                    "that produce", "the values the flagged line uses (marked below).",
                    "Run it with `python` on a machine with a GPU to see the pitfall."]
        if synthesized:
            prologue += ["", "Synthesized (the code's data is not available):"]
            prologue += [f"  {s.name}: {s.what}" for s in synthesized]
        prologue += ['"""']
        if self.options.import_user_code:
            folder = os.path.dirname(os.path.abspath(self.path))
            prologue += ["import sys", f"sys.path.insert(0, {folder!r})"]
        if "numpy" in needed:
            prologue.append("import numpy")
        if "torch" in needed:
            prologue.append("import torch")
        text = "\n".join(prologue) + "\n\n" + code
        lines = {}
        for i in range(len(kept)):
            try:
                lines[i] = _mark_line(text, i)
            except CannotSynthesize:
                if i == 0:
                    raise
        watched = []
        for statement, line, end_line, code_ in others:
            index = next(i for i, s in enumerate(statements) if s is statement)
            if index in lines:
                at = lines[index] - (deltas[index] - line)
                watched.append((at, at + max(0, end_line - line), code_))
        main = lines[0] - (deltas[0] - finding.line)
        text = "\n".join(_final_mark(t) for t in text.split("\n"))
        return text, main, watched

    # data the reproduction does not have
    def _qual(self, func) -> Optional[str]:
        qual = self.sem.resolved_qualname(func)
        if qual is None and isinstance(func, cst.Name) and func.value in ("open", "input") \
                and not self.sem.defs(func):
            qual = func.value
        return qual

    def reads_outside(self, node) -> Optional[str]:
        """The code of the first call under `node` that reads data from outside (a file, a
        dataset on disk), directly or through a function or class of the file."""
        for sub in walk(node):
            if isinstance(sub, cst.Call):
                qual = self._qual(sub.func)
                if qual is not None and (qual in OUTSIDE_CALLS or qual.startswith(OUTSIDE_PREFIXES)
                                         or qual.endswith(".from_pretrained")):
                    return self.ctx.code(sub)
                name = dotted_name(sub.func)
                if name in self.outside_defs():
                    return self.ctx.code(sub)
        return None

    def outside_defs(self) -> dict[str, str]:
        """Functions and classes of the module whose body reads data from outside: name ->
        the code of the call that reads."""
        if self._outside_defs is None:
            self._outside_defs = {}
            defs = [s for s in self.module.body if isinstance(s, (cst.FunctionDef, cst.ClassDef))]
            changed = True
            while changed:
                changed = False
                for d in defs:
                    if d.name.value not in self._outside_defs:
                        found = self.reads_outside(d.body)
                        if found:
                            self._outside_defs[d.name.value] = found
                            changed = True
        return self._outside_defs

    def tainted(self, statement) -> bool:
        """Whether a binding statement computes its value from outside data."""
        if self._tainted is None:
            self._tainted = set()
            changed = True
            while changed:
                changed = False
                for s in self.statements():
                    if isinstance(s, (cst.FunctionDef, cst.ClassDef)):
                        continue
                    scope = self.ctx.scope(s)
                    header = s.iter if isinstance(s, cst.For) else (
                        s if isinstance(s, cst.SimpleStatementLine) else None)
                    if header is None:
                        continue
                    if isinstance(s, cst.With):
                        continue
                    if self._source_tainted(header, scope):
                        for name in binds(s):
                            if (id(scope), name) not in self._tainted:
                                self._tainted.add((id(scope), name))
                                changed = True
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            return False
        header = statement.iter if isinstance(statement, cst.For) else statement
        return self._source_tainted(header, self.ctx.scope(statement))

    def stand_in(self, statement):
        """[(name, Synthesized, the code it stands for)] for every name a one-line binding
        binds (`x = ...`, `x, y = f(...)` when the value's parts are known), or None."""
        key = id(statement)
        if key in self._stand_ins:
            return self._stand_ins[key]
        made = None
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            small = statement.body[0]
            if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is not None:
                targets = small.targets if isinstance(small, cst.Assign) else [small]
                value = self.sem.value(small.value)
                code = self.ctx.code(small.value)
                try:
                    made = []
                    for target in targets:
                        made.extend(self._stand_in_target(target.target, value, code))
                except CannotSynthesize:
                    made = None
        self._stand_ins[key] = made
        return made

    def _stand_in_target(self, target, value: Value, code: str) -> list:
        if isinstance(target, cst.Name):
            return [(target.value, self.synthesize(target.value, value), code)]
        if isinstance(target, (cst.Tuple, cst.List)) and value.items is not None \
                and len(value.items) == len(target.elements) and all(
                    isinstance(e.value, cst.Name) for e in target.elements):
            return [(e.value.value, self.synthesize(e.value.value, item), code)
                    for e, item in zip(target.elements, value.items)]
        raise CannotSynthesize("a target the facts do not describe")

    def cut(self, statement) -> bool:
        """Synthesize this binding: its data comes from outside, the facts describe it, and
        the code cannot compute it from stand-ins made earlier (the earliest point wins, so
        the code's own steps, such as a transpose, run)."""
        return self.tainted(statement) and self.stand_in(statement) is not None \
            and not self.computed(statement)

    def computed(self, statement) -> bool:
        """Whether the code computes this binding from synthesized stand-ins: it reads no
        outside data itself and every outside value it reads is a stand-in or computed."""
        key = id(statement)
        if key in self._computed:
            return self._computed[key] is not False
        self._computed[key] = None  # in progress: a loop-carried binding
        result = not self.reads_outside(_header_or_self(statement)) and all(
            self.cut(d) or self.computed(d) for d in self._tainted_inputs(statement))
        self._computed[key] = result
        return result

    def _tainted_inputs(self, statement) -> list:
        scope = self.ctx.scope(statement)
        local = self.ctx.bindings(scope)
        found = []
        for name in reads(_header_or_self(statement)) if not isinstance(statement, cst.For) \
                else names_in(statement.iter):
            for binding in local.get(name) or self.ctx.bindings(self.module).get(name) or []:
                bound = self.statement_of(binding.node)
                if bound is not None and bound is not statement and not isinstance(
                        bound, (cst.FunctionDef, cst.ClassDef)) and self.tainted(bound):
                    found.append(bound)
        return found

    def _source_tainted(self, node, scope) -> bool:
        if self.reads_outside(node):
            return True
        local = self.ctx.bindings(scope)
        for name in names_in(node):
            if (id(scope), name) in self._tainted:
                return True
            if name not in local and (id(self.module), name) in self._tainted:
                return True
        return False

    # synthesized values
    def synthesize(self, name: str, value: Value, depth: int = 0) -> Synthesized:
        """Code that builds a stand-in for `value`, or CannotSynthesize."""
        kind = value.kind
        if depth > 3:
            raise CannotSynthesize(f"{name} (nested too deeply)")
        if kind is Kind.TENSOR:
            return self._tensor(name, value)
        if kind is Kind.ARRAY:
            dims = self._dims(name, value, "an array")
            return Synthesized(name, f"numpy.random.rand({', '.join(map(str, dims))})"
                               f".astype(numpy.float32)", f"array {_shape(dims)}, float32")
        if kind is Kind.NUMBER:
            if isinstance(value.literal, (int, float)) and not isinstance(value.literal, bool):
                return Synthesized(name, repr(value.literal), f"number {value.literal!r}")
            size = self.options.dim(name)
            return Synthesized(name, str(size), f"number {size} (a size the code does not show)")
        if kind is Kind.BOOL and isinstance(value.literal, bool):
            return Synthesized(name, repr(value.literal), f"bool {value.literal}")
        if kind is Kind.STRING and isinstance(value.literal, str):
            return Synthesized(name, repr(value.literal), f"string {value.literal!r}")
        if kind is Kind.NONE:
            return Synthesized(name, "None", "None")
        if kind is Kind.DEVICE and value.place is not Place.UNKNOWN:
            where = "cuda" if value.place is Place.DEVICE else "cpu"
            return Synthesized(name, f"torch.device({where!r})", f"device {where}")
        if kind is Kind.MODULE:
            return self._module(name, value)
        if kind is Kind.LOADER and value.element is not None:
            batch = self.synthesize(f"{name} batch", value.element, depth + 1)
            count = self.options.batches
            return Synthesized(name, f"[{batch.code} for _ in range({count})]",
                               f"{count} synthetic batches of {batch.what}")
        if kind is Kind.SEQUENCE and value.items is not None:
            parts = [self.synthesize(f"{name}[{i}]", item, depth + 1)
                     for i, item in enumerate(value.items)]
            inner = ", ".join(p.code for p in parts) + ("," if len(parts) == 1 else "")
            return Synthesized(name, f"({inner})", "(" + ", ".join(p.what for p in parts) + ")")
        if kind is Kind.SEQUENCE and value.element is not None:
            item = self.synthesize(f"{name} item", value.element, depth + 1)
            count = self.options.dim(name)
            return Synthesized(name, f"[{item.code} for _ in range({count})]",
                               f"{count} items of {item.what}")
        what = kind.value if kind is not Kind.UNKNOWN else "a value of unknown kind"
        raise CannotSynthesize(f"{name} ({what})")

    def _dims(self, name: str, value: Value, what: str) -> list[int]:
        whole = self.options.sizes.get(name)
        if value.shape is None:
            if isinstance(whole, tuple):
                return list(whole)
            raise CannotSynthesize(f"{name} ({what} of unknown rank)")
        if isinstance(whole, tuple) and len(whole) == len(value.shape):
            return list(whole)
        return [self._dim(size) for size in value.shape]

    def _dim(self, size) -> int:
        if isinstance(size, int) and size > 0:
            return size
        if isinstance(size, str):
            if size in self.options.sizes:
                return self.options.dim(size)
            literal = self._module_int(size)
            if literal is not None:
                return literal
        return self.options.dim(size)

    def _module_int(self, name: str) -> Optional[int]:
        """The literal int a module-level name is bound to once (`B, T = 2, 5` too)."""
        found = []
        for statement in self.module.body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and len(small.targets) == 1:
                        target, value = small.targets[0].target, small.value
                        pairs = [(target, value)]
                        if isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple) \
                                and len(target.elements) == len(value.elements):
                            pairs = [(t.value, v.value) for t, v in
                                     zip(target.elements, value.elements)]
                        for t, v in pairs:
                            if isinstance(t, cst.Name) and t.value == name:
                                found.append(v)
        if len(found) == 1 and isinstance(found[0], cst.Integer):
            number = int(found[0].value, 0)
            return number if number > 0 else None
        return None

    def _tensor(self, name: str, value: Value) -> Synthesized:
        if value.place is Place.UNKNOWN and isinstance(value.node, cst.BaseExpression):
            from devicelint.semantic.dataflow import fresh_fill

            # made by factories alone, with no device: a host tensor
            if fresh_fill(self.sem, value.node) is not None:
                value = value.with_(place=Place.CPU)
        if value.place is Place.UNKNOWN:
            raise CannotSynthesize(f"{name} (a tensor whose device the code does not show)")
        dims = self._dims(name, value, "a tensor")
        where = "cuda" if value.place is Place.DEVICE else "cpu"
        layout = value.layout
        if layout.perm is not None and len(layout.perm) == len(dims):
            base = [0] * len(dims)
            for k, source in enumerate(layout.perm):
                base[source] = dims[k]
            code = f"torch.randn({', '.join(map(str, base))}, device={where!r})" \
                   f".permute({', '.join(map(str, layout.perm))})"
            what = f"tensor {_shape(dims)} on {where}, float32, permuted {tuple(layout.perm)}"
        else:
            code = f"torch.randn({', '.join(map(str, dims))}, device={where!r})" if dims else \
                f"torch.tensor(1.0, device={where!r})"
            what = f"tensor {_shape(dims)} on {where}, float32"
        if value.pinned and where == "cpu":
            code += ".pin_memory()"
            what += ", pinned"
        return Synthesized(name, code, what)

    def _module(self, name: str, value: Value) -> Synthesized:
        built = value.node if isinstance(value.node, cst.Call) else None
        if built is None:
            raise CannotSynthesize(f"{name} (a module the code does not show being built)")
        code = self._constructor(built, name)
        if value.place is Place.DEVICE:
            code += ".to('cuda')"
        elif value.place is Place.UNKNOWN:
            raise CannotSynthesize(f"{name} (a module whose device the code does not show)")
        return Synthesized(name, code, f"module {self.ctx.code(built.func)} on "
                                       f"{'cuda' if value.place is Place.DEVICE else 'cpu'}")

    def _constructor(self, call: cst.Call, name: str) -> str:
        """The code of a constructor call whose arguments are all literals."""
        for arg in call.args:
            if not _literal(arg.value):
                raise CannotSynthesize(f"{name} ({self.ctx.code(call.func)}(...) is built with "
                                       f"arguments that are not literals)")
        return self.ctx.code(call)


def _literal(node) -> bool:
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString, cst.Imaginary)):
        return True
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _literal(node.expression)
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(_literal(e.value) for e in node.elements)
    if isinstance(node, cst.Attribute):  # torch.float32, nn.ReLU
        return dotted_name(node) is not None
    return False


def _shape(dims) -> str:
    return "(" + ", ".join(map(str, dims)) + ("," if len(dims) == 1 else "") + ")"


class _Builder:
    """One reproduction of one finding: `FileReproductions.build`."""

    def __init__(self, repros: "FileReproductions") -> None:
        self.repros = repros
        self.ctx = repros.ctx
        self.synthesized: list[Synthesized] = []

    def contains_for(self, target):
        def contains(node) -> bool:
            current = target
            while current is not None:
                if current is node:
                    return True
                current = self.ctx.parent(current)
            return False
        return contains

    def substitute(self, statement, needed):
        """A binding of data the run does not have, replaced by synthesized values; None to
        keep the statement as the code has it (its inputs are synthesized further up)."""
        repros = self.repros
        if isinstance(statement, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body):
            for small in statement.body:
                if import_names(small) & needed:
                    repros.check_import(small)
            return None
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            outside = repros.outside_defs().get(statement.name.value)
            if outside and self.ctx.parent(statement) is not None:
                raise CannotSynthesize(f"what {statement.name.value} reads (`{outside}`)")
            return None
        if self.ctx.parent(statement) is None or not repros.tainted(statement):
            return None
        if repros.cut(statement):
            made = repros.stand_in(statement)
            for name, synthesized, _ in made:
                if all(s is not synthesized for s in self.synthesized):
                    self.synthesized.append(synthesized)
            lines = [f"{name} = {m.code}  # synthesized: {m.what}, for: {_one_line(code)}"
                     for name, m, code in made]
            used = set().union(*(names_in(cst.parse_expression(m.code)) for _, m, _ in made))
            new = list(cst.parse_module("\n".join(lines) + "\n").body)
            return (new if len(new) > 1 else new[0]), used
        if not repros.computed(statement):
            outside = repros.reads_outside(_header_or_self(statement))
            if outside:
                names = ", ".join(sorted(binds(statement))) or "a value"
                raise CannotSynthesize(f"{names} (read by `{_one_line(outside)}`: no facts "
                                       f"to build a stand-in from)")
        return None

    # where a reproduction starts
    def start(self, target, depth: int = 0):
        """(module statements, the call that runs them, entry words) for a reproduction
        whose flagged statement (or the call leading to it) is `target`."""
        function = self.ctx.function(target)
        if function is None:
            slicer = Slicer(target, self.contains_for(target), self.substitute,
                            self.repros.initialises_cuda, self.repros.stamps(target))
            body, needed = slicer.block(self.repros.module.body, set())
            return body, _bound(needed), "the module's statements"
        try:
            return self.direct(target, function)
        except CannotSynthesize as error:
            first = error
        if depth < CALLER_DEPTH:
            for call in self.repros.callers(function):
                statement = self.repros.statement_of(call)
                if statement is None:
                    continue
                kept = list(self.synthesized)
                try:
                    body, needed, entry = self.start(statement, depth + 1)
                    return body, needed, f"{entry}, through the call at line " \
                                         f"{self.ctx.position(call)[0]}"
                except CannotSynthesize:
                    self.synthesized = kept
        raise first

    def direct(self, target, function):
        """The function's slice, called with synthesized arguments."""
        repros = self.repros
        if self.ctx.function(function) is not None:
            raise CannotSynthesize(f"the arguments of {function.name.value} (a function "
                                   f"nested in another)")
        owner = repros.owner(function)
        slicer = Slicer(target, self.contains_for(target), self.substitute,
                        self.repros.initialises_cuda, self.repros.stamps(target))
        kept = list(self.synthesized)
        body, needed = slicer.block(block_of(function.body), set())
        params = _params(function)
        if owner is not None and params:
            params = params[1:]  # self
        arguments = []
        for param in params:
            name = param.name.value
            if name not in needed:
                if param.default is None and param.star == "":
                    arguments.append(f"{name}=None")  # required, but the slice never reads it
                continue
            try:
                made = repros.synthesize(name, repros.param_value(function, param))
            except CannotSynthesize:
                if param.default is not None:
                    continue  # the function's own default, as the code writes it
                self.synthesized = kept
                raise
            self.synthesized.append(made)
            arguments.append(f"{name}={made.code}" if param.star == "" else made.code)
        new_function = function.with_changes(body=function.body.with_changes(
            body=body or [pass_statement()]))
        module_body = _replaced(repros.module.body, function, new_function, owner)
        name = function.name.value
        if owner is None:
            call = f"{name}({', '.join(arguments)})"
            entry = f"{name}(...)"
        else:
            instance = repros.instance(owner)
            if name == "__init__":
                call = instance
            else:
                call = f"{instance}.{name}({', '.join(arguments)})"
            entry = f"{owner.name.value}.{name}(...)"
        statement = cst.parse_statement(call + "\n").with_changes(
            leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
        slicer = Slicer(statement, lambda node: node is statement, self.substitute,
                        repros.initialises_cuda)
        body, needed = slicer.block([*module_body, statement], set())
        return body, _bound(needed), entry


def _header_or_self(statement):
    """What a statement itself computes: a loop's iterable, a with's items, else itself."""
    if isinstance(statement, cst.For):
        return statement.iter
    if isinstance(statement, cst.While):
        return statement.test
    return statement


def _bound(needed: set[str]) -> set[str]:
    """`needed` when every name is a builtin or an import the script adds, else
    CannotSynthesize."""
    import builtins

    missing = sorted(n for n in needed if not hasattr(builtins, n)
                     and n not in ("torch", "numpy", "__name__", "__file__"))
    if missing:
        raise CannotSynthesize(f"{', '.join(missing)} (not bound in the file)")
    return needed


def _replaced(body, function, new_function, owner) -> list:
    """The module's statements with one function (or method) replaced; every other node
    stays the same object (libcst's deep_replace rebuilds them, losing their identity)."""
    if owner is None:
        return [new_function if s is function else s for s in body]
    methods = [new_function if s is function else s for s in owner.body.body]
    new_owner = owner.with_changes(body=owner.body.with_changes(body=methods))
    return [new_owner if s is owner else s for s in body]


def _params(function: cst.FunctionDef) -> list[cst.Param]:
    params = function.params
    found = [*params.posonly_params, *params.params]
    if isinstance(params.star_arg, cst.Param):
        found.append(params.star_arg)
    found.extend(params.kwonly_params)
    if params.star_kwarg is not None:
        found.append(params.star_kwarg)
    return found


def _one_line(code: str) -> str:
    text = " ".join(code.split())
    return text if len(text) <= 80 else text[:77] + "..."


def _methods(owner: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    body = owner.body.body if isinstance(owner.body, cst.IndentedBlock) else []
    return {s.name.value: s for s in body if isinstance(s, cst.FunctionDef)}


def _mark_line(text: str, index: int = 0) -> int:
    token = f"# <- {MARK} [{index}]"
    for number, line in enumerate(text.splitlines(), 1):
        if line.endswith(token):
            return number
    raise CannotSynthesize("the flagged line (no mark in the reproduction)")


def _final_mark(line: str) -> str:
    """The numbered marks as a reader sees them: the finding's, and the file's other
    flagged lines the slice holds."""
    if line.endswith(f"# <- {MARK} [0]"):
        return line[: -len(" [0]")]
    if f"# <- {MARK} [" in line:
        return line[: line.rindex(f"# <- {MARK} [")] + "# <- devicelint: also flagged"
    return line


class _Marker(cst.CSTTransformer):
    """Marks the given statements (by identity) with numbered trailing comments."""

    def __init__(self, statements) -> None:
        super().__init__()
        self.index = {id(s): i for i, s in enumerate(statements)}

    def on_leave(self, original_node, updated_node):
        index = self.index.get(id(original_node))
        if index is None:
            return updated_node
        comment = cst.TrailingWhitespace(whitespace=cst.SimpleWhitespace("  "),
                                         comment=cst.Comment(f"# <- {MARK} [{index}]"))
        if isinstance(updated_node, cst.SimpleStatementLine):
            return updated_node.with_changes(trailing_whitespace=comment)
        if isinstance(getattr(updated_node, "body", None), cst.IndentedBlock):
            return updated_node.with_changes(body=updated_node.body.with_changes(header=comment))
        return updated_node


def _find_same(module: cst.Module, flagged):
    """`flagged` itself in the sliced module, or the statement rebuilt from it (same type,
    same header) when the slicer rebuilt it."""
    fallback = None
    for node in walk(module):
        if node is flagged:
            return node
        if fallback is None and type(node) is type(flagged) and isinstance(
                node, (cst.For, cst.While)) and node.deep_equals(flagged.with_changes(
                    body=node.body, orelse=node.orelse)):
            fallback = node
    return fallback


def build_all(findings, options: Options) -> list[Reproduction]:
    """A reproduction (or the reason there is none) for each finding, in order."""
    by_path: dict[str, FileReproductions] = {}
    out = []
    for finding in findings:
        repros = by_path.get(finding.path)
        if repros is None:
            try:
                with open(finding.path, encoding="utf-8") as handle:
                    source = handle.read()
                repros = FileReproductions(finding.path, source, options)
            except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError) as error:
                out.append(Reproduction(finding, reason=f"cannot synthesize a reproduction: "
                                                        f"the file cannot be read ({error})"))
                continue
            repros.flagged = [(f.line, f.end_line, f.code) for f in findings
                              if f.path == finding.path]
            by_path[finding.path] = repros
        try:
            out.append(repros.build(finding))
        except Exception as error:  # noqa: BLE001 - one finding must not lose the rest
            out.append(Reproduction(finding, reason=f"cannot synthesize a reproduction "
                                                    f"(internal error: {error!r})"))
    return out
