from __future__ import annotations

from typing import Optional

import libcst as cst

from devicelint.builders import hoist_statement, hoistable_args
from devicelint.gate import IN_ANY_LOOP, IN_FUNCTION, WITH_ARGS
from devicelint.names import dotted_name
from devicelint.rule import Rule
from devicelint.semantic import Kind, Place
from devicelint.semantic import dataflow, hoststep
from devicelint.semantic.model import call_arg, keyword_arg
from devicelint.runtime_spec import Find, LineRecord, ProbeRun, RuntimeSpec, Watch

# Host reads of device data: each copies device memory to the host (and waits for the GPU).
_HOST_READ_METHODS = ("item", "tolist", "cpu", "numpy")


def _may_upload_in(index, module, _name: str) -> bool:
    """Whether some function of another local module makes a call `upload` may accept (a
    `.to(...)` / `.cuda(...)`, or a factory given `device=`): `_param_round_trips` of one of
    its functions follows the calls it makes into the module's other functions. True when
    the text is not looked at."""
    copying = dataflow._copying_functions(index, module)
    return copying is None or bool(copying)


# How many calls deep `_param_round_trips` follows a function's calls of its file's functions.
_ROUND_TRIP_CALLS = 2


def _may_round_trip_in(index, module, name: str) -> bool:
    """Whether the function `name` of another local module may make, itself or in the
    functions of its module it calls (as `_param_round_trips` follows them), a call `upload`
    may accept. True when the text is not looked at."""
    return dataflow.may_reach_copy(index, module, name, calls=_ROUND_TRIP_CALLS)


def _class_cannot_copy(sem, qualified: str) -> bool:
    """Whether `qualified`, a class of another local module (`project_class_symbol`), lies in
    a module whose text makes no call a copy question accepts."""
    symbol = sem.project_class_symbol(qualified)
    return symbol is not None and not _may_upload_in(sem.project.index, symbol.module, symbol.name)


