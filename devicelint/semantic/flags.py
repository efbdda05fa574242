"""GPU flags: `USE_CUDA = True` with `if USE_CUDA: model.cuda()`, or `args.cuda = not
args.no_cuda and torch.cuda.is_available()` with `if args.cuda: model.cuda()`, an argparse
on/off switch (`parser.add_argument('-gpu', action='store_true')` with `if args.gpu:
x = x.cuda()`, or `default=True, type=str2bool`), a name bound only to booleans (`TEST_MODE =
True if opt.test_mode == 'GPU' else False`), or a parameter with a literal default whose function the file never calls, or
that every call passes `True` (`def score(imgs, cuda=True)` with `if cuda: dtype =
torch.cuda.FloatTensor`).

A flag bound only to `True`/`False` says nothing about the GPU by itself (`profile = False`),
and neither does a user's switch ANDed with `torch.cuda.is_available()` (`log_gpu = args.log
and torch.cuda.is_available()`); but when an `if` on the flag (or a conditional expression)
moves something to the device, the flag decides whether the program runs on the GPU: on the
configuration that uses one, it is True, as `use_cuda = torch.cuda.is_available()` is on a
machine with a GPU. Decided by what the guarded code does, never by the flag's name.

A flag is a name, or an attribute of a module-level name bound once (`args = parser.parse_args()`)
that the file assigns exactly once, in a statement of the module's top level, before the read
(`args.cuda = ...`); any other store of that attribute (augmented, annotated, `del`, a second
assignment, one inside a function or branch) makes it no flag.

A flag is also an attribute of an instance, `self.gpu_mode` read in a method, that the class
stores once, in a statement of its `__init__`'s own body (no branch, loop or `try`), and
nothing else in the file stores under that attribute's name: bound to a flag's value as above,
or to what the constructor is given (`self.gpu_mode = args.gpu_mode`, `self.use_cuda =
use_cuda`), which the file does not show. Such a value is a GPU flag only when no `else` of a
test on it also moves to the device (`if self.distributed: ...cuda() else: ...cuda()` says
which way to the device, not whether). An instance attribute the class stores several times
is a flag when every store binds a literal boolean, one of them `True`, and no other store of
that name is in the file (`self.cuda = False` in `__init__`, `self.cuda = True` in the method
that moves the networks).

An attribute of an object a function is passed (`train(args, ...)` reading `args.cuda`) takes
the one store of the object every call passes, made at the module's top level or in the
straight-line body of the function that binds the object (`main()` doing `args =
parser.parse_args()`, `args.cuda = not args.no_cuda and torch.cuda.is_available()`): a GPU
flag when that value is one (as above, not a bare `False`) and a test of it moves to the
device (`passed_switch_moves`).
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.names import and_operands
from devicelint.semantic.values import Kind, Place

_LITERALS = ("True", "False")


def flag_truth(sem, flag: cst.BaseExpression) -> Optional[bool]:
    """What a GPU flag (`guards_device_move`) holds on the configuration the code names: True,
    or False when every binding that reaches it is the literal `False` (`USE_GPU = False`
    with `if USE_GPU: model.cuda()`: the program as written runs on the CPU, and the arm the
    flag gates is not a GPU path); None when `flag` is no GPU flag."""
    if not guards_device_move(sem, flag):
        return None
    bindings, opaque = _reaching(sem, flag)
    return False if not opaque and all(_is_false(b) for b in bindings) else True


def _is_false(value: Optional[cst.BaseExpression]) -> bool:
    return isinstance(value, cst.Name) and value.value == "False"


def guards_device_move(sem, flag: cst.BaseExpression) -> bool:
    """`flag` (a name or `base.attr`) is bound only to literal booleans, or only to a user's
    switch ANDed with a GPU test, and some `if flag:` / `... if flag else ...` reading the
    same bindings moves data or a module to the device in its taken arm (`flag_truth` says
    which way it is set)."""
    reaching = _reaching(sem, flag)
    if reaching is None:
        return False
    bindings, opaque = reaching
    spelling = _spelling(flag)
    ids = frozenset(id(b) for b in bindings)
    # What the answer depends on: the bindings, whether they are what a constructor is
    # given, and the tests spelt like the flag. A cycle (a `.to(device)` whose device reads
    # the flag) says nothing: False inside it, and nothing computed from that is kept.
    return sem.remembered(("flag moves", spelling, ids, opaque),
                          lambda: _guards_device_move(sem, spelling, bindings, ids, opaque), False)


def _guards_device_move(sem, spelling: Optional[str], bindings: tuple, ids: frozenset, opaque: bool) -> bool:
    found = False
    if opaque or all(_flag_value(sem, b) for b in bindings):
        for test, arm, orelse in _guarded_arms(sem).get(spelling, ()):
            same = _reaching(sem, test)
            if same is None or not ids & {id(b) for b in same[0]}:
                continue
            if opaque and orelse is not None and _moves_to_device(sem, orelse):
                return False  # both ways lead to the device: the flag says which, not whether
            if _moves_to_device(sem, arm):
                found = True
    return found


def _reaching(sem, flag: cst.BaseExpression) -> Optional[tuple[tuple, bool]]:
    """(the expressions `flag` may take its value from, whether that value is what a
    constructor is given, which the file does not show), or None."""
    bindings = _bindings(sem, flag)
    if bindings:
        return bindings, False
    return _instance_flag(sem, flag)


def _instance_flag(sem, flag: cst.BaseExpression) -> Optional[tuple[tuple, bool]]:
    """For `self.attr` read in a method of a class of the file: the value of the class's one
    store of it, a statement of `__init__`'s own body that runs before the read (an
    unpacking store, an augmented or annotated one, a store in a branch or in another
    method, or any other store in the file of an attribute so named makes it no flag); with
    True when that value is what the constructor is given (a parameter of `__init__`, or an
    attribute of one: `args.gpu_mode`), False when it is a flag's value itself."""
    from devicelint.semantic import modules

    if type(flag) is not cst.Attribute or type(flag.value) is not cst.Name:
        return None
    owner = modules.self_class(sem, flag.value)
    if owner is None:
        return None
    attr = flag.attr.value
    entries = modules.attribute_assignments(sem, owner).get(attr, ())
    if len(entries) > 1 and _attribute_name_stores(sem).get(attr, 0) == len(entries) \
            and all(d.kind == "assign" and not d.path and type(d.value) is cst.Name
                    and d.value.value in _LITERALS for _target, d in entries) \
            and any(d.value.value == "True" for _target, d in entries):
        # `self.cuda = False` in `__init__`, `self.cuda = True` where a method moves the
        # modules: bound only to literal booleans, like `USE_CUDA = True` (whichever store
        # ran last, the flag is a boolean the guarded moves decide the meaning of).
        return tuple(d.value for _target, d in entries), False
    if len(entries) != 1 or _attribute_name_stores(sem).get(attr, 0) != 1:
        return None
    target, d = entries[0]
    if d.kind != "assign" or d.path or d.value is None:
        return None
    store = sem.parent(sem.parent(target))   # AssignTarget -> Assign
    line = sem.parent(store) if type(store) is cst.Assign else None
    init = sem.scope_of(target)
    if type(line) is not cst.SimpleStatementLine or len(store.targets) != 1 \
            or type(init) is not cst.FunctionDef or init.name.value != "__init__" \
            or sem.parent(line) is not init.body:
        return None
    if sem.scope_of(flag) is init and sem.ctx.order(store) > sem.ctx.order(flag):
        return None
    if _flag_value(sem, d.value):
        return (d.value,), False
    return ((d.value,), True) if _given_to(sem, d.value, init) else None


