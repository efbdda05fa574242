"""The finder: every device event in the user's code, flagged by the static pass or not.

The tracker (tracker.py) attributes copies, syncs, `empty_cache` calls and errors to the
*flagged* lines it was given. The finder records the same events at the innermost frame of
the user's code (any file under the linted paths, not a library), and the call site one
frame out, whatever line they happen on. When the run ends, each record is judged with the
rules' own probes (a rule's `RuntimeSpec.probe`), and what they confirm on a line the static
pass did not flag for that pitfall is reported with status `found` and the rule's code.

Torch is imported only inside the functions the child runs: the parent imports this module
for `finder_rules`.
"""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig
import weakref
from typing import Optional

from devicelint.runtime_spec import Family, Find, is_device_mismatch

# The finder names no rule: each rule's RuntimeSpec says which cases it stands for (`finds`:
# Find.ROWS, Find.HOST_READS...) and which families its static finding covers at a line
# (`covered()`). One finding per family and line; a family is skipped at a line (or at a
# helper line whose call site is) the static pass flagged with a rule that covers it.


def finder_rules(rules) -> list:
    """The rules (classes, from `rules`: an iterable) whose code the finder may report."""
    return [rule for rule in rules if rule.runtime is not None and rule.runtime.finds]


# "Every step": a host read, an empty_cache or a repeated upload counts when it happened at
# least this often at the line (twice is a helper called twice), and, in a run that stepped
# an optimizer, on at least half as many occasions as there were steps (a read throttled to
# every 10th step, or once per epoch, is not per step).
REPEATS = 3
# Host reads the finder leaves alone: an explicit torch.cuda.synchronize() is deliberate (a
# timing fence, mostly); the implicit ones (.item(), bool(), print...) are the pitfall.
DELIBERATE_READS = {"synchronize"}
# A per-row copy: at least this many host->device copies at the line whose sources existed
# together (pieces of one host tensor, or tensors still alive when the next was copied). The
# fields of one loader batch copied one by one are a handful, and a loader's batches do not
# outlive the next one; rows of a collection are many.
PER_ROW_MIN = 8
CHAIN = 4  # user frames kept per event: the line, its callers
_CHAINS_KEPT = 16


