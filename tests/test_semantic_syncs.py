"""The semantic model's host-read facts (devicelint/semantic/syncs.py) and the small value and
loop facts DL004/DL011/DL012 rest on: weighted losses without a weight follow their inputs,
`model.sub` of a moved module is on the device, a loop over modules is not a step loop."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint.context import FileContext
from devicelint.semantic import Kind, Place


HEAD = """\
import torch
import torch.nn as nn
device = torch.device("cuda")
"""


def semantic(body: str):
    source = HEAD + textwrap.dedent(body)
    ctx = FileContext("t.py", source, cst.parse_module(source))
    ctx.walk({}, {})
    return ctx, ctx.semantic


def find(ctx, node_type, text: str):
    for node in ctx.iter_nodes(node_type):
        if ctx.code(node) == text:
            return node
    raise AssertionError(f"no {node_type.__name__} {text!r}")


def test_unweighted_loss_follows_its_inputs():
    ctx, sem = semantic("""
        criterion = nn.CrossEntropyLoss()
        weighted = nn.CrossEntropyLoss(weight=torch.ones(3))
        out = torch.randn(4, 3, device=device)
        y = torch.zeros(4, dtype=torch.long, device=device)
        a = criterion(out, y)
        b = weighted(out, y)
    """)
    a = find(ctx, cst.Call, "criterion(out, y)")
    b = find(ctx, cst.Call, "weighted(out, y)")
    assert sem.value(a).place is Place.DEVICE
    assert sem.value(b).place is Place.CPU  # the weight stays on the CPU: not the inputs' place


def test_submodule_of_a_moved_module_is_on_the_device():
    ctx, sem = semantic("""
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(4, 4)

        model = Net().to(device)
        cpu_model = Net()
        g = model.fc1.weight
        h = cpu_model.fc1.weight
    """)
    assert sem.value(find(ctx, cst.Attribute, "model.fc1.weight")).place is Place.DEVICE
    assert sem.value(find(ctx, cst.Attribute, "cpu_model.fc1.weight")).place is Place.CPU


def test_a_loop_calling_its_own_elements_is_not_a_step_loop():
    ctx, sem = semantic("""
        layers = [nn.Linear(4, 4).to(device) for _ in range(3)]
        model = nn.Linear(4, 4).to(device)
        x = torch.randn(2, 4, device=device)
        for layer in layers:
            x = layer(x)
        for _ in range(3):
            x = model(x)
    """)
    loops = list(ctx.iter_nodes(cst.For))
    assert sem.loops.role(loops[0]) == "other"
    assert sem.loops.role(loops[1]) == "step"


def test_reads_name_the_host_reads_of_a_node():
    ctx, sem = semantic("""
        t = torch.ones(2, device=device)
        a = t.item()
        b = t.to("cpu")
        c = t.to("cpu", non_blocking=True)
        d = float(t)
        print(t, 1)
        torch.cuda.synchronize()
        if t > 0 and t.any():
            pass
    """)
    syncs = sem.syncs
    assert [r.what for r in syncs.reads(find(ctx, cst.Call, "t.item()"))] == ["`.item()`"]
    assert [r.what for r in syncs.reads(find(ctx, cst.Call, 't.to("cpu")'))] == ['`.to("cpu")`']
    assert syncs.reads(find(ctx, cst.Call, 't.to("cpu", non_blocking=True)')) == []
    assert [r.what for r in syncs.reads(find(ctx, cst.Call, "float(t)"))] == ["`float(tensor)`"]
    printed = syncs.reads(find(ctx, cst.Call, "print(t, 1)"))
    assert [syncs.on_device(r.operand) for r in printed] == [True, False]
    waits = syncs.reads(find(ctx, cst.Call, "torch.cuda.synchronize()"))
    assert [(r.what, r.operand) for r in waits] == [("`torch.cuda.synchronize()`", None)]
    test = next(ctx.iter_nodes(cst.If))
    assert [ctx.code(r.operand) for r in syncs.reads(test)] == ["t > 0", "t.any()"]
    assert all(syncs.on_device(r.operand) for r in syncs.reads(test))


def test_function_summary_says_which_argument_a_helper_reads():
    ctx, sem = semantic("""
        def accuracy(out, y, scale):
            n = out.shape[0]
            correct = (out.argmax(1) == y).sum()
            return correct.item() / n * scale

        def log(value, verbose=False):
            if verbose:
                print(value.item())

        class Meter:
            def __init__(self, n):
                self.data = [0.0] * n

            def add(self, *args):
                self.data = [a + float(b) for a, b in zip(self.data, args)]

        def outer(out, y):
            return accuracy(out, y, 1.0)

        out = torch.randn(4, 3, device=device)
        y = torch.zeros(4, dtype=torch.long)
        meter = Meter(2)
        accuracy(out, y, 2.0)
        accuracy(out.cpu(), y, 2.0)
        log(out)
        meter.add(out.sum(), 3)
        meter.add(1, 2)
        outer(out, y)
    """)
    syncs = sem.syncs
    [read] = syncs.summary(sem.functions()["accuracy"][0])
    assert (read.what, read.params, read.device) == ("`.item()`", frozenset({"out", "y"}), False)
    assert syncs.summary(sem.functions()["log"][0]) == ()  # under a flag: not every call
    [add] = syncs.summary(sem.functions()["add"][0])
    assert add.params == frozenset({"args"})
    calls = [c for c in ctx.iter_nodes(cst.Call) if ctx.module.code_for_node(c).startswith(
        ("accuracy(", "meter.add(", "outer("))]
    assert [len(syncs.call_reads(c)) for c in calls] == [1, 1, 0, 1, 0, 1]  # the first in outer()
    [through] = syncs.summary(sem.functions()["outer"][0])
    assert through.what == "`accuracy()` (its `.item()`)" and through.params == frozenset({"out", "y"})


def test_summary_of_a_generator_is_empty_and_recursion_ends():
    ctx, sem = semantic("""
        def batches(x):
            for row in x:
                yield row.item()

        def down(x, n):
            if n:
                return down(x, n - 1)
            return x.item()
    """)
    syncs = sem.syncs
    assert syncs.summary(sem.functions()["batches"][0]) == ()
    reads = {r.what: r.params for r in syncs.summary(sem.functions()["down"][0])}
    # `if n:` reads `n` on the host too: only a call passing a device tensor for `n` syncs there.
    assert reads == {"`.item()`": frozenset({"x"}), "`if`/`while` on a tensor's value": frozenset({"n"})}


def test_loop_carried_binding_read_in_its_own_right_hand_side():
    ctx, sem = semantic("""
        a = torch.randn(4, 4).to(device)
        for _ in range(3):
            a = torch.tanh(a @ a)
        b = a
    """)
    # Asked first at the product inside the loop (the order a rule may ask in), then after it.
    assert sem.value(find(ctx, cst.BinaryOperation, "a @ a")).place is Place.DEVICE
    assert sem.value(find(ctx, cst.Call, "torch.tanh(a @ a)")).place is Place.DEVICE
    last = [n for n in ctx.iter_nodes(cst.Name) if n.value == "a"][-1]
    assert sem.value(last).place is Place.DEVICE


def test_join_keeps_an_agreed_place_across_kinds_and_a_moved_callable_is_a_module():
    ctx, sem = semantic("""
        from models import *
        net = SimpleDLA()
        net = net.to(device)
        if torch.cuda.device_count() > 1:
            net = torch.nn.DataParallel(net)
        x = torch.randn(2, 4).to(device)
        out = net(x)
    """)
    last = [n for n in ctx.iter_nodes(cst.Name) if n.value == "net"][-1]
    assert sem.value(last).place is Place.DEVICE  # join of `.to(device)` and a DataParallel
    assert sem.value(find(ctx, cst.Call, "net(x)")).place is Place.DEVICE


def test_a_module_called_on_the_same_input_every_iteration_runs_no_step():
    ctx, sem = semantic("""
        model = nn.Linear(4, 4).to(device)
        x = torch.randn(2, 4, device=device)
        for _ in range(3):
            y = model(x)
        h = x
        for _ in range(3):
            h = model(h)
        for row in x:
            model(row)
    """)
    roles = [sem.loops.role(loop) for loop in ctx.iter_nodes(cst.For)]
    assert roles == ["other", "step", "step"]


GENERATE = """
    def generate(model, idx, steps):
        for _ in range(steps):
            logits = model(idx[:, -8:])
            nxt = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            if nxt == 0:
                break
            idx = torch.cat((idx, nxt), dim=1)
        return idx

    net = nn.Linear(4, 4).to(device)
    generate(net, torch.zeros(1, 1, dtype=torch.long, device=device), 3)