def _given_to(sem, value: cst.BaseExpression, function: cst.FunctionDef) -> bool:
    """`value` is a parameter of `function` other than its first (`use_cuda`), with no
    default or a literal boolean one, or an attribute of such a parameter (`args.gpu_mode`)."""
    while type(value) is cst.Attribute:
        value = value.value
    if not isinstance(value, cst.Name):
        return False
    defs = sem.defs(value)
    params = list(function.params.posonly_params) + list(function.params.params) \
        + list(function.params.kwonly_params)
    if len(defs) != 1 or defs[0].kind != "param" or not params or defs[0].node is params[0] \
            or not any(defs[0].node is p for p in params):
        return False
    default = defs[0].node.default
    return default is None or (isinstance(default, cst.Name) and default.value in _LITERALS)


def _attribute_name_stores(sem) -> dict[str, int]:
    """{attr: how many statements of the file store or delete an attribute so named, on any
    object}, found once per file."""
    memo = sem.__dict__.get("_dl_flag_name_stores")
    if memo is None:
        memo = {}
        targets = []
        for node in sem.ctx.iter_nodes(cst.Assign):
            targets += [t.target for t in node.targets]
        for kind in (cst.AugAssign, cst.AnnAssign):
            targets += [node.target for node in sem.ctx.iter_nodes(kind)]
        targets += [node.target for node in sem.ctx.iter_nodes(cst.Del)]
        for node in sem.ctx.iter_nodes(cst.For):
            targets.append(node.target)
        while targets:
            part = targets.pop()
            if type(part) in (cst.Tuple, cst.List):
                targets += [e.value for e in part.elements]
            elif type(part) is cst.StarredElement:
                targets.append(part.value)
            elif type(part) is cst.Attribute:
                memo[part.attr.value] = memo.get(part.attr.value, 0) + 1
        sem.__dict__["_dl_flag_name_stores"] = memo
    return memo