class Finder:
    def __init__(self, roots: list[str]) -> None:
        self.roots = [os.path.realpath(root) for root in roots]
        self.records: dict = {}  # (path, line) -> LineRecord
        self.chains: dict = {}  # (path, line) -> {(caller sites...): events}
        self.runs: dict = {}  # (path, line) -> [current run, longest run, last source ref]
        self.module_sites = weakref.WeakKeyDictionary()  # nn.Module -> (path, line) built
        self.origins: dict = {}  # (path, line) -> where the CPU operand came from
        self.steps = 0  # optimizer steps taken in the run
        # DataLoader worker processes started: (path, line) of the user's loop -> workers.
        # Their code (a dataset's __getitem__, collate_fn) runs in other processes, which
        # the finder does not instrument: the report says so.
        self.worker_loaders: dict = {}
        self._user: dict[str, Optional[str]] = {}
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self._libraries = tuple(
            os.path.realpath(p) + os.sep
            for p in {here, sysconfig.get_paths().get("stdlib", ""),
                      sysconfig.get_paths().get("platstdlib", "")} if p)

    # -- what is user code -------------------------------------------------------------
    def user_path(self, filename: str) -> Optional[str]:
        try:
            return self._user[filename]
        except KeyError:
            pass
        found = None
        if not filename.startswith("<"):
            path = os.path.realpath(filename)
            inside = any(path == root or path.startswith(root.rstrip(os.sep) + os.sep)
                         for root in self.roots)
            library = (os.sep + "site-packages" + os.sep in path
                       or os.sep + "dist-packages" + os.sep in path
                       or path.startswith(self._libraries))
            if inside and not library:
                found = path
        self._user[filename] = found
        return found

    def spot(self, frame) -> Optional[tuple]:
        """((path, line) of the innermost user frame, (its user callers...)), or None."""
        chain = []
        depth = 0
        while frame is not None and depth < 96 and len(chain) < CHAIN:
            path = self.user_path(frame.f_code.co_filename)
            if path is not None and (not chain or chain[-1] != (path, frame.f_lineno)):
                # (a comprehension's frame and its function's share the line: one entry)
                chain.append((path, frame.f_lineno))
            elif not chain and depth >= 64:
                return None
            frame = frame.f_back
            depth += 1
        if not chain:
            return None
        return chain[0], tuple(chain[1:])

    def note(self, spot) -> None:
        site, callers = spot
        chains = self.chains.get(site)
        if chains is None:  # (not setdefault: it would build a dict on every event)
            chains = self.chains[site] = {}
        if callers in chains:
            chains[callers] += 1
        elif len(chains) < _CHAINS_KEPT:
            chains[callers] = 1

    # -- per-row copies ----------------------------------------------------------------
    def note_source(self, site, source) -> None:
        """Did this copy's source exist together with the last one's (rows of one
        collection), or is it a new batch that replaced the last one?"""
        import torch

        if not isinstance(source, torch.Tensor):
            return
        state = self.runs.setdefault(site, [0, 0, None])
        last = state[2]() if state[2] is not None else None
        try:
            piece = source.untyped_storage().nbytes() > source.numel() * source.element_size()
        except (RuntimeError, NotImplementedError, TypeError):
            piece = False
        together = piece or (last is not None and last is not source)
        state[0] = state[0] + 1 if together else 1
        state[1] = max(state[1], state[0])
        try:
            state[2] = weakref.ref(source)
        except TypeError:
            state[2] = None

    # -- errors ------------------------------------------------------------------------
    def note_error(self, tracker, frame, tb, message: str):
        """The record of the user line that raised, and where a CPU operand came from."""
        spot = self.spot(frame)
        if spot is None:
            return None
        self.note(spot)
        site = spot[0]
        if is_device_mismatch(message) and site not in self.origins:
            self.origins[site] = self._cpu_origin(tracker, frame, tb)
        return site

    def _cpu_origin(self, tracker, frame, tb) -> dict:
        """A module on the stack that still holds parameters on the CPU (where it was built,
        when the finder saw it built), else a CPU tensor among the raising frame's locals."""
        import torch

        frames = []
        while tb is not None and len(frames) < 128:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        frames.reverse()  # innermost first
        walk = frame
        while walk is not None and len(frames) < 256:
            frames.append(walk)
            walk = walk.f_back
        for current in frames:
            module = current.f_locals.get("self")
            if not isinstance(module, torch.nn.Module):
                continue
            for name, tensor in list(module.named_parameters(recurse=False)) + list(
                    module.named_buffers(recurse=False)):
                if tensor.dim() > 0 and tracker.device_of(tensor) == "cpu":
                    origin = {"kind": "module", "module": type(module).__name__,
                              "tensor": name}
                    built = self.module_sites.get(module)
                    if built is not None:
                        origin["path"], origin["line"] = built
                    return origin
        for current in frames:
            if self.user_path(current.f_code.co_filename) is None:
                continue
            for name, value in current.f_locals.items():
                if isinstance(value, torch.Tensor) and value.dim() > 0 and \
                        tracker.device_of(value) == "cpu":
                    return {"kind": "tensor", "name": name, "shape": list(value.shape)}
            break
        return {}

    def install_module_sites(self) -> None:
        """Remember where each nn.Module was built (the user line that called it), and count
        the optimizer's steps."""
        import torch

        def stepped(optimizer, args, kwargs):
            self.steps += 1

        from torch.optim.optimizer import register_optimizer_step_post_hook

        register_optimizer_step_post_hook(stepped)

        init = torch.nn.Module.__init__
        finder = self

        def wrapped(module, *args, **kwargs):
            init(module, *args, **kwargs)
            if module not in finder.module_sites:
                spot = finder.spot(sys._getframe(1))
                if spot is not None:
                    finder.module_sites[module] = spot[0]

        torch.nn.Module.__init__ = wrapped

        from torch.utils.data import dataloader

        workers_init = dataloader._MultiProcessingDataLoaderIter.__init__

        def start_workers(iterator, loader):
            spot = finder.spot(sys._getframe(1))
            if spot is not None:
                site = spot[0]
                finder.worker_loaders[site] = max(finder.worker_loaders.get(site, 0),
                                                  int(loader.num_workers))
            workers_init(iterator, loader)

        dataloader._MultiProcessingDataLoaderIter.__init__ = start_workers

    def unobserved(self) -> list[dict]:
        """What ran where the finder could not see it."""
        return [{"what": "DataLoader worker processes", "path": path, "line": line,
                 "workers": workers,
                 "why": f"{workers} worker process{'es' if workers != 1 else ''} ran the "
                        "dataset's __getitem__ and collate_fn; copies, syncs and errors in "
                        "them were not observed (num_workers=0 runs them in this process, "
                        "where they are)"}
                for (path, line), workers in sorted(self.worker_loaders.items())]


# -- judging ---------------------------------------------------------------------------


def _describe_origin(origin: dict) -> str:
    if origin.get("kind") == "module":
        where = f", built at {_short(origin['path'])}:{origin['line']}" if "line" in origin else ""
        return (f"the CPU operand is {origin['module']}.{origin['tensor']}, a module left on "
                f"the CPU{where}")
    if origin.get("kind") == "tensor":
        return f"the CPU operand is `{origin['name']}` (shape {origin['shape']}), on the CPU"
    return ""


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def flagged_codes(plan, site) -> set:
    path, line = site
    lines = plan.lines.get(path, {})
    heads = plan.spans.get(path, {})
    codes = set(lines.get(line, ()))
    if line in heads:
        codes.update(lines.get(heads[line], ()))
    return codes