"""


def test_values_do_not_depend_on_the_order_of_questions():
    answers = []
    for first in ("model(idx[:, -8:])", "torch.cat((idx, nxt), dim=1)", None):
        ctx, sem = semantic(GENERATE)
        if first is not None:
            sem.value(find(ctx, cst.Call, first))  # asked inside the loop-carried cycle first
        answers.append(sem.value(find(ctx, cst.Comparison, "nxt == 0")).place)
    assert answers == [Place.DEVICE] * 3


def test_constructor_call_sites_reach_init_and_a_submodule_call_is_a_module_output():
    ctx, sem = semantic("""
        class Seq2Seq(nn.Module):
            def __init__(self, encoder, decoder):
                super().__init__()
                self.encoder = encoder
                self.decoder = decoder

        model = Seq2Seq(nn.Linear(4, 4), nn.Linear(4, 4)).to(device)
        x = torch.zeros(1, 4, device=device)
        out = model.decoder(x)
    """)
    assert sem.value(find(ctx, cst.Attribute, "model.decoder")).place is Place.DEVICE
    assert sem.value(find(ctx, cst.Call, "model.decoder(x)")).place is Place.DEVICE


def test_a_literal_flag_says_nothing_about_the_gpu_and_every_binding_names_the_device():
    ctx, sem = semantic("""
        profile = False
        use_cuda = True if torch.cuda.is_available() else False
        if profile:
            a = 1
        if use_cuda:
            b = 1
        dev = "cuda"
        if profile:
            dev = f"cuda:{a}"
        t = torch.zeros(2).to(dev)
    """)
    first, second = list(ctx.iter_nodes(cst.If))[:2]
    assert sem.gpu_truth(first.test) is None
    assert sem.gpu_truth(second.test) is True
    assert sem.value(find(ctx, cst.Call, "torch.zeros(2).to(dev)")).place is Place.DEVICE


def test_a_module_moved_in_a_branch_taken_with_a_gpu_is_on_the_device_after_it():
    ctx, sem = semantic("""
        from models import Generator
        cuda = True if torch.cuda.is_available() else False
        gen = nn.Linear(4, 4)
        other = Generator()
        if cuda:
            gen.cuda()
            other.cuda()
        y = gen(torch.zeros(1, 4, device=device))
        z = other(torch.zeros(1, 4, device=device))
    """)
    assert sem.value(find(ctx, cst.Call, "gen(torch.zeros(1, 4, device=device))")).place is Place.DEVICE
    assert sem.value(find(ctx, cst.Call, "other(torch.zeros(1, 4, device=device))")).place is Place.DEVICE


def test_code_the_file_does_not_show_run_on_carried_device_data_is_a_step():
    # A loaded model (torch.load's result has no kind) run on the tokens the loop carries is a
    # decoding step; on the same input every iteration, or through a builtin, it is not.
    ctx, sem = semantic("""
        model = torch.load("net.pt", map_location=device, weights_only=False)
        tokens = torch.zeros(1, 4, device=device)
        for _ in range(3):
            out = model(tokens)
            tokens = out.softmax(dim=-1)
        x = torch.zeros(1, 4, device=device)
        for _ in range(3):
            out = model(x)
        total = 0.0
        for k in range(3):
            total += float(x[k].sum())
        host = torch.zeros(1, 4)
        for _ in range(3):
            host = model(host)
    """)
    roles = [sem.loops.role(loop) for loop in ctx.iter_nodes(cst.For)]
    assert roles == ["step", "other", "other", "other"]


def test_a_flag_choosing_between_two_ways_of_running_the_step_is_no_throttle():
    ctx, sem = semantic("""
        attention = nn.Linear(4, 4).to(device)
        recurrent = nn.Linear(4, 4).to(device)
        tokens = torch.ones(1, 4, device=device)
        for _ in range(3):
            if use_attention:
                out = attention(tokens)
                a = out.cpu()
            else:
                out = recurrent(tokens)
                b = out.cpu()
            if verbose:
                c = attention(tokens).cpu()
            tokens = out.tanh()
    """)
    loop = next(ctx.iter_nodes(cst.For))
    reads = [c for c in ctx.iter_nodes(cst.Call) if ctx.code(c).endswith(".cpu()")]
    assert [ctx.code(c) for c in reads] == ["out.cpu()", "out.cpu()", "attention(tokens).cpu()"]
    assert [sem.loops.step_loop(c) is loop for c in reads] == [True, True, False]
    assert sem.loops.throttled(reads[2], loop)


def test_a_loop_that_sends_each_element_to_the_device_walks_batches():
    # Whatever the iterable (here a parameter the file never binds), moving the element the
    # loop binds to the device, directly or through a function of the file that moves its
    # parameter, is one batch per iteration; a dtype-only `.to` or moving something else is not.
    ctx, sem = semantic("""
        def to_device(x):
            return x.to(device)

        def walk(batches, weight):
            for x in batches:
                x = x.to(device)
            for x, y in batches:
                y = to_device(y)
            for x in batches:
                x = x.to(torch.float64)
            for x in batches:
                w = weight.to(device)
    """)
    roles = [sem.loops.role(loop) for loop in ctx.iter_nodes(cst.For)]
    assert roles == ["step", "step", "other", "other"]


def test_a_packed_sequence_keeps_its_data_on_the_input_device_and_its_sizes_on_the_cpu():
    ctx, sem = semantic("""
        from torch.nn.utils.rnn import pack_padded_sequence
        out = torch.randn(2, 3, 4, device=device)
        data, sizes, _, _ = pack_padded_sequence(out, [3, 2], batch_first=True)
    """)
    data = find(ctx, cst.Name, "data")
    sizes = find(ctx, cst.Name, "sizes")
    assert (sem.value(data).kind, sem.value(data).place) == (Kind.TENSOR, Place.DEVICE)
    assert (sem.value(sizes).kind, sem.value(sizes).place) == (Kind.TENSOR, Place.CPU)


def test_a_comprehension_condition_takes_the_truth_value_of_each_element():
    ctx, sem = semantic("""
        words = torch.ones(4, device=device)
        alive = [i for i, w in enumerate(words) if w != 3 and not w.isnan()]
    """)
    condition = next(ctx.iter_nodes(cst.CompIf))
    reads = sem.syncs.reads(condition)
    assert [ctx.code(r.operand) for r in reads] == ["w != 3", "w.isnan()"]
    assert all(sem.syncs.on_device(r.operand) for r in reads)


def test_what_follows_an_early_return_on_a_gpu_runs_only_without_one():
    ctx, sem = semantic("""
        def pick():
            if torch.cuda.is_available():
                return torch.device("cuda")
            return torch.device("cpu")

        def keep():
            if torch.cuda.is_available():
                print("gpu")
            return torch.device("cpu")
    """)
    pick, keep = [f for f in ctx.iter_nodes(cst.FunctionDef)]
    returns = list(ctx.iter_nodes(cst.Return))
    assert [sem.on_gpu_path(r) for r in returns] == [True, False, True]
    assert (sem.returned_value(pick).kind, sem.returned_value(pick).place) == (Kind.DEVICE, Place.DEVICE)
    assert sem.returned_value(keep).place is Place.CPU


def test_a_while_loop_that_moves_the_next_batch_to_the_device_walks_batches():
    ctx, sem = semantic("""
        def walk(batches, n, weight):
            i = 0
            while i < n:
                x = next(batches)
                x = x.to(device)
                i += 1
            while i < n:
                x = next(batches)
                w = weight.to(device)
                i += 1
    """)
    assert [sem.loops.role(loop) for loop in ctx.iter_nodes(cst.While)] == ["step", "other"]


def test_a_device_from_a_function_of_another_local_module(tmp_path):
    from devicelint.runner import Overrides, lint_paths

    (tmp_path / "util.py").write_text(textwrap.dedent("""
        import torch as th

        def dev():
            if th.cuda.is_available():
                return th.device("cuda:0")
            return th.device("cpu")
    """))
    (tmp_path / "main.py").write_text(textwrap.dedent("""
        import util

        def run(data, n):
            i = 0
            while i < n:
                batch = next(data)
                batch = batch.to(util.dev())
                print(batch.norm().item())
                i += 1
    """))
    run = lint_paths([str(tmp_path)], Overrides(select=["DL004"]), use_cache=False, jobs=1)
    assert [(f.path.rsplit("/", 1)[-1], f.line) for f in run.findings] == [("main.py", 9)]


def test_a_function_spawned_per_process_takes_the_process_index_first():
    ctx, sem = semantic("""
        import torch.multiprocessing as mp

        def main(rank, world_size, epochs):
            x = torch.ones(2).to(rank)

        def other(rank):
            y = torch.ones(2).to(rank)

        mp.spawn(main, args=(2, 3), nprocs=2)
    """)
    rank, world, epochs, _ = [p for p in ctx.iter_nodes(cst.Param)]
    assert [sem.param_value(p).kind for p in (rank, world, epochs)] == [Kind.NUMBER] * 3
    moves = [c for c in ctx.iter_nodes(cst.Call) if ctx.code(c) == "torch.ones(2).to(rank)"]
    # `.to(rank)` with the spawned index moves to that GPU; `other` is started by nothing here.
    assert [sem.value(c).place for c in moves] == [Place.DEVICE, Place.UNKNOWN]


def test_a_loss_whose_class_weight_is_on_the_device_computes_there():
    # One meaning of "holds state" (devicelint.semantic.modules.holds_state): a weight already on
    # the device is not a CPU buffer the loss would keep, so the loss follows its inputs.
    ctx, sem = semantic("""
        criterion = nn.CrossEntropyLoss(weight=torch.ones(3, device=device))
        out = torch.randn(4, 3, device=device)
        y = torch.zeros(4, dtype=torch.long, device=device)
        loss = criterion(out, y)
    """)
    assert sem.value(find(ctx, cst.Call, "criterion(out, y)")).place is Place.DEVICE


def test_writing_into_a_cpu_tensor_reads_the_value_on_the_host():
    ctx, sem = semantic("""
        host = torch.zeros(3, 4)
        buffer = torch.zeros(3, 4, device=device)
        row = torch.ones(4, device=device)
        host[0] = row
        buffer[0] = row
    """)
    to_host, on_device = [a for a in ctx.iter_nodes(cst.Assign)][-2:]
    assert [(r.what, ctx.code(r.operand)) for r in sem.syncs.reads(to_host)] == [
        ("copying a tensor into a CPU tensor", "row")]
    assert sem.syncs.reads(on_device) == []


def test_leaves_loop_a_block_that_ends_by_leaving_runs_at_most_once():
    ctx, sem = semantic("""
        import sys
        def train(loader, model, names):
            for x in loader:
                loss = model(x.to(device)).sum()
                if loss.isnan():
                    print(loss.item())
                    sys.exit(1)
                if loss < 0:
                    print(loss.sum())
                    raise ValueError
                if loss > 9:
                    print(loss.mean())
                    continue
                try:
                    if loss > 5:
                        print(loss.std())
                        raise ValueError
                except ValueError:
                    pass
                for n in names:
                    print(loss.max())
                    break
                if loss > 7:
                    print(loss.min())
                    break
    """)
    loop = next(ctx.iter_nodes(cst.For))
    calls = {m: find(ctx, cst.Call, f"loss.{m}()") for m in ("item", "sum", "mean", "std", "max", "min")}
    leaves = {m: sem.loops.leaves_loop(call, loop) for m, call in calls.items()}
    # sys.exit, raise and a break of this loop leave; continue does not, nor a raise the
    # loop's own handler catches, nor a break of an inner loop
    assert leaves == {"item": True, "sum": True, "mean": False, "std": False, "max": False, "min": True}


def test_sorting_a_mappings_keys_compares_no_tensor():
    ctx, sem = semantic("""
        def order(parts, table):
            table = {"a": 1}
            by_keys = sorted(parts.keys())
            by_mapping = sorted(table)
            by_values = sorted(parts.values())
            return by_keys, by_mapping, by_values
    """)
    reads = {text: sem.syncs.reads(find(ctx, cst.Call, text))
             for text in ("sorted(parts.keys())", "sorted(table)", "sorted(parts.values())")}
    assert reads["sorted(parts.keys())"] == [] and reads["sorted(table)"] == []
    assert [r.what for r in reads["sorted(parts.values())"]] == ["`sorted()` comparing tensors"]


def test_a_module_reading_its_own_buffer_reads_the_device_where_the_module_is():
    # A buffer moves with its module: `int(self.ptr)` in a method `forward` calls depends on
    # where the object is; a wrapper (DataParallel, DistributedDataParallel) runs the wrapped
    # module's forward. A plain attribute (`self.count`) is no buffer.
    ctx, sem = semantic("""
        class Queue(nn.Module):
            def __init__(self):
                super().__init__()
                self.count = 0
                self.register_buffer("ptr", torch.zeros(1, dtype=torch.long))

            def _advance(self):
                self.count = int(self.count) + 1
                return int(self.ptr)

            def forward(self, x):
                self._advance()
                return x

        moved = Queue().to(device)
        wrapped = nn.DataParallel(moved)
        host = Queue()
        moved(torch.ones(1))
        wrapped(torch.ones(1))
        host(torch.ones(1))
    """)
    advance = find(ctx, cst.FunctionDef, ctx.code(next(f for f in ctx.iter_nodes(cst.FunctionDef)
                                                        if f.name.value == "_advance")))
    reads = sem.syncs.summary(advance)
    assert [(ctx.code(r.node), r.params) for r in reads] == [("int(self.ptr)", frozenset({"self"}))]
    counts = {name: len(sem.syncs.call_reads(find(ctx, cst.Call, f"{name}(torch.ones(1))")))
              for name in ("moved", "wrapped", "host")}
    assert counts == {"moved": 1, "wrapped": 1, "host": 0}


def test_passed_arguments_names_what_each_call_and_spawn_hands_a_parameter():
    ctx, sem = semantic("""
        import torch.multiprocessing as mp

        def main(rank, world_size):
            train(rank, 4)
            train(rank, world_size)

        def train(rank, steps=1):
            pass

        def unused(x):
            pass

        mp.spawn(main, args=(2,), nprocs=2)
        main(0, 1)
    """)
    rank, world, t_rank, t_steps, unused = [p for p in ctx.iter_nodes(cst.Param)]
    args, process_index = sem.passed_arguments(rank)
    assert process_index and [ctx.code(a) for a in args] == ["0"]
    args, process_index = sem.passed_arguments(world)
    assert not process_index and [ctx.code(a) for a in args] == ["1", "2"]
    args, process_index = sem.passed_arguments(t_rank)
    assert not process_index and [ctx.code(a) for a in args] == ["rank", "rank"]
    assert [ctx.code(a) for a in sem.passed_arguments(t_steps)[0]] == ["4", "world_size"]
    assert sem.passed_arguments(unused) is None


def test_reads_from_inside_an_argument_that_holds_device_tensors():
    """`SummaryRead.inside`: a helper that reads the tensors inside a list, a module or its
    `**kwargs` reads on the device when the call gives it device tensors that way; reading
    only the container (its truth, a module flag, a type test) does not."""
    ctx, sem = semantic("""
        def norms(tensors):
            return [t.norm().item() for t in tensors]

        def weights(model):
            return [float(p.sum()) for _name, p in model.named_parameters()]

        def values(**kw):
            return {k: v.item() for k, v in kw.items()}

        def empty(tensors, model):
            if not tensors or model.training:
                return 0
            return 1 if torch.is_tensor(tensors[0]) else 2

        net = nn.Linear(3, 3).to(device)
        host = nn.Linear(3, 3)
        out = torch.randn(4, 3, device=device)
        norms(net.parameters())
        norms(host.parameters())
        weights(net)
        weights(host)
        values(loss=out.sum())
        values(loss=1.0)
        empty(list(net.parameters()), net)
    """)
    syncs = sem.syncs
    [read] = syncs.summary(sem.functions()["norms"][0])
    assert read.params == read.inside == frozenset({"tensors"})
    # The container's truth and a module's flag are read from the parameter itself, not from
    # inside it; `torch.is_tensor` reads no data.
    container = syncs.summary(sem.functions()["empty"][0])
    assert [(ctx.code(r.node), r.inside) for r in container] == [
        ("tensors", frozenset())]
    calls = [c for c in ctx.iter_nodes(cst.Call) if ctx.module.code_for_node(c).startswith(
        ("norms(", "weights(", "values(", "empty("))]
    assert [len(syncs.call_reads(c)) for c in calls] == [1, 0, 1, 0, 1, 0, 0]


def test_python_number_conversions_read_a_tensor_on_the_host():
    ctx, sem = semantic("""
        import math
        from math import log10
        t = torch.ones(3, device=device).sum()
        a = chr(65 + t)
        b = log10(1 / t)
        c = math.isfinite(t)
        d = range(t)
        e = math.log10(2.0)
        def hex(v):
            return v
        f = hex(t)
    """)
    for text in ("chr(65 + t)", "log10(1 / t)", "math.isfinite(t)", "range(t)"):
        call = find(ctx, cst.Call, text)
        (read,) = sem.syncs.reads(call)
        assert sem.syncs.on_device(read.operand), text
        assert sem.value(call).kind in (Kind.NUMBER, Kind.STRING, Kind.SEQUENCE), text
    (literal,) = sem.syncs.reads(find(ctx, cst.Call, "math.log10(2.0)"))
    assert not sem.syncs.on_device(literal.operand)
    assert sem.syncs.reads(find(ctx, cst.Call, "hex(t)")) == []   # the file's own `hex`


def test_settings_first_passes_and_passed_gpu_flags_decide_per_step_reads():
    ctx, sem = semantic("""
        def train(model, loader, params, classes):
            kept = []
            for x, y in loader:
                if params.cuda:
                    x = x.cuda()
                out = model(x)
                if classes == 1:
                    a = out.max().item()
                else:
                    b = out.min().item()
                if len(kept) == 0:
                    kept.append(out.cpu())
                else:
                    c = out.sum().item()
        if __name__ == "__main__":
            params = object()
            params.cuda = torch.cuda.is_available()
            train(None, [], params, 3)
    """)
    flag = find(ctx, cst.Attribute, "params.cuda")
    assert sem.gpu_truth(flag) is True
    for text, per_step in (("out.max().item()", True), ("out.min().item()", True),
                           ("out.cpu()", False), ("out.sum().item()", True)):
        assert (sem.loops.step_loop(find(ctx, cst.Call, text)) is not None) is per_step, text


def test_a_comparison_of_a_tensor_placed_by_a_name_keeps_the_name_hint():
    ctx, sem = semantic("""
        def check(mask, dev):
            mask = mask.to(dev)
            ok = mask.min() >= 0
    """)
    test = find(ctx, cst.Comparison, "mask.min() >= 0")
    assert sem.value(test).place is Place.DEVICE and sem.value(test).hint