def _switch_option(sem, base, dest: str) -> Optional[cst.Call]:
    """The one `parser.add_argument(...)` with `action="store_true"`/`"store_false"` whose
    destination is `dest`, where `base` (the module-level binding of the flag's object) is
    `args = parser.parse_args()` of that parser and nothing in the file stores `args.<dest>`:
    the attribute is a user's on/off switch, bound only to a boolean, like `USE_CUDA = True`
    (`parser.add_argument('-gpu', action='store_true')` with `if args.gpu: images =
    images.cuda()`)."""
    made = base.value
    if base.kind != "assign" or base.path or not isinstance(made, cst.Call) \
            or not isinstance(made.func, cst.Attribute) or made.func.attr.value != "parse_args" \
            or not isinstance(made.func.value, cst.Name):
        return None
    parser = made.func.value
    parser_defs = sem.defs(parser)
    if len(parser_defs) != 1:
        return None
    found = []
    for call in sem.ctx.iter_nodes(cst.Call):
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "add_argument"
                and isinstance(func.value, cst.Name) and func.value.value == parser.value
                and sem.defs(func.value) == parser_defs):
            continue
        if _option_dest(call) == dest:
            found.append(call)
    if len(found) != 1 or not _is_switch(found[0]):
        return None
    return found[0]