class RepeatedTransfer(Rule):
    """## What it does
    Flags host↔device copies that a loop repeats for nothing:
    - the same host data copied to the device on every iteration: a `.to(device)`,
      `.cuda()` or `torch.tensor(data, device=...)` inside a loop (or comprehension) whose
      data and arguments the loop never changes (every binding they read is made before
      the loop, nothing in the loop changes them in place or hands them to a call that
      might, and they are computed by deterministic calls only): `for _ in range(n): w =
      weights.to(device)`, `torch.where(m, torch.tensor(float("-inf")).to(x.device), x)`
      in a decoding loop, `torch.tensor([1000] * n, device=dev)` with `n` a number the loop
      does not change (a device bound before the loop stays the same device, whatever calls
      it is handed to);
    - round trips inside a loop: data copied to the device and straight back in the same
      iteration (`g = t.to(device)` then `g.to("cpu")` / `g.cpu()`; also through
      `.detach()`/`.data`, a batch rebound to its device copy, `target = target.cuda()`, and
      a field of a batch moved by a comprehension, `batch = tuple(t.to(dev) for t in batch)`
      then `x, y = batch`; a loader the file does not show counts as host data when the loop
      sends its elements to the device), and data read back from
      the device (`.item()`, `.tolist()`, `.cpu()`, `int(t)`, `chr(t)`, a legacy constructor given a
      list that holds it: `torch.LongTensor([[ni]])`) that the same loop copies to
      the device again (`tokens.append(out.argmax().item())` … `torch.tensor(tokens).to(device)`),
      or writes into a device tensor (`ys.fill_(token)`). The data read is device data by its
      value, or because the loop computes it from what it copied to the device (`x =
      torch.LongTensor([ids[-1]]).to(dev)`, `out = model(x)`, `ids.append(out.argmax().item())`:
      a decoding loop's cycle, whatever `model` is). Also through a function of this file
      that the loop calls and that copies to the device data computed from a parameter
      (`preprocess(self.image)` doing `torch.from_numpy(np.float32(image)).cuda()`), when the
      argument is data the loop read back (`self.image = out.cpu().numpy()`) or the
      function's own result, read back inside it on the previous call
      (`tokens.append(predict(model, tokens[-1]))`, `predict` returning a sample of
      `p.cpu()`); reported at the call, naming the copy's line and the read. Also through a
      function of another local module (through the project index), the copy made in it or
      in a helper of its file that gives back its argument copied (`str2tensor(char)`
      calling `cuda_variable(torch.LongTensor(codes))`). Not through what
      a method of an object the file does not show returns (`state, reward, done, _ =
      env.step(action)`: a simulator computes a new observation on the host from the action
      read back; copying it is no round trip), through a helper or inline (`next_obs, *_ =
      envs.step(action.cpu().numpy())` then `torch.Tensor(next_obs).to(device)`);
    - round trips inside one call of a function that runs again and again (a module's
      `forward`, an object's `__call__`, or a function called in a loop of the file up to
      four calls up): data read back from the device in that call (on the device by its
      value, or computed from what the function copied there; also through a function of
      the file whose result is such a read) and copied to the device again (`pieces =
      torch.cat((pieces, out.cpu()))` in a `forward`, then `pieces.cuda()`), reported at
      the copy; and a call, in a loop, of a function of another local module, or of a module
      whose class another local module defines (`criterion(scores, targets)` runs its
      `forward`, and the methods of the file it calls), or of a method of an object of such
      a class (`ada_augment.tune(real_pred)` doing `torch.tensor((torch.sign(pred).sum()
      .item(), n), device=pred.device)`), that reads an argument back to the
      host and copies what it computes from it to the device (`t = one_hot(y.data.cpu())`
      then `t.cuda()`), where that argument is on the device here: reported at the call,
      naming the copy and the read;
    - host data a model keeps unchanged, copied to the device each time it runs: in a
      module's `forward` (or an object's `__call__`), a `.to(x.device)` or
      `torch.tensor(..., device=...)` of `self.table` that only `__init__` binds and no
      method changes (`self.P[:, :x.shape[1]].to(x.device)`): the same copy on every step
      (register it as a buffer, or keep a device copy);
    - a call, on every iteration of a loop, of a function of this file or of another local
      module (through the project index) that copies the same constants to the device on
      each call, in its straight-line body: `y = utils.normalize_batch(y)` in a training
      loop, where `normalize_batch` does `batch.new_tensor([0.485, 0.456, 0.406])` (the copy
      goes to the device of an argument that is on the device here, or to the accelerator);
      also under an `if` taken whenever there is a GPU and through a local bound once (a
      seq2seq `train()` doing `start = Variable(torch.LongTensor([[SOS_token]]))` then
      `if USE_CUDA: start = start.cuda()`; a local bound to an argument's device, `device =
      targets.device`, follows that argument); also a call of an object whose class another
      local module defines (its `__call__`, or a module's `forward`) that runs, in its
      straight-line body, a method of the object copying the same constants to the device
      it keeps (`self.build_targets(p, targets)` doing `torch.tensor([[0, 0], [1, 0]],
      device=self.device)`), the object made in this file or, for a parameter of a top-level
      function that no call of this file passes, by the files that import the function
      (`compute_loss = ComputeLoss(model)` then `val.run(..., compute_loss=compute_loss)` in
      train.py, the loop in val.py; asked in a file that itself imports a function or class
      of another local module); also a function of this file (or, called in a loop, of
      another local module) that, once on each of its calls (in its straight-line body, or
      on the first pass of a loop over `range(...)`: `token = target_var[c - 1] if c else
      str2tensor(SOS_token)` in a seq2seq `train()`), calls a helper of this file or of
      another local module that copies to the accelerator data computed from its
      parameters, given the same constants (`str2tensor` copying through its
      `cuda_variable`), or builds an object whose class (of that file or another local
      module) copies the same constants to the accelerator in the straight-line body of its
      `__init__` (`lpips = LPIPS().eval().to(device)` with `self.mu = torch.tensor([-0.03,
      -0.088, -0.188]).view(1, 3, 1, 1).cuda()` in `LPIPS.__init__`: a metric built for
      every batch), unless a throttle (`if i % 100 == 0:`) runs the call; the helper's
      call on that first pass is not taken for a copy on every iteration of its own loop;
      also a function of this file (or, called in a loop, of another local module) that
      copies, on every call, each element of a list parameter (`segs = [s.cuda() for s in
      segs]`), given a list written with an element the loop does not change that is a host
      tensor (`used = [first_seg] + [pair[1] for pair in que.queue]`: dino's reference
      segmentation, copied again for every frame).
      Reported at the call, naming the copy's line;
    - the same constants copied to the device in a function a loader of the file runs once
      per batch as its `collate_fn=` (or in a function that one calls: `bos =
      torch.tensor([0], device=device)`): reported at the copy, naming the loader;
    - a function of this file (or, called in a loop, of another local module) that copies
      data its callers pass (`th.from_numpy(arr).to(t.device)`, a window its own helpers
      build from a size argument, a tensor parameter copied as it is, `window.to(x.device)`,
      when the caller's argument is a host tensor, or a factory given such data and a device,
      `torch.tensor(mean, device=images.device)` in a `denormalize(images, mean, std)`, when
      the caller's argument is host data), where a caller passes the same host data
      every time (a loop-invariant value, `self.x` bound in `__init__` alone, or nothing for
      a parameter with a default) and runs again and again: in a loop (reported at its call,
      naming the copy's line), or called from a loop of the file or a module's `forward` up
      to four calls up (reported at the copy, naming the caller's line and the loop). Sizes
      are not data: a window built from an argument's channel count (`(_, channel, _, _) =
      img1.size()`, `create_window(window_size, channel)`) is taken for the same window on
      every call, as a loop's batches keep their shape. The copy may also sit under `if
      img1.is_cuda:` and go to `img1.get_device()`: it is made when the argument is on the
      device (`pytorch_ssim.ssim(sr, hr)` in a validation loop).

    A copy is also a call of a wrapper the file defines that gives back its first argument
    copied to the device: a function (`def to_gpu(t): return t.cuda()` when there is a GPU, the
    argument read nowhere else) or a lambda bound once (`Variable = lambda *args, **kwargs:
    autograd.Variable(*args, **kwargs).cuda() if USE_CUDA else autograd.Variable(*args,
    **kwargs)`, the RL notebooks' idiom): `Variable(proj_dist)` copies `proj_dist` as
    `proj_dist.cuda()` would (no fix is offered for it). Data computed on the host counts
    what the code writes into it in place, also through a view (`proj.view(-1).index_add_(0,
    idx, next_dist)` with `next_dist = target_model(s).data.cpu()`).

    It decides from values (where each value lives, where each binding is made), never from
    what variables are called; a device argument the code does not define (a parameter
    called `device` with no call site or annotation) is taken for a device, and the message
    says it rests on the name. It stays silent on data rebound on every iteration (a loader
    batch, a row of the loop: those are DL001's), on data changed in the loop, on copies
    each iteration keeps apart (a comprehension's elements, `bufs.append(x.to(device))`:
    distinct tensors, such as buffers for `all_gather`), on a
    factory that fills a new tensor (`torch.zeros(n).to(device)`: DL007's), on loops that
    run once (`for ...: ...; break`), on a copy and a read-back in the two exclusive arms of
    one flag (`if use_cuda: x = x.cuda()` ... `if use_cuda: ... else: y.cpu()`), on a
    read-back after the inner loop that made the copies (`if epoch == 0: save(batch.cpu())`
    once per epoch: one read, not one per copy), on transfers whose target changes per iteration (one
    copy per device), on device buffers filled with constants (`buf.fill_(0)`), on values
    read back that the loop did not compute from its own upload and that are not known to be
    on the device, on a read-back of the first batch only (`if not kept: kept.append(y.cpu())`)
    or after the host copy was changed in place (a staging buffer refilled: the device copy
    is then the only one), on a function's round trip when it runs once, or when the
    argument it reads back is on the host at the call, on copies of the batch's own data in
    a `collate_fn`, on code that runs only without a GPU (`if not use_cuda:`), and on a
    number uploaded for a `torch.distributed` collective and read back (`count =
    torch.tensor([n], device=d)`, `dist.all_reduce(count)`, `n = count.item()`: the
    collective needs the device copy; the read is DL004's, per step even under `if
    args.distributed:`, since a bare flag guarding a collective throttles nothing).

    ## Why is this bad?
    Each copy pays a fixed cost whatever its size, plus the bytes, and a copy back to the
    host also makes the host wait for the GPU. Measured for this project on an H100 (torch
    2.11, best of 5): the seed's example, a 1000×1000 float32 tensor copied to the device
    and back 100 times, took 70.3 ms; with the upload moved above the loop 40.3 ms, and
    working on the device instead of copying back 1.6 ms (44×). The upload alone, 100 times,
    took 36.0 ms against 0.34 ms once. A constant rebuilt and copied on every iteration
    (`torch.where(y < 0, torch.tensor(float("-inf")).to(dev), y)`, 1,000 iterations) took
    42.6 ms against 23.5 ms with the constant copied once (about 19 µs per copy): the
    figure for a small constant such as a repeated label list. A batch's labels copied to the
    device and back with `.cpu()` make the seed's round trip above (both copies, and the wait
    for the GPU on the way back).
    Run `devicelint confirm` on a GPU machine to measure it in your code.

    ## Example
    ```python
    weights = torch.randn(1000, 1000)
    for _ in range(100):
        w = weights.to(device)          # the same 4 MB copied 100 times
        out = w.to("cpu")               # and copied back
    ```

    ## Use instead
    ```python
    weights = weights.to(device)        # once, before the loop
    for _ in range(100):
        out = weights * 2               # work on the device, read back only what you need
    ```

    ## Fix safety
    An unsafe fix (`--unsafe-fixes`) moves a loop-invariant transfer above its loop when it
    is a one-line statement `name = <transfer>` directly in the body of a `for`/`while`
    loop (not under an `if`, not the body's only statement), `name` is bound nowhere else in
    the loop, read nowhere in it before that statement (nor by the loop's iterable or
    test), and not changed in place in it, and the transfer's arguments call nothing but
    `torch.device(...)`. The values are the same, but:
    - the copy now runs even when the loop runs zero times, and `name` is then bound after
      the loop where it was not;
    - an error raised by the copy (out of memory) is raised before the loop's first
      iteration instead of inside it;
    - later iterations share one device tensor instead of each getting a fresh copy (the
      fix is not offered when the loop changes `name` in place; a callee that keeps a
      reference and changes it later would now see the shared tensor).
    There is no fix for round trips (what to keep on the device is a design choice), for
    transfers inside expressions or comprehensions, under conditions, or on multi-line
    statements.
    """

    code = "DL016"
    name = "repeated-transfer"
    summary = "The same host data copied to the device on every loop iteration, or a host↔device round trip"
    message = (
        "`{call}` copies the same host data to the device every iteration (loop at {line})"
    )
    hint = "copy once before the loop and reuse it; keep values read back on the device"
    back_message = (
        "`{call}` copies back to the host what {line} copied to the device this "
        "iteration"
    )
    reupload_message = (
        "`{call}` copies back to the device data read from it at {line} "
        "(`{read}`)"
    )
    helper_trip_message = (
        "`{call}(...)` copies to the device ({copy}) data read back from it at "
        "{line} (`{read}`)"
    )
    function_trip_message = (
        "`{call}` copies back to the device data read from it at {line} (`{read}`), "
        "{again}"
    )
    foreign_trip_message = (
        "`{call}(...)` reads an argument back from the device and copies it there again "
        "({lines} of {path})"
    )
    collate_message = (
        "`{call}` copies the same host data to the device in `{function}`, once per batch "
        "(loader at {line})"
    )
    per_call_message = (
        "`{call}` copies the same host data to the device on every call of `{function}` "
        "({line})"
    )
    call_message = (
        "`{call}(...)` copies the same host data to the device on every call "
        "({line})"
    )
    helper_message = (
        "`{call}` copies the same host data to the device on every call of `{function}` "
        "({site} passes it, {again})"
    )
    element_message = (
        "`{call}(...)` copies the same host data to the device on every call (`{element}`, an "
        "element of the list it is given, copied at {line})"
    )
    inner_message = (
        "`{call}(...)` copies the same host data to the device on every call (`{inner}(...)` at "
        "{site}, copied at {line})"
    )
    hint_message = " (`{target}` is taken for a device from its name only)"
    tokens = (".to(", ".cuda(", "device=", ".cpu(", ".fill_(")

    @staticmethod
    def gate(facts) -> bool:
        """Each reporting path needs an upload (`upload`, `dataflow`'s per-call and
        parameter uploads: `.cuda()`, `.to(device)`, `torch.tensor(..., device=)`;
        devicelint/gate.py `uploads`): in a loop (a repeated upload; a download needs one
        there too), or in a function that runs again and again (a `forward`/`__call__`, or
        one called in a loop: the file has a loop); or a `.fill_(v)` in a loop and
        `p.new_tensor(...)` in a function called in a loop, each into a tensor on the
        device (`device_placing`); or a call in a loop of another local module's function
        that may copy (`dataflow.foreign_call_uploads`'s first look). A call of a wrapper
        that gives back its argument moved (`dataflow.wrapper_move`) has its `.cuda()` /
        `.to(device)` in the wrapper's body, a function or lambda (IN_FUNCTION), and is
        reported only in a loop or in a function that runs again and again. Another local
        module's function copying what its caller passes, and a method of another module's
        object making a round trip, are reported only at a call in a loop of a file that
        imports a local module (has_any_loop and imports_foreign). A function of the file
        whose call, once per call, runs a helper copying the same data (`inner_copies`) is
        reported at a call in a loop: the helper's copy is in a function of this file
        (IN_FUNCTION, with a loop) or of an imported local module (imports_foreign); so is
        one building an object whose `__init__` copies (an `__init__` of this file:
        IN_FUNCTION, with a loop; of another module: imports_foreign), and another local
        module's function called in a loop whose own inner copies are in its file
        (imports_foreign). An object a parameter is given by the files importing the
        function is looked for only when the file imports a local module itself
        (`_imports_local`, the same test as imports_foreign). A function copying each
        element of a list parameter (`element_uploads`) makes the copy in its body: this
        file's (IN_FUNCTION, with a loop) or an imported local module's (imports_foreign).

        Each of those copies in another module is a call `.to(...)`, `.cuda(...)`,
        `.new_tensor(...)` or one given `device=` (`upload`, `_constant_upload`,
        `_param_uploads`, `wrapper_move`: as dataflow's `_may_copy` first look says) in
        the file whose model finds it, in code the imported function or class runs as
        that model follows it: its own body, a function, class or lambda of its module
        it names (a helper, a method `self.f()`, a constructor, `str2tensor` calling
        `cuda_variable`), or one of a further module it imports (a helper's helper): so
        the file must use an imported function or class whose closure
        (`gate.may_copy_through`) holds such a call (`uses_foreign`). A function so: called
        in a loop (its own copies, its inner ones), or in a function of the file that a call
        in a loop may run (`inner_copies`, `element_uploads` of the file's function:
        `may_call_own_in_loop`), or passed as a value (a parameter called in a loop,
        `_passed_function`); a class: built or passed anywhere (its object called in a loop,
        its `__init__` run by `_constructor_copy`), not only named in an annotation or an
        `isinstance`. Only the object a parameter is given by an importing file
        (`importer_instances`) may be of a class the file does not name: asked for a call
        in a loop of a top-level function's parameter (`calls_parameter_in_loop`), with any
        local import (`_imports_local`)."""
        if facts.uploads(IN_ANY_LOOP):
            return True
        if facts.uploads(IN_FUNCTION) and (facts.has_any_loop or facts.function_names & {"forward", "__call__"}):
            return True
        if (facts.calls_method(("fill_",), IN_ANY_LOOP | WITH_ARGS)
                or facts.has_any_loop and facts.calls_method(("new_tensor",), IN_FUNCTION)) and facts.device_placing():
            return True
        if facts.uploads(IN_FUNCTION) and facts.uses_keyword(("collate_fn",)):
            return True  # constants copied in a loader's collate_fn (`check_collate_copy`)
        if facts.has_any_loop:
            from devicelint.gate import TYPE_TEST, VALUE_USE, may_copy_through

            def copies(symbol, flags: int, view) -> bool:
                if symbol.kind == "function" and not flags & (IN_ANY_LOOP | VALUE_USE) and not (
                        flags & IN_FUNCTION and facts.may_call_own_in_loop()):
                    return False
                if not flags & ~TYPE_TEST:
                    return False  # only an `isinstance` test's class
                return may_copy_through(symbol, view)

            if facts.uses_foreign(copies):
                return True  # a call, in a loop, of another file's function, module or object
            if facts.imports_foreign() and facts.calls_parameter_in_loop():
                return True  # an object the importing files make (`importer_instances`)
        return False
    fixable = True

    def leave_Call(self, node: cst.Call) -> None:
        func = node.func
        if type(func) is cst.Attribute and func.attr.value == "fill_":
            self.check_written_back(node)
            return
        if type(func) is cst.Attribute and func.attr.value in ("to", "cuda", "cpu"):
            pass
        elif type(func) is cst.Name and dataflow.wrapper_move(self.ctx.semantic, node) is not None:
            pass  # `Variable(x)` with `Variable` a lambda (or function) giving back `x.cuda()`
        elif type(func) not in (cst.Attribute, cst.Name) or keyword_arg(node, "device") is None:
            if not self.check_helper_round_trip(node) and not self.check_foreign_round_trip(node):
                self.check_uploading_call(node)
            return  # neither a move nor a factory given a device
        loops = self.ctx.loops(node)
        if not loops:
            self.check_per_call(node)
            return
        sem = self.ctx.semantic
        upload = self.upload(node)
        if upload is not None:
            if not sem.on_gpu_path(node):
                return
            moved, label, hint = upload
            suffix = self.hint_message.format(target=hint) if hint is not None else ""
            loop = self.invariant_loop(node, moved, loops)
            if loop is not None:
                self.report_invariant(node, moved, loop, label, suffix)
                return
            read = self.device_read(node, moved, loops, follow=self._not_host_step)
            if read is not None:
                self.report(node, self.reupload_message.format(
                    call=label, line=self._line(read), read=self._short(read)) + suffix)
            return
        if self.is_download(node) and sem.on_gpu_path(node):
            source = self.uploaded_here(node.func.value, loops)  # type: ignore[union-attr]
            if source is not None and self._each_copy_read(source, node, loops):
                label = f".{node.func.attr.value}()"  # type: ignore[union-attr]
                self.report(node, self.back_message.format(call=label, line=self._line(source)))

    def check_per_call(self, call: cst.Call) -> None:
        """A model's forward (`forward` of an nn.Module class, or `__call__`: what runs each
        time the object is called) that copies to the device host data the object keeps
        unchanged (`self.table`, bound in `__init__` only) or constants: the same copy on
        every step."""
        sem = self.ctx.semantic
        function = sem.function_of(call)
        if function is None:
            return
        if self.check_function_round_trip(call, function):
            return
        if function.name.value not in ("forward", "__call__"):
            if not self.check_collate_copy(call, function):
                self.check_helper_copy(call, function)
            return
        owner = sem.parent(sem.parent(function))
        if not isinstance(owner, cst.ClassDef):
            return
        if function.name.value == "forward" and owner not in sem.module_classes().values():
            return
        if isinstance(sem.parent(call), cst.Expr):
            return  # the copy is thrown away: DL006's
        upload = self.upload(call)
        if upload is None or not sem.on_gpu_path(call):
            return
        moved, label, hint = upload
        if not self._host_data(sem.value(moved)) or self._kept(call):
            return
        if dataflow.fresh_fill(sem, moved, depth=0) is not None:
            return  # a fresh fill: DL007 (create it on the device)
        if not dataflow.same_every_call(sem, moved, function):
            return
        if not all(self._same_target(arg.value, function) for arg in call.args if arg.value is not moved):
            return
        suffix = self.hint_message.format(target=hint) if hint is not None else ""
        self.report(call, self.per_call_message.format(
            call=label, function=function.name.value, line=self._line(function)) + suffix)

    def check_function_round_trip(self, call: cst.Call, function: cst.FunctionDef) -> bool:
        """A copy to the device, in a function that runs again and again (a module's
        `forward`, an object's `__call__`, or a function called in a loop of the file, a few
        calls up: `dataflow.repeats`), of data the same call of the function computed from a
        read of device data back to the host (`t = one_hot(y.data.cpu())` then
        `t.cuda()`; `char = torch.cat((char, out.cpu()))` then `char.cuda()`): a round trip
        on every call. The data read is on the device by its value, or computed from what
        the function itself copied there; also through a function of the file whose result is
        such a read. Reported at the copy, naming the read and what runs the function."""
        sem = self.ctx.semantic
        upload = self.upload(call)
        if upload is None or not sem.on_gpu_path(call):
            return False
        moved, label, hint = upload
        if not self._host_data(sem.value(moved)):
            return False  # (a device tensor indexed by a mask read back is no copy of it)
        again = dataflow.repeats(sem, function)
        if again is None:
            return False
        read = self._function_read(call, moved, function)
        if read is None:
            return False
        if again is function:
            where = f"on every call of `{function.name.value}`"
        elif isinstance(again, cst.FunctionDef):
            where = f"run by `{again.name.value}` at {self._line(again)}"
        else:
            where = f"run by the loop at {self._line(again)}"
        suffix = self.hint_message.format(target=hint) if hint is not None else ""
        self.report(call, self.function_trip_message.format(
            call=label, line=self._line(read), read=self._short(read), again=where) + suffix)
        return True

    def _function_read(self, call: cst.Call, moved: cst.BaseExpression,
                       function: cst.FunctionDef) -> Optional[cst.CSTNode]:
        """A read back of device data, in `function`, that `moved` (copied by `call`) is
        computed from, else None (see `check_function_round_trip`)."""
        sem = self.ctx.semantic
        memo = sem.__dict__.setdefault("_dl016_function_uploads", {})
        if id(function) not in memo:
            memo[id(function)] = tuple(
                node for node in self.ctx.descendants(function, cst.Call, (cst.FunctionDef, cst.ClassDef, cst.Lambda))
                if isinstance(node.func, (cst.Attribute, cst.Name)) and self.upload(node) is not None)
        uploads = tuple(node for node in memo[id(function)] if node is not call)
        for node, d in dataflow.data_nodes(sem, moved, function, depth=8, follow=self._not_host_step,
                                           through_changes=True):
            if d is not None or not isinstance(node, cst.Call) or node is call:
                continue
            operand = self._host_read_operand(node)
            read = None
            if operand is not None and self._device_data(operand, uploads, function):
                read = node
            elif operand is None and sem.syncs.callee(node) is not None:
                read = self._returned_read(node, whole=True)
            if read is not None and not dataflow.exclusive_arms(sem, call, node, function):
                return read
        return None

    def check_collate_copy(self, call: cst.Call, function: cst.FunctionDef) -> bool:
        """A copy of the same constants to the device (`dataflow.per_call_uploads`: `bos =
        torch.tensor([0], device=device)` in the function's straight-line body) in a function
        that a loader of the file runs once per batch as its `collate_fn=` (directly, or
        through the function given: `dataflow.collate_loader`). Reported at the copy, naming
        the loader."""
        sem = self.ctx.semantic
        if not dataflow.may_name_collate_fn(sem):
            return False  # no loader of the file takes a collate_fn=: collate_loader is None
        if not any(upload.node is call and not upload.follows for upload in dataflow.per_call_uploads(sem, function)):
            return False
        loader = dataflow.collate_loader(sem, function)
        if loader is None or not sem.on_gpu_path(call):
            return False
        upload = self.upload(call)
        label = upload[1] if upload is not None else self._short(call.func)
        hint = upload[2] if upload is not None else None
        suffix = self.hint_message.format(target=hint) if hint is not None else ""
        self.report(call, self.collate_message.format(
            call=label, function=function.name.value, line=self._line(loader)) + suffix)
        return True

    def check_helper_copy(self, call: cst.Call, function: cst.FunctionDef) -> None:
        """A function's copy of data its callers decide (`th.from_numpy(arr).to(t.device)`),
        where a caller passes the same data on every call (`self.alphas`, bound in
        `__init__` alone) and runs again and again (called in a loop of the file, or in a
        module's `forward`, a few calls up): the same copy every time. Reported here, where
        the copy is; a caller in a loop is reported at its call (`check_uploading_call`)."""
        sem = self.ctx.semantic
        upload = next((u for u in dataflow.param_uploads(sem, function) if u.node is call), None)
        if upload is None or not sem.on_gpu_path(call):
            return
        for site, bound in dataflow.call_sites(sem, function):
            caller = sem.function_of(site)
            if caller is None or caller is function or caller.name.value == "__init__" \
                    or self.ctx.loops(site) or not self._passes_same_data(site, bound, upload, function):
                continue
            again = dataflow.repeats(sem, caller)
            if again is None:
                continue
            if isinstance(again, cst.FunctionDef):
                where = f"run by `{again.name.value}` at {self._line(again)}"
            else:
                where = f"run by the loop at {self._line(again)}"
            label = f".{call.func.attr.value}()"  # type: ignore[union-attr]
            self.report(call, self.helper_message.format(
                call=label, function=function.name.value, site=self._line(site), again=where))
            return

    def _passes_same_data(self, site: cst.Call, bound: dict, upload,
                          function: Optional[cst.FunctionDef] = None) -> bool:
        """`site` passes, for the parameters the copy's data comes from, the same data each
        time it runs (or passes none, for a parameter of `function` with a default: made once,
        when the function is defined), and for those whose device it follows, data not on
        the CPU."""
        defaults = {p.name.value for p in (*function.params.posonly_params, *function.params.params,
                                           *function.params.kwonly_params)
                    if p.default is not None} if function is not None else set()
        for name in upload.data:
            args = bound.get(name)
            if args is None and name in defaults:
                continue
            if args is None or len(args) != 1 or not dataflow.constant_at(self.ctx.semantic, args[0], site):
                return False
            if name in upload.passed and not self._host_data(self.ctx.semantic.value(args[0])):
                return False  # copied as it is: the copy is one when the argument is on the host
        for name in upload.follows:
            args = bound.get(name)
            if args is None or len(args) != 1 or self.ctx.semantic.value(args[0]).place is Place.CPU:
                return False
        return True

    def check_uploading_call(self, call: cst.Call) -> None:
        """A call, on every iteration of a loop, of a function (of this file or another local
        module) that copies the same constant host data to the device on each call
        (`utils.normalize_batch(y)` whose body does `batch.new_tensor([0.485, ...])`), where
        the copy goes to the device whatever the arguments or to the device of an argument
        that is on the device here."""
        loops = self.ctx.loops(call)
        if not loops or type(call.func) not in (cst.Name, cst.Attribute):
            return
        loop = loops[0]
        sem = self.ctx.semantic
        if dataflow.first_pass_only(sem, call, loop):
            return  # once per run of the loop (`prev if c else start()`): see `inner_copies`
        found = sem.syncs.callee(call)
        copies: tuple = ()
        if found is not None:
            other, function = sem, found[0]
            bound = {name: args[0] for name, args in found[1].items() if len(args) == 1}
            uploads = dataflow.per_call_uploads(other, function)
            copies, passed = dataflow.param_uploads(sem, function), found[1]
        else:
            foreign = dataflow.foreign_call_uploads(sem, call)
            objects = foreign is None
            if foreign is None:
                foreign = self._object_call_uploads(call)
            if foreign is None:
                return
            other, function, uploads = foreign
            bound = dataflow.bind_arguments(function, call)
            if not objects:
                # another module's function copying data its callers pass (`ssim(sr, hr)`
                # building its window from a size argument's default)
                copies, passed = dataflow.param_uploads(other, function), other.syncs._bind(function, call, False)
        inner = dataflow.inner_copies(other, function) if other is sem or not objects else ()
        elements = dataflow.element_uploads(other, function) if other is sem or not objects else ()
        # (most callees copy nothing: the loop's facts are asked only when one does)
        if not uploads and not copies and not inner and not elements \
                or isinstance(loop, (cst.For, cst.While)) and sem.loops.facts(loop).runs_once:
            return
        for upload in uploads:
            if not all(name in bound and self._on_device(bound[name]) for name in upload.follows):
                continue
            if not sem.on_gpu_path(call):
                return
            if other is sem:
                line, related = self._line(upload.node), []
            else:
                # The other file by its path (reports name it from the working directory, in
                # the message and as a related location), not its bare name.
                site = other.ctx.site(upload.node)
                line, related = site.ref(), [(site, "the copy made on every call")]
            self.report(call, self.call_message.format(call=self._short(call.func), line=line),
                        related=related)
            return
        for copy in copies:
            if self._passes_same_data(call, passed, copy, function) and sem.on_gpu_path(call):
                if other is sem:
                    line, related = self._line(copy.node), []
                else:
                    site = other.ctx.site(copy.node)
                    line, related = site.ref(), [(site, "the copy made on every call")]
                self.report(call, self.call_message.format(call=self._short(call.func), line=line),
                            related=related)
                return
        for name, copy in elements:
            # `label_propagation(..., used_segs)` with `used_segs = [first_seg] + [...]`: an
            # element the loop does not change, on the host, copied on every call
            args = passed.get(name, ()) if other is sem else \
                other.syncs._bind(function, call, False).get(name, ())
            if len(args) != 1 or not isinstance(args[0], cst.BaseExpression):
                continue
            same = next((e for e in dataflow.listed_elements(sem, args[0])
                         if sem.value(e).kind is Kind.TENSOR and self._host_data(sem.value(e))
                         and dataflow.constant_at(sem, e, call)), None)
            if same is None or not sem.on_gpu_path(call):
                continue
            if other is sem:
                line, related = self._line(copy), []
            else:
                site = other.ctx.site(copy)
                line, related = site.ref(), [(site, "the copy made on every call")]
            self.report(call, self.element_message.format(
                call=self._short(call.func), element=self._short(same), line=line), related=related)
            return
        for copy in inner:
            # a call the function makes once per call, of a function copying the same data
            # (`str2tensor(SOS_token)` in a seq2seq `train()`); not when a throttle runs it
            if sem.loops.throttled(call, loop) or not sem.on_gpu_path(call):
                return
            site = copy.other.ctx.site(copy.upload.node)
            where = site.where() if copy.other is sem else site.ref()
            related = [(site, "the copy made on every call")]
            if other is sem:
                at, inner_name = self._line(copy.site), self._short(copy.site.func)
            else:  # the site is in the callee's own file (another local module)
                made = other.ctx.site(copy.site)
                at = made.where() if copy.other is other else made.ref()
                inner_name = " ".join(other.ctx.code(copy.site.func).split())[:40]
            self.report(call, self.inner_message.format(
                call=self._short(call.func), site=at, inner=inner_name, line=where), related=related)
            return

    def _object_call_uploads(self, call: cst.Call):
        """(the other file's model, the method, its uploads) for a call of an object whose class
        another local module defines (`compute_loss(pred, targets)` with `compute_loss =
        ComputeLoss(model)`: its `__call__`, or a module's `forward`), where a method of that
        class the call runs on every call, in its straight-line body (`self.build_targets(p,
        targets)`), copies the same constants to the device whatever the arguments
        (`dataflow.per_call_uploads` with no parameter followed). A copy made in `forward` or
        `__call__` itself is reported at the copy, in its own file (`check_per_call`)."""
        sem = self.ctx.semantic
        if sem.project is None or type(call.func) is not cst.Name:
            return None
        if self._calls_a_class_that_cannot_copy(call):
            return None
        found = sem.syncs.module_forward(call)
        if found is None:
            methods = {}
            made_by = [(sem, made) for made in sem.syncs._instances(call.func, 0) or ()]
            if not made_by and self._imports_local():
                # a parameter given by the files that import the function (`validate.run(...,
                # compute_loss=compute_loss)` in train.py), in a file that itself imports a
                # function or class of another local module (as the gate asks)
                made_by = sem.syncs.importer_instances(call.func) or []
            for where, made in made_by:
                qual = where.qualname(made.func)
                if qual and _class_cannot_copy(where, qual):
                    return None  # its methods copy nothing: no `uploads`, or several classes
                owner = where._project_class(qual) if qual else None
                method = owner[0]._method(owner[1], "__call__") if owner is not None else None
                if method is None:
                    return None
                methods[id(method)] = (owner[0], method)
            if len(methods) != 1:
                return None
            found = next(iter(methods.values()))
        other, function = found
        if other is sem:
            return None
        positional = [*function.params.posonly_params, *function.params.params]
        if not positional:
            return None
        own = positional[0].name.value
        uploads = []
        for inner in dataflow._straight_line_calls(other, function):
            receiver = inner.func.value if isinstance(inner.func, cst.Attribute) else None
            if not isinstance(receiver, cst.Name) or receiver.value != own \
                    or not all(d.kind == "param" for d in other.defs(receiver)):
                continue  # a method of the object itself: `self.build_targets(...)`
            callee = other.syncs.callee(inner)
            if callee is None or callee[0] is function or not other.syncs._is_method(callee[0]):
                continue
            first = [*callee[0].params.posonly_params, *callee[0].params.params][0].name.value
            for upload in dataflow.per_call_uploads(other, callee[0]):
                if upload.follows and upload.follows != {first}:
                    continue
                if upload.follows:
                    # `device=self.device`: the device the object keeps, a device by its value
                    target = keyword_arg(upload.node, "device") or call_arg(upload.node, 0, "\0")
                    if other.device_place(target)[0] is not Place.DEVICE or other.value(target).hint:
                        continue
                uploads.append(dataflow.CallUpload(upload.node, frozenset()))
        return (other, function, tuple(uploads)) if uploads else None

    def _imports_local(self) -> bool:
        """The file binds a function or class of another local module (a star import, an
        import of one, or a call `module.function(...)` of an imported local module): the
        gate's `imports_foreign`."""
        known = self.__dict__.get("_local_imports")
        if known is None:
            sem = self.ctx.semantic
            view = sem.project
            known = False
            if view is not None:
                imports = self.ctx.imports
                known = bool(imports.star_modules)

                def foreign(dotted: str) -> bool:
                    symbol = view.resolve(dotted)
                    return symbol is not None and symbol.kind in ("function", "class") \
                        and symbol.module is not view.module

                if not known:
                    # the names an import binds that the file uses (not as an attribute's
                    # name): only those names' parents are looked at
                    aliases, used = imports.aliases, set()
                    for node in self.ctx.iter_nodes(cst.Name):
                        if node.value not in aliases or node.value in used:
                            continue
                        parent = self.ctx.parent(node)
                        if type(parent) not in (cst.ImportAlias, cst.ImportFrom, cst.Attribute) \
                                or type(parent) is cst.Attribute and parent.value is node:
                            used.add(node.value)
                    known = any(name in used and foreign(name) for name in aliases)
                if not known:
                    for node in self.ctx.iter_nodes(cst.Call):
                        dotted = dotted_name(node.func) if isinstance(node.func, cst.Attribute) else None
                        if dotted and dotted.partition(".")[0] in imports.aliases and foreign(dotted):
                            known = True
                            break
            self.__dict__["_local_imports"] = known
        return known

    def check_helper_round_trip(self, call: cst.Call) -> bool:
        """A call, in a loop, of a function of this file that copies to the device data
        computed from one of its parameters, where the argument is data the loop read back
        from the device (`self.image = out.cpu().numpy()` ... `preprocess(self.image)`), or
        the function's own result read back on an earlier call (`tokens.append(predict(m,
        tokens[-1]))` with `predict` returning a sample drawn from `p.cpu()`). Reported at the
        call, naming the copy's line and the read."""
        loops = self.ctx.loops(call)
        if not loops or type(call.func) not in (cst.Name, cst.Attribute):
            return False
        if all(arg.star for arg in call.args):
            return False  # no argument the callee's parameters bind (SyncModel._bind): none to follow
        sem = self.ctx.semantic
        found = sem.syncs.callee(call)
        reader, other, helpers = self, sem, True
        if found is None:
            # a top-level function of another local module (`str2tensor(predicted_char)`),
            # whose model is built only when its text may copy what it is handed
            where = self._foreign_where(call) if sem.project is not None else None
            foreign = sem.syncs.foreign_function(call) if where is not None \
                and dataflow.may_move_to_device(sem.project.index, *where) \
                and self._reads_back_an_argument(call, loops) else None
            if foreign is None or foreign[0] is sem:
                return False
            other, function = foreign
            found = function, other.syncs._bind(function, call, False)
            reader = type(self)(other.ctx)
            # what its calls run is asked only when one may give back a copy (the other
            # file's model is cold: each question computes much of it)
            helpers = dataflow.reaches_moved_return(sem.project.index, *where)
        function, bound = found
        for upload, params in reader._param_copies(function, helpers):
            for name in sorted(params):
                for arg in bound.get(name, ()):
                    if not isinstance(arg, cst.BaseExpression):
                        continue
                    read = self._read_back_into(call, arg, loops)
                    if read is not None and sem.on_gpu_path(call):
                        related = []
                        if other is sem:
                            copy = self._line(upload)
                        else:
                            site = other.ctx.site(upload)
                            copy, related = site.ref(), [(site, "the copy to the device")]
                        self.report(call, self.helper_trip_message.format(
                            call=self._short(call.func), copy=copy,
                            line=self._line(read), read=self._short(read)), related=related)
                        return True
        return False

    def _passes_device_data(self, call: cst.Call) -> bool:
        """Whether an argument `call` binds to a parameter is on the device here: each of
        `check_foreign_round_trip`'s paths reports a round trip on such an argument (bound to
        a parameter other than `self`; only the call's own unstarred arguments are bound:
        SyncModel._bind)."""
        return any(self._on_device(arg.value) for arg in call.args if not arg.star)

    def _foreign_class(self, call: cst.Call) -> Optional[str]:
        """The one module class of another local module whose instance `call` calls
        (`syncs.shown_class`, the class `module_forward` would read), its model not built."""
        sem = self.ctx.semantic
        cls = sem.syncs.shown_class(call)
        return cls if cls is not None and cls not in sem.module_classes() else None

    def _calls_a_class_that_cannot_copy(self, call: cst.Call) -> bool:
        """Whether `call` calls an instance of another module's class (`_foreign_class`)
        whose module's text makes no call a copy question accepts (`_may_upload_in`): its
        `forward`, `__call__` and the methods they call copy nothing, so that module's model
        is not built to find that out (issue 13: the index's cost)."""
        cls = self._foreign_class(call)
        return cls is not None and _class_cannot_copy(self.ctx.semantic, cls)

    def _reads_back_an_argument(self, call: cst.Call, loops: list) -> bool:
        """Whether some argument `call` binds to a parameter (`SyncModel._bind`: the
        unstarred ones) is data the loop read back from the device (`_read_back_into`): what
        a helper round trip needs, asked before another file's model is built for it."""
        return any(self._read_back_into(call, arg.value, loops) is not None for arg in call.args if not arg.star)

    def check_foreign_round_trip(self, call: cst.Call) -> bool:
        """A call, on every iteration of a loop, of a function of another local module (or
        of a module whose class another local module defines: `criterion(preds, targets)`
        runs its `forward`; or a method of an object of such a class: `ada.tune(pred)`) that reads an argument's data back to the host and copies what
        it computes from it to the device again (`t = one_hot(y.data.cpu())` then
        `t.cuda()`: `_param_round_trips`), where that argument is on the device here: a
        round trip on every iteration. Reported at the call, naming the copy and the read."""
        loops = self.ctx.loops(call)
        if not loops or not isinstance(call.func, (cst.Name, cst.Attribute)):
            return False
        if all(arg.star for arg in call.args):
            return False  # no argument the callee's parameters bind (SyncModel._bind): none to follow
        sem = self.ctx.semantic
        if sem.project is None:
            return False
        if self._foreign_class(call) is not None and (
                self._calls_a_class_that_cannot_copy(call) or not self._passes_device_data(call)):
            return False  # no other file's model is built to find that out (issue 13)
        found = sem.syncs.module_forward(call)
        bound_self = found is not None
        if found is None and self._foreign_may_copy(call, _may_round_trip_in) and self._passes_device_data(call):
            found = sem.syncs.foreign_function(call)
        if found is None and isinstance(call.func, cst.Attribute):
            # `ada_augment.tune(real_pred)`: a method of an object whose class another local
            # module defines (one class)
            methods = sem.syncs.foreign_methods(call)
            if len(methods) == 1:
                found, bound_self = methods[0], True
        if found is None or found[0] is sem:
            return False  # the file's own functions: judged at their copy
        other, function = found
        loop = loops[0]
        if isinstance(loop, (cst.For, cst.While)) and sem.loops.facts(loop).runs_once:
            return False
        bound = other.syncs._bind(function, call, bound_self)
        reader = type(self)(other.ctx)
        for upload, read, params in reader._param_round_trips(function):
            if not any(self._on_device(arg) for name in sorted(params) for arg in bound.get(name, ())
                       if isinstance(arg, cst.BaseExpression)):
                continue
            if not sem.on_gpu_path(call):
                return False
            copied, back = other.ctx.site(upload), other.ctx.site(read)
            lines = f"lines {back.line} and {copied.line}" if back.cell is None or copied.cell is None \
                else f"cells {back.cell[0]}:{back.cell[1]} and {copied.cell[0]}:{copied.cell[1]}"
            self.report(call, self.foreign_trip_message.format(
                call=self._short(call.func), lines=lines, path=other.ctx.path),
                related=[(copied, "the copy to the device"), (back, "the read back to the host")])
            return True
        return False

    def _foreign_may_copy(self, call: cst.Call, look) -> bool:
        """Whether `call` runs a top-level function of another local module (the one
        `sem.syncs.foreign_function` finds) whose module's text `look(index, module, name)`
        says may copy to the device: when not, that module's model is not built for the
        question (issue 13: the index's cost)."""
        found = self._foreign_where(call)
        return found is not None and look(self.ctx.semantic.project.index, found[0], found[1])

    def _foreign_where(self, call: cst.Call):
        """(the other local module, the function's name) of the top-level function that
        `sem.syncs.foreign_function` finds for `call`, its model not built; else None."""
        return dataflow.foreign_function_module(self.ctx.semantic, call)

    def _param_round_trips(self, function: cst.FunctionDef, depth: int = 0) -> list:
        """(copy, read, parameters) for each copy to the device, in `function` (on the GPU
        path), of data computed from a read back to the host (`.cpu()`, `.item()`, ...:
        `_host_read_operand`) of data computed from the parameters: on a device argument,
        each call makes a round trip. Also through the methods and functions of the file it
        calls (two calls deep), with their parameters mapped to the arguments it passes."""
        sem = self.ctx.semantic
        memo = sem.__dict__.setdefault("_dl016_param_trips", {})
        if id(function) in memo:
            return memo[id(function)]
        memo[id(function)] = []  # a recursion adds nothing
        positional = [*function.params.posonly_params, *function.params.params]
        own = positional[0].name.value if positional and sem.syncs._is_method(function) else None
        nested = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
        found = []

        def params_of(expr) -> set:
            return {d.name for _, d in dataflow.data_nodes(sem, expr, function, depth=8, through_changes=True)
                    if d is not None and d.kind == "param" and d.name != own}

        for call in self.ctx.descendants(function, cst.Call, nested):
            if not isinstance(call.func, (cst.Attribute, cst.Name)):
                continue
            upload = self.upload(call)
            if upload is not None:
                if not sem.on_gpu_path(call) or sem.value(upload[0]).place is Place.DEVICE:
                    continue
                for node, d in dataflow.data_nodes(sem, upload[0], function, depth=8,
                                                   follow=self._not_host_step, through_changes=True):
                    if d is not None or not isinstance(node, cst.Call) or node is call:
                        continue
                    operand = self._host_read_operand(node)
                    if operand is None or dataflow.exclusive_arms(sem, call, node, function):
                        continue
                    params = params_of(operand)
                    if params:
                        found.append((call, node, frozenset(params)))
                        break
                continue
            if depth >= _ROUND_TRIP_CALLS:
                continue
            callee = sem.syncs.callee(call)
            if callee is None or callee[0] is function:
                continue
            for copy, read, params in self._param_round_trips(callee[0], depth + 1):
                mapped: set = set()
                for name in params:
                    for arg in callee[1].get(name, ()):
                        if isinstance(arg, cst.BaseExpression):
                            mapped |= params_of(arg)
                if mapped:
                    found.append((copy, read, frozenset(mapped)))
        memo[id(function)] = found
        return found

    def _param_copies(self, function: cst.FunctionDef, helpers: bool = True) -> list:
        """(copy, parameters its data is computed from) for each `.to(device)`/`.cuda()` of
        host data in `function` (not in a branch taken only without a GPU). `helpers` False:
        no call of `function` can run a function of the file giving back a copy (the
        module's text says so: `dataflow.reaches_moved_return`), so none is asked for."""
        sem = self.ctx.semantic
        memo = sem.__dict__.setdefault("_dl016_param_copies", {})
        if id(function) in memo:
            return memo[id(function)]
        found = []
        for call in self.ctx.descendants(function, cst.Call, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            func = call.func
            data = None
            if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
                upload = self.upload(call)
                if upload is not None and sem.on_gpu_path(call):
                    data = upload[0]
            elif helpers and isinstance(func, (cst.Name, cst.Attribute)):
                # a helper of the file that gives back its argument copied to the device
                # (`cuda_variable(torch.LongTensor(codes))`: `dataflow.returned_move`)
                helper = sem.syncs.callee(call)
                moved = dataflow.returned_move(sem, helper[0]) if helper is not None \
                    and helper[0] is not function else None
                if moved is not None and len(helper[1].get(moved[0], ())) == 1:
                    data = helper[1][moved[0]][0]
            if data is None or not isinstance(data, cst.BaseExpression) or not self._host_data(sem.value(data)):
                continue
            params = {d.name for _, d in dataflow.data_nodes(sem, data, function, depth=8, through_changes=True)
                      if d is not None and d.kind == "param"}
            if params:
                found.append((call, params))
        memo[id(function)] = found
        return found

    def _read_back_into(self, call: cst.Call, arg: cst.BaseExpression, loops: list) -> Optional[cst.CSTNode]:
        """A read of device data back to the host, in the loop around `call`, that `arg` is
        computed from: in the loop itself, or inside `call`'s function on an earlier
        iteration (its result feeds `arg`). `self.x` follows the loop's stores to it."""
        sem = self.ctx.semantic
        starts = [arg]
        if isinstance(arg, cst.Attribute) and isinstance(arg.value, cst.Name):
            region = loops[-1]
            for assign in self.ctx.descendants(region, cst.Assign, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                if any(isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                       and t.target.value.value == arg.value.value and t.target.attr.value == arg.attr.value
                       for t in assign.targets):
                    starts.append(assign.value)
        follow = self._not_host_step
        for start in starts:
            read = self.device_read(call, start, loops, follow=follow)
            if read is not None:
                return read
            if any(node is call for node, _ in dataflow.data_nodes(
                    sem, start, loops[-1], follow=follow, through_changes=True)):
                read = self._returned_read(call)
                if read is not None:
                    return read
        return None

    def _not_host_step(self, _name, d) -> bool:
        """Follow the binding `d` back to what it is computed from, unless it is an element
        of an iteration (not computed from its iterable's updates) or new host data that code
        the file does not show computes from what the loop read back (`env.step(action)`:
        a simulator stepped on the host, hoststep.host_step_result), so the copy of it is no
        round trip (and the file cannot say it could stay on the device)."""
        return d.kind not in ("for", "comp") and not hoststep.host_step_result(self.ctx.semantic, d)

    def _returned_read(self, call: cst.Call, whole: bool = False) -> Optional[cst.CSTNode]:
        """A read back of device data inside the function `call` runs that its return value
        is computed from (`p.cpu()` behind `return sample(p)`), else None."""
        sem = self.ctx.semantic
        found = sem.syncs.callee(call)
        if found is None:
            return None
        function = found[0]
        uploads = tuple(copy for copy, _ in self._param_copies(function))
        for ret in self.ctx.descendants(function, cst.Return, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            if ret.value is None:
                continue
            if whole and isinstance(ret.value, (cst.Tuple, cst.List, cst.Dict)):
                return None  # which part the caller copies is not followed
            for node, d in dataflow.data_nodes(sem, ret.value, function, depth=8, through_changes=whole):
                if d is not None or not isinstance(node, cst.Call):
                    continue
                operand = self._host_read_operand(node)
                if operand is not None and self._device_data(operand, uploads, function):
                    return node
        return None

    def _on_device(self, expr: cst.BaseExpression) -> bool:
        value = self.ctx.semantic.value(expr)
        return value.kind in (Kind.TENSOR, Kind.UNKNOWN) and value.place is Place.DEVICE

    def check_written_back(self, call: cst.Call) -> None:
        """`t.fill_(v)` on a device tensor sends the host value `v` to the device: a round
        trip when the loop read `v` back from the device (`v = out.argmax().item()`). Only
        round trips: filling a device buffer with a constant is no copy of data."""
        sem = self.ctx.semantic
        loops = self.ctx.loops(call)
        if not loops or len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
            return
        receiver = sem.value(call.func.value)  # type: ignore[union-attr]
        if receiver.kind is not Kind.TENSOR or receiver.place is not Place.DEVICE:
            return
        filled = call.args[0].value
        if sem.value(filled).place is Place.DEVICE or not sem.on_gpu_path(call):
            return
        tensor = call.func.value  # type: ignore[union-attr]
        bindings = tuple(d.value for d in sem.defs(tensor) if d.value is not None and d.node is not None
                         and dataflow.within(sem, d.node, loops[-1])) if isinstance(tensor, cst.Name) else ()
        read = self.device_read(call, filled, loops, filled=bindings)
        if read is not None:
            self.report(call, self.reupload_message.format(
                call=".fill_()", line=self._line(read), read=self._short(read)))

    # -- transfers -----------------------------------------------------------------------
    def upload(self, call: cst.Call) -> Optional[tuple[cst.BaseExpression, str, Optional[str]]]:
        """(the data copied to the device, a label, the device's text when the device rests
        on a name only) for a host→device transfer, else None."""
        sem = self.ctx.semantic
        func = call.func
        if any(arg.star for arg in call.args):
            return None
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda"):
            if func.attr.value == "cuda":
                return func.value, ".cuda()", None
            target = keyword_arg(call, "device")
            if target is None:
                target = call_arg(call, 0, "\0")
            if target is None:
                return None
            place, named = sem.device_place(target)
            if place is not Place.DEVICE:
                return None
            receiver = sem.value(func.value)
            if receiver.kind is Kind.MODULE or receiver.place is Place.DEVICE:
                return None
            return func.value, ".to()", self.ctx.code(target).strip() if named else None
        wrapped = dataflow.wrapper_move(sem, call) if isinstance(func, cst.Name) else None
        if wrapped is not None:
            return wrapped[0], f"{func.value}()", None  # type: ignore[union-attr]
        made = dataflow.data_to_device(sem, call)
        if made is None:
            return None
        return made.data, f"{made.qualname}(..., device=...)", \
            self.ctx.code(made.device).strip() if made.named else None

    def is_download(self, call: cst.Call) -> bool:
        """`.cpu()` or `.to("cpu")` / `.to(torch.device("cpu"))` of a tensor."""
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        if func.attr.value == "cpu":
            return not call.args
        if func.attr.value != "to":
            return False
        target = keyword_arg(call, "device")
        if target is None:
            target = call_arg(call, 0, "\0")
        if target is None:
            return False
        place, _ = self.ctx.semantic.device_place(target)
        return place is Place.CPU

    # -- the same host data, every iteration ---------------------------------------------
    def invariant_loop(self, call: cst.Call, moved: cst.BaseExpression, loops: list) -> Optional[cst.CSTNode]:
        """The outermost of the loops around `call`, taken from the inside out, on every
        iteration of which `call` copies the same host data: None if not even the
        innermost."""
        sem = self.ctx.semantic
        value = sem.value(moved)
        if not self._host_data(value) and not self._repeated_list(moved):
            return None
        if dataflow.fresh_fill(sem, moved, depth=0) is not None:
            return None  # a fresh fill: DL007 (create it on the device)
        if self._kept(call):
            return None
        found = None
        for loop in loops:
            if isinstance(loop, (cst.For, cst.While)) and sem.loops.facts(loop).runs_once:
                break
            if not dataflow.invariant(sem, moved, loop):
                break
            if not all(self._same_target(arg.value, loop) for arg in call.args):
                break  # the target changes: one copy per device, say
            found = loop
        return found

    def _repeated_list(self, expr: cst.BaseExpression) -> bool:
        """`[1000] * n`: a list (or tuple) display of numbers repeated a number of times, `n`
        a number by its value or because the code gives it to a factory as a size
        (`torch.randn(n, ...)`: `dataflow.given_as_size`): a Python list on the host, whatever
        else the model knows of `n`."""
        if not isinstance(expr, cst.BinaryOperation) or not isinstance(expr.operator, cst.Multiply):
            return False
        sem = self.ctx.semantic
        for shown, count in ((expr.left, expr.right), (expr.right, expr.left)):
            if not isinstance(shown, (cst.List, cst.Tuple)) or not shown.elements:
                continue
            if not all(isinstance(e, cst.Element) and sem.value(e.value).kind in (Kind.NUMBER, Kind.BOOL)
                       for e in shown.elements):
                continue
            if sem.value(count).kind is Kind.NUMBER \
                    or isinstance(count, cst.Name) and dataflow.given_as_size(sem, count):
                return True
        return False

    def _kept(self, call: cst.Call) -> bool:
        """Each iteration keeps its own copy: the transfer is a comprehension's element or
        what the loop appends to (or stores into) a container, so the copies are distinct
        objects the code may use apart (buffers for `all_gather`, say)."""
        ctx = self.ctx
        child: cst.CSTNode = call
        parent = ctx.parent(call)
        while isinstance(parent, cst.IfExp) and child is not parent.test:
            child, parent = parent, ctx.parent(parent)
        if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) and parent.elt is child:
            return True
        if isinstance(parent, cst.DictComp) and parent.value is child:
            return True
        if isinstance(parent, cst.Arg):
            owner = ctx.parent(parent)
            return isinstance(owner, cst.Call) and isinstance(owner.func, cst.Attribute) \
                and owner.func.attr.value in ("append", "insert", "add", "appendleft")
        if isinstance(parent, cst.Assign) and parent.value is child:
            return any(isinstance(t.target, cst.Subscript) for t in parent.targets)
        return False

    def _same_target(self, arg: cst.BaseExpression, loop: cst.CSTNode) -> bool:
        """A `.to(...)` argument that names the same target on every iteration: invariant,
        or the `.device` (or `.dtype`) of a tensor (`x.to(logits.device)`: where the loop's
        tensors live, which does not change from one iteration to the next)."""
        sem = self.ctx.semantic
        if dataflow.invariant(sem, arg, loop):
            return True
        if isinstance(arg, cst.Name) and sem.defs(arg) \
                and not any(d.node is not None and dataflow.within(sem, d.node, loop) for d in sem.defs(arg)) \
                and sem.value(arg).kind in (Kind.DEVICE, Kind.STRING, Kind.NUMBER, Kind.UNKNOWN) \
                and sem.device_place(arg)[0] is Place.DEVICE:
            # a device (a `torch.device`, a string, an index: immutable) bound before the
            # loop: a call it is handed to cannot change it
            return True
        return isinstance(arg, cst.Attribute) and arg.attr.value in ("device", "dtype") \
            and sem.value(arg.value).kind in (Kind.TENSOR, Kind.UNKNOWN)

    @staticmethod
    def _host_data(value) -> bool:
        if value.kind is Kind.TENSOR:
            return value.place is Place.CPU
        if value.kind is Kind.SEQUENCE:
            return value.place is not Place.DEVICE  # a Python list: host memory
        return value.kind in (Kind.ARRAY, Kind.NUMBER, Kind.BOOL)

    def report_invariant(self, call: cst.Call, moved, loop, label: str, suffix: str) -> None:
        message = self.message.format(call=label, line=self._line(loop)) + suffix
        fix = self.hoist_fix(call, loop)
        if fix is None:
            self.report(call, message)
            return
        self.report(call, message, replacement=fix, replace=loop, safe=False,
                    fix_description="copy it once, before the loop")

    def hoist_fix(self, call: cst.Call, loop: cst.CSTNode):
        ctx = self.ctx
        sem = ctx.semantic
        if not isinstance(loop, (cst.For, cst.While)) or not hoistable_args(call, set()):
            return None
        if isinstance(call.func, cst.Name) and dataflow.wrapper_move(sem, call) is not None:
            return None  # a call of a wrapper (`to_gpu(w)`): what else it does is not weighed
        assign = ctx.parent(call)
        if not isinstance(assign, cst.Assign) or assign.value is not call or len(assign.targets) != 1:
            return None
        target = assign.targets[0].target
        line = ctx.parent(assign)
        if not isinstance(target, cst.Name) or not isinstance(line, cst.SimpleStatementLine) \
                or len(line.body) != 1 or ctx.parent(line) is not loop.body:
            return None
        after = ctx.order(line)
        for other in dataflow.reads(sem, loop) + self._bound_names(loop):
            if other is target or other.value != target.value:
                continue
            if ctx.order(other) < after or other in self._bound_names(loop):
                return None  # read before the copy, or bound again in the loop
            if dataflow.changes(sem, other, loop):
                return None  # the loop changes the device copy in place
        return hoist_statement(ctx, line, loop)

    def _bound_names(self, region: cst.CSTNode) -> list[cst.Name]:
        """Names bound inside `region` (assignment, loop and `with` targets, walrus)."""
        from devicelint.semantic.flow import target_parts

        found: list[cst.Name] = []
        stack = [region]
        while stack:
            node = stack.pop()
            targets = []
            if isinstance(node, cst.AssignTarget):
                targets = [node.target]
            elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor)):
                targets = [node.target]
            elif isinstance(node, cst.AsName):
                targets = [node.name]
            elif isinstance(node, cst.NamedExpr):
                targets = [node.target]
            for target in targets:
                found.extend(t for t, _ in target_parts(target) if isinstance(t, cst.Name))
            stack.extend(self.ctx.semantic.children(node))
        return found

    # -- round trips ---------------------------------------------------------------------
    def uploaded_here(self, receiver: cst.BaseExpression, loops: list) -> Optional[cst.CSTNode]:
        """The host→device transfer, made in the same iteration, whose result `receiver`
        is (directly, through `.detach()`/`.data`, or through a name every binding of which
        is such a transfer made inside the loop and not changed in place since: also a part
        of a tuple or list of such transfers, `batch = tuple(t.to(dev) for t in batch)` then
        `x, y = batch`), else None. Silent when the host data the transfer copied is changed
        in place before the read-back (`staging.zero_()`): its host copy is gone."""
        region = loops[0]
        source = self._uploaded_part(receiver, (), region)
        if source is None:
            return None
        moved = self.upload(source)
        if moved is not None and self._host_copy_lost(moved[0], source, receiver, region):
            return None
        return source

    def _uploaded_part(self, value: cst.BaseExpression, path: tuple, region: cst.CSTNode,
                       depth: int = 0) -> Optional[cst.Call]:
        """The upload of host data, made in `region`, that the part `path` of `value` holds
        unchanged on the device (see `uploaded_here`), else None."""
        sem = self.ctx.semantic
        value = self._same_data(value)
        if not path and isinstance(value, cst.Call) \
                and (self._upload_of_host(value) or self._upload_of_element(value, region)):
            return value
        if path and path[0] >= 0 and isinstance(value, (cst.Tuple, cst.List)):
            elements = value.elements
            if path[0] >= len(elements) or any(isinstance(e, cst.StarredElement)
                                               for e in elements[:path[0] + 1]):
                return None
            return self._uploaded_part(elements[path[0]].value, path[1:], region, depth)
        if path and path[0] >= 0:
            built = value
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) \
                    and value.func.value in ("tuple", "list") and not sem.defs(value.func) \
                    and len(value.args) == 1 and value.args[0].keyword is None and not value.args[0].star:
                built = value.args[0].value
            if isinstance(built, (cst.ListComp, cst.GeneratorExp)):
                # every element is the comprehension's element: one upload each
                return self._uploaded_part(built.elt, path[1:], region, depth)
        if not isinstance(value, cst.Name) or depth > 4:
            return None
        defs = sem.defs(value)
        if not defs or not all(d.node is not None and dataflow.within(sem, d.node, region) for d in defs):
            return None
        sources = []
        for d in defs:
            if d.kind not in ("assign", "annassign", "walrus") or d.value is None or -1 in d.path:
                return None
            source = self._uploaded_part(d.value, d.path + path, region, depth + 1)
            if source is None:
                return None
            sources.append(source)
        if any(kind != "escape" for kind, _ in dataflow.changes(sem, value, region)):
            return None  # changed on the device in place: not the copy of the host data any more
        return sources[0]

    def _upload_of_element(self, call: cst.Call, region: cst.CSTNode) -> bool:
        """`call` copies to the device (a part of) the element a loop in `region` walks,
        not known to be on the device: a loader's batch whose loader the file does not show
        (a parameter), or a field of it taken by a comprehension (`tuple(t.to(dev) for t in
        batch)`). A loop that sends the element it binds to the device walks batches
        (`loops.facts`' `walks_loader`): host data, one batch per iteration."""
        found = self.upload(call)
        return found is not None and self._loop_element(found[0], region)

    def _loop_element(self, expr: cst.BaseExpression, region: cst.CSTNode, depth: int = 0) -> bool:
        sem = self.ctx.semantic
        if not isinstance(expr, cst.Name):
            return False
        value = sem.value(expr)
        if value.kind not in (Kind.TENSOR, Kind.UNKNOWN) or value.place is Place.DEVICE:
            return False
        defs = sem.defs(expr)
        if not defs:
            return False
        for d in defs:
            if d.kind == "for" and isinstance(d.node, cst.For) and dataflow.within(sem, d.node, region):
                continue
            if d.kind == "comp" and depth == 0 and isinstance(d.value, cst.Name):
                if not self._loop_element(d.value, region, depth + 1):
                    return False
            else:
                return False
        return True

    @staticmethod
    def _same_data(value: cst.BaseExpression) -> cst.BaseExpression:
        """`t` of `t.detach()` and `t.data`: the same device memory."""
        while True:
            if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value == "detach":
                value = value.func.value
            elif isinstance(value, cst.Attribute) and value.attr.value == "data":
                value = value.value
            else:
                return value

    def _host_copy_lost(self, data: cst.BaseExpression, upload: cst.Call, download: cst.BaseExpression,
                        region: cst.CSTNode) -> bool:
        """The host data `upload` copied (a name) is changed in place between the upload and
        the read-back `download`: the host no longer holds what the device copy holds."""
        if not isinstance(data, cst.Name):
            return False
        ctx = self.ctx
        first, last = ctx.order(upload), ctx.order(download)
        return any(first < ctx.order(node) < last
                   for kind, node in dataflow.changes(ctx.semantic, data, region) if kind != "escape")

    def _upload_of_host(self, call: cst.Call) -> bool:
        found = self.upload(call)
        if found is None:
            return False
        return self._host_data(self.ctx.semantic.value(found[0]))

    def device_read(self, upload: cst.Call, moved: cst.BaseExpression, loops: list,
                    filled: tuple = (), follow=None) -> Optional[cst.CSTNode]:
        """A read of device data back to the host, inside the loop, that the data `moved`
        is computed from (through bindings made in the loop and what the loop appends to
        lists it reads), else None. The data read is on the device by its value, or because
        the loop computes it from what `upload` copied there (the loop's own cycle:
        `x = torch.tensor([tokens[-1]]).to(dev)`, `out = model(x)`,
        `tokens.append(out.argmax().item())`, whatever `model` is)."""
        sem = self.ctx.semantic
        region = loops[-1]
        if follow is None:
            def follow(_name, d) -> bool:
                return d.kind not in ("for", "comp")  # an element is not computed from its iterable's updates

        for node, d in dataflow.data_nodes(sem, moved, region, follow=follow, through_changes=True):
            if d is not None or not isinstance(node, cst.Call):
                continue
            operand = self._host_read_operand(node)
            if operand is not None and self._device_data(operand, (upload, *filled), region) \
                    and not dataflow.exclusive_arms(sem, upload, node, region):
                return node
        return None

    def _each_copy_read(self, upload: cst.Call, download: cst.Call, loops: list) -> bool:
        """The read-back `download` runs each time `upload` copies: the copy sits in no loop
        that the read is outside of (a batch loop's copies read back once after that loop,
        `if epoch == 0: save(x.cpu())`, are one read, not a round trip per copy), and the two
        are not in opposite arms of one condition (`if use_cuda:` ... `else:`). A
        comprehension whose element the copy is (`tuple(t.to(dev) for t in batch)`) makes one
        copy per element, and the read reads one of them (`uploaded_here` took a part)."""
        for loop in self.ctx.loops(upload):
            if loop in loops:
                continue
            if isinstance(loop, (cst.ListComp, cst.GeneratorExp)) and loop.elt is upload:
                continue
            return False
        if self._once_per_loop(download, loops[0]):
            return False
        loops_of = self.ctx.semantic.loops
        if loops_of.throttled(download, loops[0]) and not loops_of.throttled(upload, loops[0]):
            return False  # read every N steps (`if (i + 1) % plot_every == 0:`), copied every step
        return not dataflow.exclusive_arms(self.ctx.semantic, upload, download, loops[-1])

    def _once_per_loop(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """`node` runs at most once per run of `loop`: in the body of a first-pass test
        (`if len(xs) == 0:` whose body grows `xs`: loops' `_first_pass_only`), or in a block
        that leaves the loop (`loops.leaves_loop`)."""
        sem = self.ctx.semantic
        if sem.loops.leaves_loop(node, loop):
            return True
        child, parent = node, sem.parent(node)
        while parent is not None and parent is not loop:
            if isinstance(parent, cst.If) and child is parent.body \
                    and sem.loops._first_pass_only(parent, loop):
                return True
            child, parent = parent, sem.parent(parent)
        return False

    def _host_read_operand(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """What `call` copies back to the host: `t` of `t.item()`, `t.tolist()`, `t.cpu()`,
        `t.numpy()`, `t.to("cpu")`, `int(t)`, `float(t)`, `bool(t)`; else None."""
        sem = self.ctx.semantic
        func = call.func
        listed = sem.syncs.list_elements(call)  # `torch.LongTensor([[ni]])` reads `ni`
        if listed:
            return next((e for e in listed if sem.syncs.on_device(e)), listed[0])
        if isinstance(func, cst.Attribute) and (func.attr.value in _HOST_READ_METHODS
                                                or self.is_download(call)):
            if func.attr.value != "cpu" and func.attr.value != "to" and call.args:
                return None
            return func.value
        if len(call.args) == 1 and not call.args[0].star and call.args[0].keyword is None \
                and self._converts(func):
            return call.args[0].value
        return None

    def _converts(self, func: cst.BaseExpression) -> bool:
        """A Python function that makes a number (or a character) of its argument through
        `__float__`/`__index__`: `int`, `float`, `chr`, `math.log10` (`[conversions]` in the
        API table), not rebound by the file."""
        sem = self.ctx.semantic
        if isinstance(func, cst.Name) and not sem.defs(func):
            return func.value in sem.api.converting_builtins and func.value != "range"
        qual = sem.qualname(func) if isinstance(func, (cst.Name, cst.Attribute)) else None
        return qual is not None and qual in sem.api.converting_functions

    def _device_data(self, operand: cst.BaseExpression, uploads: tuple, region: cst.CSTNode) -> bool:
        """`operand` is device data: a tensor on the device, or a value of unknown place that
        `region` computes from what the upload copies to the device (`uploads`: the upload,
        and for `t.fill_(v)` the bindings of `t` it fills)."""
        sem = self.ctx.semantic
        source = sem.value(operand)
        if source.kind is Kind.TENSOR and source.place is Place.DEVICE:
            return True
        if source.place is Place.CPU or source.kind not in (Kind.TENSOR, Kind.UNKNOWN):
            return False
        return any(any(node is upload for upload in uploads)
                   for node, _ in dataflow.data_nodes(sem, operand, region, depth=8))

    # -- messages --------------------------------------------------------------------------
    def _line(self, node: cst.CSTNode) -> str:
        """`line 12`, or in a notebook `cell 4:2` (FileContext.line_ref)."""
        return self.ctx.line_ref(node)

    def _short(self, node: cst.CSTNode) -> str:
        text = " ".join(self.ctx.code(node).split())
        return text if len(text) <= 40 else text[:37] + "..."

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        """Repeated transfers: the same host data copied to the device again and again at the
        line, data copied back to the host at the line on every iteration (a round trip's way
        back), or new uploads at the line while the same file read device data back to the
        host (a round trip's way out; the runtime cannot see where the uploaded data came
        from)."""
        h2d = rec.copies.get("h2d")
        d2h = rec.copies.get("d2h")
        if h2d is not None and h2d.count >= 2 and h2d.distinct < h2d.count:
            measured = run.copy_ms(h2d, "h2d")
            return run.base(
                "confirmed",
                f"{h2d.count:,} host-to-device copies of {h2d.distinct} distinct host data "
                f"({h2d.bytes:,} B, {measured:.3f} ms): copied once, "
                f"{h2d.count - h2d.distinct:,} of them would not be made",
                count=h2d.count, distinct=h2d.distinct, bytes=h2d.bytes,
                measured_ms=round(measured, 4),
                counterfactual_ms=round(measured * h2d.distinct / h2d.count, 4))
        if d2h is not None and d2h.count >= 2:
            measured = run.copy_ms(d2h, "d2h")
            return run.base("confirmed", f"{d2h.count:,} device-to-host copies at this line "
                            f"({d2h.bytes:,} B, {measured:.3f} ms), one per iteration",
                            count=d2h.count, bytes=d2h.bytes, measured_ms=round(measured, 4))
        if h2d is not None and h2d.count >= 2:
            reads = [(line, other.syncs.count) for line, other in run.records_in_file()
                     if other.syncs.count >= 2]
            measured = run.copy_ms(h2d, "h2d")
            figures = dict(count=h2d.count, bytes=h2d.bytes, measured_ms=round(measured, 4))
            if reads:
                here = run.line()
                line, count = min(reads, key=lambda read: (abs(read[0] - here), read[0]))
                return run.base("confirmed", f"{h2d.count:,} host-to-device copies of new data "
                                f"at this line while line {line} read device data back "
                                f"{count:,} times", **figures)
            return run.base("inconclusive", f"{h2d.count:,} host-to-device copies of new data "
                            "each time; no read back from the device was watched in this file",
                            **figures)
        count = (h2d or d2h).count if (h2d or d2h) is not None else 0
        return run.base("refuted", "the line ran but did not copy the same data again, nor "
                        "back and forth on every iteration", count=count)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.MOVES, Watch.FACTORIES, Watch.SYNCS),
                          finds=(Find.READ_BACKS, Find.REPEATS))