def judge(run, finder: Finder, tracker, plan, rules: dict) -> list[dict]:
    """Found findings: each family's first rule whose probe confirms the pitfall at a line
    the static pass did not flag for it (nor the call site of the helper it ran in).
    `rules`: code -> rule class."""
    code_of: dict = {}  # Find -> the code of the rule that stands for it
    covers: dict = {}  # code -> the families its static finding covers
    for code, rule in sorted(rules.items()):
        spec = rule.runtime if rule is not None else None
        if spec is None:
            continue
        covers[code] = spec.covered()
        for find in spec.finds:
            code_of.setdefault(find, code)

    def code_for(find: Find):
        """The rule that reports `find`: the one standing for it, else (its rule is not
        selected) another rule of its family."""
        if find in code_of:
            return code_of[find]
        return next((code_of[other] for other in Find
                     if other.family is find.family and other in code_of), None)

    def covered_at(site) -> set:
        return {family for code in flagged_codes(plan, site) for family in covers.get(code, ())}

    # Errors the tracker gave to a flagged line of a crash rule (the call of a module whose
    # forward raised, the `self.blocks = [...]` that kept it from moving) are judged there.
    judged_errors = {error.message for site, rec in tracker.records.items()
                     if Family.CRASH in covered_at(site) for error in rec.errors}
    found = []
    for site, rec in sorted(finder.records.items()):
        path, line = site
        chains = finder.chains.get(site, {})
        covered = covered_at(site)
        for callers in chains:
            for caller in callers:
                covered |= covered_at(caller)
        run.path, run.site_line = path, line
        for family in Family:  # (in its order: a crash first)
            if family in covered:
                continue
            if family is Family.CRASH and {e.message for e in rec.errors} <= judged_errors:
                continue
            asked = set()
            for find in _candidates(family, rec, finder, site):
                code = code_for(find)
                if code is None or code in asked:
                    continue
                asked.add(code)
                try:
                    confirmation = rules[code].runtime.probe(run, rec)
                except Exception:  # noqa: BLE001 - one probe must not lose the rest
                    continue
                if confirmation.get("status") != "confirmed":
                    continue
                confirmation = dict(confirmation, status="found")
                if family is Family.CRASH:
                    origin = finder.origins.get(site) or {}
                    said = _describe_origin(origin)
                    if said:
                        confirmation["summary"] += f"; {said}"
                        confirmation["origin"] = origin
                found.append({"path": path, "line": line, "code": code,
                              "confirmation": confirmation,
                              "callers": _callers(chains)})
                break
    return found


def _candidates(family: Family, rec, finder: Finder, site) -> list[Find]:
    """The cases of `family` to ask at this record, best first."""
    if family is Family.CRASH:
        if not any(is_device_mismatch(e.message) for e in rec.errors):
            return []
        origin = finder.origins.get(site) or {}
        return [Find.CPU_MODULE] if origin.get("kind") == "module" else [Find.CPU_OPERAND]
    if family is Family.HOST_READ:
        d2h = rec.copies.get("d2h")
        reads = sum(n for kind, n in rec.syncs.kinds.items() if kind not in DELIBERATE_READS)
        if not _every_step(max(reads, d2h.count if d2h is not None else 0), finder):
            return []
        copies_only = set(rec.syncs.kinds) <= {"cpu", "to"}
        pair = [Find.HOST_READS, Find.READ_BACKS]
        return pair[::-1] if copies_only else pair
    if family is Family.UPLOAD:
        h2d = rec.copies.get("h2d")
        if h2d is None or h2d.count < 2:
            return []
        run = finder.runs.get(site)
        if run is not None and run[1] >= PER_ROW_MIN:
            return [Find.ROWS]  # rows copied one by one (some of them again, maybe)
        return [Find.REPEATS] if _every_step(h2d.count - h2d.distinct + 1, finder) else []
    if family is Family.NON_BLOCKING:
        h2d = rec.copies.get("h2d")
        return [Find.PAGEABLE] if h2d is not None and h2d.pageable_non_blocking else []
    if family is Family.EMPTY_CACHE:
        return [Find.EMPTY_CACHE] if _every_step(rec.empty_cache.count, finder) else []
    return []


def _every_step(count: int, finder: Finder) -> bool:
    return count >= REPEATS and (finder.steps < 2 * REPEATS or 2 * count >= finder.steps)


def _callers(chains: dict) -> list[dict]:
    """The call sites of a helper line: the immediate user caller of each distinct chain."""
    counts: dict = {}
    for callers, events in chains.items():
        if callers:
            counts[callers[0]] = counts.get(callers[0], 0) + events
    return [{"path": path, "line": line, "events": events}
            for (path, line), events in sorted(counts.items(), key=lambda kv: -kv[1])][:4]


def source_column(path: str, line: int) -> int:
    text = linecache.getline(path, line)
    return len(text) - len(text.lstrip()) + 1 if text.strip() else 1