def _is_switch(call: cst.Call) -> bool:
    """`parser.add_argument(..., action="store_true")` (or `"store_false"`), or an option
    whose default is a literal boolean and whose `type=` is a plain name or absent
    (`parser.add_argument('--cuda', default=True, type=str2bool)`): the user turns it on or
    off. Not one with `action=` of another kind, `choices=` or `nargs=`."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
        return False
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    action = keywords.get("action")
    if action is not None:
        return isinstance(action, cst.SimpleString) and action.value[1:-1] in ("store_true", "store_false")
    default, kind = keywords.get("default"), keywords.get("type", None)
    return isinstance(default, cst.Name) and default.value in _LITERALS \
        and (kind is None or isinstance(kind, cst.Name)) \
        and not {"choices", "nargs", "const"} & keywords.keys()


def _option_dest(call: cst.Call) -> Optional[str]:
    """argparse's destination for an `add_argument` call: `dest=`, else the first long
    option (`--no-cuda` is `no_cuda`), else the first short one (`-gpu` is `gpu`)."""
    names = []
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == "dest":
                return arg.value.value[1:-1] if isinstance(arg.value, cst.SimpleString) else None
            continue
        if not isinstance(arg.value, cst.SimpleString) or arg.star:
            return None
        names.append(arg.value.value[1:-1])
    if not names or not all(n.startswith("-") for n in names):
        return None
    long = [n for n in names if n.startswith("--")]
    chosen = long[0][2:] if long else names[0][1:]
    return chosen.replace("-", "_")


def _flag_value(sem, value: Optional[cst.BaseExpression]) -> bool:
    """`True`/`False`, or `a and b and ...` where one operand is True with a GPU
    (`torch.cuda.is_available()`) and none is known False (`not args.no_cuda`); or an
    argparse on/off switch (`_switch_option`); or a conditional expression whose two arms
    are such values (`True if opt.test_mode == 'GPU' else False`: a boolean the user picks)."""
    if type(value) is cst.IfExp:
        return _flag_value(sem, value.body) and _flag_value(sem, value.orelse)
    if type(value) is cst.Call:
        return _is_switch(value)
    if type(value) is cst.Name:
        return value.value in _LITERALS
    if not (type(value) is cst.BooleanOperation and type(value.operator) is cst.And):
        return False
    truths = [sem.gpu_truth(part) for part in and_operands(value)]
    return True in truths and False not in truths


def _spelling(flag: cst.BaseExpression) -> Optional[str]:
    if type(flag) is cst.Name:
        return flag.value
    if type(flag) is cst.Attribute and type(flag.value) is cst.Name:
        return f"{flag.value.value}.{flag.attr.value}"
    return None


def _bindings(sem, flag: cst.BaseExpression) -> Optional[tuple]:
    """The expressions `flag` may take its value from here: the reaching bindings' values
    (a name bound by a plain assignment only), or the one top-level assignment of an
    attribute; None when that is not all the code shows."""
    if type(flag) is cst.Name:
        defs = sem.defs(flag)
        if len(defs) == 1 and defs[0].kind == "param" and type(defs[0].node) is cst.Param:
            return _param_values(sem, defs[0].node)
        if not defs or not all(d.kind in ("assign", "annassign") and not d.path and d.value is not None
                               for d in defs):
            return None
        return tuple(d.value for d in defs)
    spelling = _spelling(flag)
    if spelling is None:
        return None
    base = flag.value
    base_defs = sem.defs(base)
    if len(base_defs) != 1 or base_defs[0].scope is not sem.ctx.module:
        return None
    stores = _attribute_stores(sem).get(spelling, ())
    if not stores:
        option = _switch_option(sem, base_defs[0], flag.attr.value)
        return (option,) if option is not None else None
    if len(stores) != 1:
        return None
    store = stores[0]
    if type(store) is not cst.Assign or len(store.targets) != 1 \
            or sem.defs(store.targets[0].target.value) != base_defs:
        return None
    line = sem.parent(store)
    if type(line) is not cst.SimpleStatementLine or not _runs_as_script(sem, store) \
            or sem.ctx.order(store) > sem.ctx.order(flag):
        return None
    return (store.value,)


def module_attribute_value(sem, flag: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """What `obj.attr` read at the module's level holds: the one store of it, made before the
    read at the top level or under `if __name__ == "__main__":` (`params.cuda =
    torch.cuda.is_available()`, then `model = Net().cuda() if params.cuda else Net()`)."""
    if not isinstance(flag, cst.Attribute) or sem.scope_of(flag) is not sem.ctx.module:
        return None
    if not _attribute_stores(sem).get(_spelling(flag) or "", ()):
        return None
    bound = _bindings(sem, flag)
    return bound[0] if bound is not None and len(bound) == 1 else None


def _param_values(sem, param: cst.Param) -> Optional[tuple]:
    """What a parameter holds, as `_bindings` gives it: where the file shows no call of its
    function, its default (`def score(imgs, cuda=True)`, a function another module calls);
    where every call passes `True` (or leaves a `True` default), those. A call that passes
    anything else (`run(loader, False)`: the configuration it names) makes it no flag."""
    function = sem._function_of_param(param)
    passed = sem._passed_arguments(function, param) if function is not None else None
    if passed is None:
        return None
    args, spawns, _index = passed
    if spawns:
        return None
    if not args:
        return (param.default,) if param.default is not None else None
    if all(isinstance(a, cst.Name) and a.value == "True" for a in args):
        return tuple(args)
    return None


def passed_attribute_value(sem, flag: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """What `obj.attr` holds in a function that receives `obj` through parameters
    (`train(model, loader, params)` called with the module's `params`, whose `params.cuda =
    torch.cuda.is_available()` is stored once, in the module's own code, before that call):
    the stored expression, or None when the code does not show one. The object is followed
    from a parameter to what every call in the file passes for it, to one module-level
    binding; the store must run whenever the script runs (at top level, or under `if __name__
    == "__main__":`), be the only store of that attribute, and come before the calls."""
    if not isinstance(flag, cst.Attribute) or not isinstance(flag.value, cst.Name):
        return None
    if sem.scope_of(flag) is sem.ctx.module:
        return None  # a module-level read: `_bindings` decides
    handed: list = []
    binding = _module_object(sem, flag.value, handed, 0)
    if binding is None or not handed:
        return None
    stores = _attribute_stores(sem).get(f"{binding.name}.{flag.attr.value}", ())
    if len(stores) != 1:
        return None
    store = stores[0]
    runs = _runs_as_script(sem, store) if binding.scope is sem.ctx.module \
        else _runs_with_body(sem, store, binding.scope)
    if not isinstance(store, cst.Assign) or len(store.targets) != 1 \
            or sem.defs(store.targets[0].target.value) != [binding] or not runs \
            or any(sem.ctx.order(store) > sem.ctx.order(arg) for arg in handed):
        return None
    return store.value


def passed_switch_truth(sem, flag: cst.BaseExpression) -> Optional[bool]:
    """What a passed-in switch (`passed_switch_moves`) holds on the configuration the code
    names: True, or False where its one store is the literal `False` (`args.cuda = False`:
    the program as written runs on the CPU), as `flag_truth` says of a flag bound here;
    None when `flag` is no such switch."""
    if not passed_switch_moves(sem, flag):
        return None
    return False if _is_false(passed_attribute_value(sem, flag)) else True


def passed_switch_moves(sem, flag: cst.BaseExpression) -> bool:
    """`flag` is `obj.attr` of an object passed in (`passed_attribute_value`) whose one
    store binds a flag's value (`args.cuda = not args.no_cuda and torch.cuda.is_available()`
    in `main()`, which then calls `train(args, ...)`), and a test of that same store, in the
    function that makes it or one it is passed to, moves to the device in its taken arm
    (`if args.cuda: net = net.cuda()`) with no other arm that moves too: on the
    configuration with a GPU it holds, as a flag bound in the function itself does
    (`passed_switch_truth`: unless that store is `False`)."""
    stored = passed_attribute_value(sem, flag)
    if stored is None or not _flag_value(sem, stored) or not isinstance(flag, cst.Attribute):
        return False
    # A cycle (a `.to(device)` whose device reads the flag) says nothing (SemanticModel.remembered).
    # The answer depends on the store and the attribute's name (the tests read), not on
    # which read of it asked.
    return sem.remembered(("passed switch", id(stored), flag.attr.value),
                          lambda: _passed_switch_moves(sem, flag, stored), False)


def _passed_switch_moves(sem, flag: cst.Attribute, stored: cst.BaseExpression) -> bool:
    store = sem.parent(stored)
    found = False
    for spelling, arms in _guarded_arms(sem).items():
        if not spelling.endswith("." + flag.attr.value):
            continue
        for test, arm, orelse in arms:
            if not isinstance(test, cst.Attribute) or not isinstance(test.value, cst.Name):
                continue
            same = passed_attribute_value(sem, test) is stored
            if not same and isinstance(store, cst.Assign):
                target = store.targets[0].target
                same = isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) \
                    and sem.scope_of(test) is sem.scope_of(store) \
                    and sem.defs(test.value) == sem.defs(target.value) \
                    and sem.ctx.order(test) > sem.ctx.order(store)
            if not same:
                continue
            if orelse is not None and _moves_to_device(sem, orelse):
                return False
            if _moves_to_device(sem, arm):
                found = True
    return found


def _module_object(sem, name: cst.Name, handed: list, depth: int):
    """The one module-level binding `name` reaches, through parameters to what every call
    of their functions passes (`handed` collects those module-level arguments); None when
    another binding or call reaches it too."""
    if depth > 4:
        return None
    found = None
    for d in sem.defs(name):
        if d.kind == "param" and isinstance(d.node, cst.Param):
            passed = sem.passed_arguments(d.node)
            if passed is None or passed[1]:
                return None
            for arg in passed[0]:
                if not isinstance(arg, cst.Name):
                    return None
                inner = _module_object(sem, arg, handed, depth + 1)
                if inner is None or (found is not None and inner is not found):
                    return None
                found = inner
                if any(b is inner for b in sem.defs(arg)):
                    handed.append(arg)
        elif d.kind == "assign" and depth > 0 and not d.path and (
                d.scope is sem.ctx.module or isinstance(d.scope, cst.FunctionDef)):
            # A module-level binding, or one in the function that calls (`main()` doing
            # `args = parser.parse_args()`, `args.cuda = ...`, then `train(args, ...)`).
            if found is not None and d is not found:
                return None
            found = d
        else:
            return None
    return found


def _runs_with_body(sem, statement: cst.CSTNode, function: cst.CSTNode) -> bool:
    """`statement` is in `function`'s own straight-line body (no branch, loop, `try`,
    `with` or nested function between): it runs on every call of the function."""
    current = sem.parent(statement)
    while current is not None and current is not function:
        if not isinstance(current, (cst.SimpleStatementLine, cst.IndentedBlock)):
            return False
        current = sem.parent(current)
    return current is function


def _runs_as_script(sem, statement: cst.CSTNode) -> bool:
    """`statement` runs whenever the file runs as a script: at the module's top level, or
    in the body of `if __name__ == "__main__":` (no loop, `try`, other `if` or function)."""
    current = sem.parent(statement)
    while current is not None and current is not sem.ctx.module:
        if isinstance(current, cst.If):
            test = current.test
            if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name)
                    and test.left.value == "__name__" and len(test.comparisons) == 1
                    and isinstance(test.comparisons[0].operator, cst.Equal)
                    and not sem.defs(test.left)):
                return False
        elif not isinstance(current, (cst.SimpleStatementLine, cst.IndentedBlock)):
            return False
        current = sem.parent(current)
    return current is sem.ctx.module


def _attribute_stores(sem) -> dict[str, list[cst.CSTNode]]:
    """{"base.attr": [statements that store or delete that attribute]}, found once per file."""
    memo = sem.__dict__.get("_dl_flag_stores")
    if memo is None:
        memo = {}

        def add(target, statement):
            spelling = _spelling(target) if isinstance(target, cst.Attribute) else None
            if spelling is not None:
                memo.setdefault(spelling, []).append(statement)

        def add_parts(target, statement):
            """Each attribute a (possibly unpacking) target stores; a part of a tuple or list
            assignment is recorded with no statement (no plain one-value store)."""
            stack = [target]
            while stack:
                part = stack.pop()
                if isinstance(part, (cst.Tuple, cst.List)):
                    stack += [e.value for e in part.elements]
                else:
                    add(part, statement if part is target else None)

        for node in sem.ctx.iter_nodes(cst.Assign):
            for target in node.targets:
                add_parts(target.target, node)
        for kind in (cst.AugAssign, cst.AnnAssign):
            for node in sem.ctx.iter_nodes(kind):
                add(node.target, node)
        for node in sem.ctx.iter_nodes(cst.Del):
            add_parts(node.target, node)
        sem.__dict__["_dl_flag_stores"] = memo
    return memo


def _guarded_arms(sem) -> dict[str, list[tuple[cst.BaseExpression, cst.CSTNode, Optional[cst.CSTNode]]]]:
    """{spelling: [(the test, the arm taken when it is true, the other arm or None)]} for
    `if flag:` and `a if flag else b`, found once per file."""
    memo = sem.__dict__.get("_dl_flag_arms")
    if memo is None:
        memo = {}
        for kind in (cst.If, cst.IfExp):
            for node in sem.ctx.iter_nodes(kind):
                spelling = _spelling(node.test)
                if spelling is not None:
                    memo.setdefault(spelling, []).append((node.test, node.body, node.orelse))
        sem.__dict__["_dl_flag_arms"] = memo
    return memo


def _moves_to_device(sem, arm: cst.CSTNode) -> bool:
    """`arm` moves data or a module to the device (`.cuda()`, `.to(<device>)`), or names a
    CUDA tensor type, which only a move uses (`dtype = torch.cuda.FloatTensor` for
    `x.type(dtype)`)."""
    # The calls first: `.cuda()` decides without asking the model for any value (a value
    # asked here may read this very flag, whose answer is not known yet).
    calls = [arm] if type(arm) is cst.Call else []
    calls += sem.ctx.descendants(arm, cst.Call, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
    for call in calls:
        func = call.func
        if type(func) is not cst.Attribute:
            continue
        if func.attr.value == "cuda":
            return True
        if func.attr.value == "to":
            target = next((a.value for a in call.args if a.keyword is None
                           or a.keyword.value == "device"), None)
            if target is not None and sem.device_place(target)[0] is Place.DEVICE:
                return True
    for node in [arm, *sem.ctx.descendants(arm, cst.Attribute, (cst.FunctionDef, cst.ClassDef, cst.Lambda))]:
        if type(node) is cst.Attribute:
            value = sem.value(node)
            if value.kind is Kind.TENSOR_TYPE and value.place is Place.DEVICE:
                return True
    return False
