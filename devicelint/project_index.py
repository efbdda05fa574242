"""The project index: facts one file of a run may take from the other local modules it
imports (issue 13 item 2). Lint layer; imports neither libcst nor the semantic model at
import time (the runner builds it before any file is parsed).

Made once per run (`ProjectIndex.build`) over the files being linted, and read lazily: a
module's facts are read the first time a question reaches it, a linted file's own from the
libcst tree its lint parses anyway (no second parse), any other local module's with
Python's own `ast`; a module no question reaches is never read, and nothing is ever run.
The facts of a module: its imports (relative ones resolved, `import *` of a local module
followed), its top-level classes with their bases, functions, and module-level aliases
(`zeros = torch.zeros`, `d2l = sys.modules[__name__]`). From those it answers, for one
file (`index.view(path)`):

- which names reach a class of another file that derives from `nn.Module` (through bases in
  other modules and package `__init__` re-exports): `view.is_module_class(qualname)`;
- what a module-level alias stands for: `view.alias("d2l.zeros") == "torch.zeros"`;
- what a name bound only by `from m import *` of a local module stands for outside the
  project (m's `__all__`, else its public names): `view.star_name("torch") == "torch"`;
- which function of another file a call runs, and that file's own semantic model, built on
  first use and kept for the run: `view.function(qualname) -> (SemanticModel, FunctionDef)`.

What it does not follow: imports made at run time (`importlib`, `__import__`), `getattr`
on modules, `sys.path` changes, names a module binds more than once at top level, and
third-party packages (anything not found under the project root). There it answers None
and rules stay silent, as without the index.

While a file is linted, the index notes what its answers used (`start_job`/`finish_job`): the
facts of each module a name was resolved through (a hash of the facts, not of the file), the
calls of a function, the files module lookups found, another file's model. The result cache
keeps that list with the file's findings and serves them again only while each item is
unchanged (`still_valid`): editing a module re-lints the files whose findings used its facts,
and only when the facts changed.
"""

from __future__ import annotations

import ast
import gc
import os
import re
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from devicelint import accepted
from devicelint.datafile import blake2b, sha256

_MAX_DEPTH = 24
_MAX_DEPENDENCY_SIZE = 2 * 1024 * 1024  # bytes: a local module larger than this is not read
_MAX_MODULES = 5000
# Text of the run's linted files whose libcst trees a process keeps for later questions
# about them (ProjectIndex.keep_tree): a tree takes roughly 100 bytes per character.
KEPT_TREE_CHARS = 400_000


@dataclass
class ModuleInfo:
    """A module of the project: where it is, what it is called, and its facts once read."""

    name: str                    # dotted module name ("models.base")
    path: str                    # where it was read from
    key: str                     # the path rules see for it (ctx.path), when it is linted
    shown: str                   # how messages name it: `key`, else its path from the project
    #                              root ("/"-separated), which reports name from the working
    #                              directory (devicelint.runner.ReportedPaths)
    digest: str
    is_package: bool
    search: tuple[str, ...]      # directories its absolute imports are looked up in
    imports: dict[str, str] = field(default_factory=dict)    # bound name -> absolute target
    stars: list[str] = field(default_factory=list)           # absolute modules `import *`ed
    aliases: dict[str, str] = field(default_factory=dict)    # name -> dotted text it is bound to
    self_names: set[str] = field(default_factory=set)        # names bound to this module itself
    classes: dict[str, list[str]] = field(default_factory=dict)  # class -> bases' dotted text
    functions: set[str] = field(default_factory=set)
    # function -> dotted names it calls; read from `text` on first use (few modules need it)
    calls: Optional[dict[str, set]] = field(default=None, repr=False)
    calls_complete: bool = False  # `calls` holds every function's (from the libcst tree)
    rebound: set[str] = field(default_factory=set)           # bound more than once at top level
    text: Optional[str] = field(default=None, repr=False)  # the source, for a semantic model on demand
    # Whether its facts are read: None not yet (they are read on first use), True read,
    # False unreadable (`ast` cannot parse it: no facts, as if it were not there).
    ready: Optional[bool] = None
    identity: Optional[str] = None  # ProjectIndex.identity, once computed
    token: Optional[str] = None     # ProjectIndex.token, once computed
    imports_local: Optional[bool] = None  # ProjectIndex.may_import_local, once computed


@dataclass(frozen=True)
class Symbol:
    """What a name resolves to: a class, function or module of the project, or an external name."""

    kind: str                    # "class", "function", "module" or "external"
    module: Optional[ModuleInfo]
    name: str                    # the name in that module, or the external qualified name


class ProjectIndex:
    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self.shown_from = self.root  # what messages name modules that are not linted from
        self.modules: dict[str, ModuleInfo] = {}      # real path -> module
        self.by_key: dict[str, ModuleInfo] = {}       # ctx.path -> module
        self._module_class: dict[tuple[str, str], bool] = {}
        self._models: dict[str, object] = {}
        # The libcst trees of the run's files this process linted last, oldest first, up to
        # KEPT_TREE_CHARS of their text (keep_tree): a later question about one of them
        # builds its model on that tree instead of parsing the file again.
        self._kept_trees: dict[str, tuple[str, object]] = {}
        self._kept_chars = 0
        # What the semantic model works out from another module's text, under its own keys
        # (dataflow.foreign_call_uploads), kept for the run.
        self.derived: dict[tuple, object] = {}
        # Memos: a module lookup stats files; a name is resolved once per module.
        self._files: dict[tuple[str, tuple[str, ...]], list[str]] = {}
        self._listings: dict[str, dict[str, int]] = {}  # directory -> its names (_find_files)
        self._real_dirs: dict[str, str] = {}
        self._resolved: dict[tuple[str, str], Optional[Symbol]] = {}
        # Questions being answered ([memo, key, lowest open position read]), answers that
        # rest on an open one, open positions whose answer was read (`_memoised`).
        self._open: list[list] = []
        self._provisional: list[tuple[dict, tuple]] = []
        self._read_open: set[int] = set()
        # What the file being linted used (see start_job); "link" entries point at the
        # dependencies of a memoised answer or of another file's model, kept live.
        self._deps: dict = {}
        self._job_deps: dict = {}
        self._job_key: Optional[str] = None
        self._view_deps: dict[str, dict] = {}  # another file's model -> what it used
        self._dependencies: dict[str, list[ModuleInfo]] = {}  # imports_module (the server)
        self._run_identity: Optional[str] = None
        self._checked: dict[tuple, bool] = {}  # still_valid's answer for each row, this run
        self.known: dict[str, object] = {}
        self.new_facts: dict[str, object] = {}
        self.facts_used: set[str] = set()
        self.parses = 0  # modules read with ast.parse (a warm run parses none)
        # Whether what each file's lint used is noted (start_job .. finish_job) and the facts
        # read are kept (new_facts): for the result cache; a run without one skips both.
        self.recording = True
        # Whether another file's semantic model, once built, is moved out of the cyclic
        # collector's reach (`gc.freeze`, model_of): set by a lint run, whose models live
        # until the run ends; never by the language server, which drops models on edits.
        self.freeze_models = False
        # A directory the run's worker processes share: each module's facts, once one of
        # them has read them, for the others (share_facts).
        self._shared: Optional[str] = None
        self._unreadable: set[str] = set()
        self._packages: dict[str, tuple[str, tuple[str, ...], bool]] = {}
        self._heads: dict[tuple[str, ...], set] = {}  # search dirs -> the names found there
        self._defs: dict[str, dict] = {}  # module -> its functions' `ast`, for the last few read
        # module -> the lines (first, last) of each top-level function, for every module read
        # with `ast` whole: a function asked about once the module's `ast` is dropped is
        # parsed alone, not with its module.
        self._spans: dict[str, dict[str, tuple[int, int]]] = {}
        self._exports: dict[str, object] = {}  # module -> ProjectIndex.exports
        # Files of the run read with `ast` before their lint: key -> (text, its ast), for
        # their file gate (_keep_ast, parsed_ast).
        self._asts: dict[str, tuple[str, ast.Module]] = {}
        # (text, its `ast`) of the module `module_ast` parsed last: the looks at a module
        # (dataflow's copying look and copy reach, the gate's units) come one after another
        # (torchvision: 4 of 14 parses were of the text parsed just before).
        self.last_looked: Optional[tuple[str, ast.Module]] = None
        self.gate_reads: Optional[Callable[[str], bool]] = None  # build's `gate_reads`
        self._ast_chars = 0
        # may_reach's memos: the highest directory a lookup can find a module from (by its
        # path and the extra names a lookup may step through), and whether the directories
        # below one, as far as lookups can walk, hold no symbolic link.
        self._reach_tops: dict[tuple[str, frozenset], Optional[str]] = {}
        self._link_free: dict[tuple[str, frozenset], bool] = {}
        self._walk_budget = _MAX_WALKED_NAMES
        # The directories whose names the budget was charged for: a directory walked again
        # for another set of passable names costs a memoised listing, not a new look (86
        # practitioner repositories in one run: 3,479 walks of 329 directories spent it).
        self._walk_charged: set[str] = set()
        self._cells: dict[str, Callable] = {}  # a notebook's path -> its cell map (model_of)
        # A run's worker processes (`share_jobs`): each file's job, who lints it (a claim
        # file per job in the shared directory), and the files of the run whose semantic
        # model this process built since `follow_ups` last looked.
        self._jobs: dict[str, tuple] = {}
        self._claims: Optional[str] = None
        self._built: list[str] = []
        # importers_of's names (`naming`): the .py files below a directory, the texts read
        # for them, the names of each (module, function, directory, extra parts).
        self._trees: dict[str, Optional[list[str]]] = {}
        self._texts: dict[str, Optional[str]] = {}
        self._naming: dict[tuple, Optional[frozenset]] = {}
        # Which files below a directory spell each word (`_Spelling`), and whether lookups
        # from the search directories of the modules below one cross no symbolic link.
        self._spellings: dict[str, _Spelling] = {}
        self._bases_unlinked: dict[tuple[str, frozenset], bool] = {}

    # -- building ------------------------------------------------------------------------
    @classmethod
    def build(cls, root: str, files: Iterable[tuple[str, str, bytes]],
              known: Optional[dict[str, object]] = None, recording: bool = True,
              shown_from: Optional[str] = None,
              gate_reads: Optional[Callable[[str], bool]] = None,
              reals: Optional[list[str]] = None) -> "ProjectIndex":
        """`files`: (path on disk, the path rules will see, content) of each file linted.
        `known`: the facts of earlier runs by `facts_key` (from the result cache); a module
        found there is not parsed again. `index.new_facts` holds those this run parsed.
        `recording`: False when the run keeps no result cache (nothing noted, no facts kept).
        `shown_from`: the project root, which messages name a module that is not linted from
        (as the linted files' own paths are; default `root`).
        `gate_reads`: whether the file gate will read a text with `ast` (the runner passes
        `gate.reads_with_ast`); only such a file's `ast` is kept for its gate (`_keep_ast`).
        `reals`: the real path of each file of `files`, when known (`real_paths`).

        Nothing is parsed here: a module's facts are read when a question first reaches it
        (`ready`), a linted file's own from the libcst tree its lint already has, another
        module's with `ast`; a local module no question reaches is never read."""
        index = cls(root)
        if shown_from:
            index.shown_from = os.path.realpath(shown_from)
        index.known = known or {}
        index.recording = recording
        index.gate_reads = gate_reads
        for number, (path, key, data) in enumerate(files):
            real = reals[number] if reals is not None else None
            if path.endswith((".py", ".pyi")):
                index._add(path, data, key, real)
            elif path.endswith(".ipynb"):
                # A notebook imports local modules as a script does (`from helper_functions
                # import accuracy_fn`): its code cells, as the engine lints them, are its text.
                # Nothing imports a notebook, so only its own view asks for it.
                read = _notebook_source(data)
                if read is not None:
                    info = index._add(path, read[0].encode("utf-8"), key, real)
                    if info is not None:  # where its cells are: messages name a line by its cell
                        index._cells[info.path] = read[1]
        return index

    def _add(self, path: str, data: bytes, key: Optional[str], real: Optional[str] = None) -> Optional[ModuleInfo]:
        """`real`: `os.path.realpath(path)`, when known."""
        real = real if real is not None else os.path.realpath(path)
        if real in self.modules:
            info = self.modules[real]
            if key is not None:
                info.key = info.shown = key
                self.by_key[key] = info
            return info
        try:
            text = data.decode("utf-8-sig")
        except (ValueError, UnicodeDecodeError):
            return None
        name, search, is_package = self._module_name(real)
        digest = sha256(data).hexdigest()
        shown = key or Path(os.path.relpath(real, self.shown_from)).as_posix()
        info = ModuleInfo(name=name, path=real, key=key or "", shown=shown, digest=digest,
                          is_package=is_package, search=search, text=text)
        self.modules[real] = info
        if key is not None:
            self.by_key[key] = info
        return info

    def ready(self, info: ModuleInfo, ctx=None, tree: Optional[tuple[str, ast.Module]] = None) -> bool:
        """Read `info`'s facts if not yet (from the cache of earlier runs, from `ctx`, the
        libcst context of its own lint when it holds the module's whole text, else with
        `ast`: `tree`, (text, its `ast`) already parsed by the file gate, when the text is
        the module's); False when it cannot be read (then it is as if it were not there)."""
        if info.ready is None:
            cache_key = facts_key(info.digest, info.name, info.is_package)
            facts = facts_from_json(self.known.get(cache_key))
            if facts is not None:
                self.facts_used.add(cache_key)
            else:
                facts = self._shared_facts(cache_key)
                if facts is None:
                    if ctx is not None and ctx.source == info.text:
                        _collect_tree(info, ctx.module)
                        facts = facts_to_json(info)
                    else:
                        parsed = tree[1] if tree is not None and tree[0] == info.text else None
                        facts = self._parse_facts(info, info.text or "", parsed)
                    self._share(cache_key, facts)
                if self.recording:
                    self.new_facts[cache_key] = facts
            info.ready = bool(facts)
            if facts:
                _apply_facts(info, facts)
        return info.ready

    # -- facts shared by the worker processes of a run ---------------------------------------
    # Forked workers each start from the parent's empty index: without sharing, each read
    # with `ast` every module its files asked about (the practitioner corpus: 212 modules in
    # each of 2 workers). A file per module's facts, named by `facts_key`, in a private
    # directory made before the fork: what one worker read (with `ast`, or from the libcst
    # tree of a file it linted), the other loads instead.
    def share_facts(self) -> None:
        """From now until `stop_sharing`, the processes forked from this one share the
        module facts they read (call before forking)."""
        if self._shared is None:
            import tempfile

            base = _shared_base()
            _remove_abandoned(base)
            try:
                self._shared = tempfile.mkdtemp(prefix=f"{_SHARED_PREFIX}{os.getpid()}-", dir=base)
            except OSError:
                self._shared = None  # no temporary directory: each worker reads its own

    def stop_sharing(self) -> None:
        if self._shared is not None:
            import shutil

            shutil.rmtree(self._shared, ignore_errors=True)
            self._shared = None
            self._claims = None

    # -- which worker lints a file whose model it built (share_jobs) -------------------------
    # A question of one file about another builds that file's semantic model, a whole libcst
    # parse and walk (model_of). With one process, the file's own lint, later, takes the
    # same tree (`parsed_tree`); with workers, the other one may be dealt it and parse it
    # again (torchvision, `-j 2`: 4 of 9 models). So each job is claimed by the first
    # process that starts it or builds its model: a worker that built the model of a file
    # of the run nobody has started lints it right after the job that asked (`follow_ups`,
    # its findings returned with that job's), and the worker then dealt it skips it.
    def share_jobs(self, jobs: Iterable[tuple]) -> None:
        """From now on, the processes forked from this one claim the run's `jobs` (the
        runner's (path, key, data, codes)) before linting them (call after share_facts)."""
        if self._shared is None:
            return
        claims = os.path.join(self._shared, "claims")
        try:
            os.mkdir(claims)
        except OSError:
            return  # no claims: every worker lints the jobs it is dealt
        self._jobs = {job[1]: job for job in jobs}
        self._claims = claims

    def claim(self, key: str) -> bool:
        """Whether this process is the one to lint the run's file `key`: the first to claim
        it (always, when the jobs are not shared)."""
        if self._claims is None:
            return True
        path = os.path.join(self._claims, _hash(key))
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        except FileExistsError:
            return False
        except OSError:
            return True  # cannot tell: linted here (the runner keeps one result per job)
        return True

    def follow_ups(self) -> list[tuple]:
        """The jobs of the run's files whose models this process built, or whose `ast` it
        read and kept for their gate (`_keep_ast`), since last asked and that no process has
        claimed: claimed now, to be linted here on the trees the models hold and the `ast`
        kept (none when the jobs are not shared)."""
        built, self._built = self._built, []
        if self._claims is None:
            return []
        found = []
        for path in built:
            info = self.modules.get(path)
            job = self._jobs.get(info.key) if info is not None and info.key else None
            if job is not None and job not in found and self.claim(info.key):
                found.append(job)
        return found

    def _shared_facts(self, cache_key: str) -> Optional[dict]:
        if self._shared is None:
            return None
        try:
            with open(os.path.join(self._shared, cache_key), encoding="utf-8") as file:
                import json

                return facts_from_json(json.load(file))
        except (OSError, ValueError):
            return None  # not read yet by another worker (or half written: read it here)

    def _share(self, cache_key: str, facts: dict) -> None:  # (or a module's spans: _keep_defs)
        if self._shared is None:
            return
        import json

        path = os.path.join(self._shared, cache_key)
        partial = f"{path}.{os.getpid()}"
        try:
            text = json.dumps(facts)  # whole (C encoder): json.dump writes piece by piece in Python
            with open(partial, "w", encoding="utf-8") as file:
                file.write(text)
            os.replace(partial, path)  # whole or absent for the other workers
        except (OSError, ValueError):
            pass

    def set_text(self, path: str, data: bytes, key: Optional[str] = None) -> list[str]:
        """The module at `path` now holds `data` (an editor's buffer, or the file read again
        after a save): its facts are read anew when next asked, and every answer that may
        have used its old text is forgotten. `key`: the path rules see for it, when it is a
        file of the run (an existing one keeps its key). Returns the real paths of the
        other modules whose semantic models were dropped because they import it."""
        real = os.path.realpath(path)
        old = self.modules.get(real)
        dropped = [p for p in self._models if p != real and self.imports_module(p, real)]
        for stale in [real, *dropped]:
            self._models.pop(stale, None)
        self._defs.pop(real, None)
        self._spans.pop(real, None)
        self._unreadable.discard(real)
        for memo in (self._resolved, self._module_class, self._dependencies):
            memo.clear()
        for stale in [real, *dropped]:
            self._view_deps.pop(stale, None)
        self._run_identity = None
        self._checked.clear()
        self._texts.pop(real, None)
        self._naming.clear()
        self._trees.clear()
        self._spellings.clear()
        self._bases_unlinked.clear()
        if old is None:
            self._add(real, data, key)
            return dropped
        try:
            text = data.decode("utf-8-sig")
        except (ValueError, UnicodeDecodeError):
            text = ""  # no facts, as an unreadable module
        # Changed in place: other modules' memos hold this object.
        fresh = ModuleInfo(name=old.name, path=real, key=old.key, shown=old.shown,
                           digest=sha256(data).hexdigest(), is_package=old.is_package,
                           search=old.search, text=text)
        old.__dict__.update(fresh.__dict__)
        if key is not None and not old.key:
            old.key = old.shown = key
            self.by_key[key] = old
        return dropped

    def imports_module(self, importer: str, target: str) -> bool:
        """Whether the module at real path `importer` imports the one at `target`, directly
        or through others (from the facts read so far, reading those it needs)."""
        seen, stack = set(), [self.modules.get(importer)]
        while stack:
            module = stack.pop()
            if module is None or module.path in seen or not module.ready:
                continue
            seen.add(module.path)
            for info in self.dependencies(module):
                if info.path == target:
                    return True
                stack.append(info)
        return False

    def dependencies(self, module: ModuleInfo) -> list[ModuleInfo]:
        """The local modules `module` imports directly (memoised): each import target, and
        the module above a target that is no module itself."""
        found = self._dependencies.get(module.path)
        if found is None:
            targets = dict.fromkeys(module.stars)
            for target in module.imports.values():
                targets[target] = None
                if "." in target and not any(
                        self._module_at(path) is not None for path in self._module_files(target, module)):
                    targets[target.rsplit(".", 1)[0]] = None
            found = []
            for target in targets:
                for path in self._module_files(target, module):
                    info = self._module_at(path)
                    if info is not None and info is not module and info not in found:
                        found.append(info)
            self._dependencies[module.path] = found
        return found

    def may_import_local(self, info: ModuleInfo) -> bool:
        """Whether `info`'s text could import a local module (a cheap look at its words,
        before any parse): a relative import, or a word naming a module or directory where
        its absolute imports are looked up. Every name `info` resolves into another local
        module goes through such an import, so False means it reaches none."""
        if info.ready is False:
            return False
        if info.imports_local is None:  # asked for every file by each `importers_of`
            info.imports_local = self._may_import_local(info)
        return info.imports_local

    def _may_import_local(self, info: ModuleInfo) -> bool:
        text = info.text or ""
        if "import" not in text:
            return False
        if _RELATIVE_IMPORT.search(text):
            return True
        names = self._heads.get(info.search)
        if names is None:
            names = self._heads[info.search] = {n for folder in info.search for n in _entries(folder)}
        return any(not names.isdisjoint(_WORD.findall(words)) for words in _IMPORTED.findall(text))

    # -- which modules a resolution starting in one file can reach (importers_of) -----------
    # Every step from one module to another is a lookup (`_find_files`): a walk down from one
    # of the current module's search directories, one directory per component of a dotted
    # name. Those components are identifiers (words of the source: imports, attributes) or
    # parts of a module's own name (`_absolute`, a package's submodule), which are names of
    # its package directories. By induction over the modules a resolution passes through,
    # the non-identifier parts are those of the first module's name (a module found by a
    # walk has, above the walk's base, only the package directories of the module that
    # walked). So, without symbolic links, a walk only steps into a directory whose name is
    # an identifier or one of those parts ("passable"); and a module is found only from a
    # directory whose path down to it is passable. Let H be the highest such directory of
    # `target`: a walk that ends in H's subtree starts in it (a base above H would have a
    # passable path to `target` through H, and be higher), and each module's search
    # directories are its own folder, the folder above its top package and the root, so the
    # module that walked lies in H's subtree too; back to the first one. A file outside H's
    # subtree reaches nothing inside it, unless a walk crosses a symbolic link: that is ruled
    # out by looking at every directory such walks can reach (`_no_links_below`).
    def may_reach(self, start: ModuleInfo, target: ModuleInfo) -> bool:
        """Whether resolving names in `start` may reach `target` (False: it cannot, whatever
        the two files hold), from their paths alone: nothing is read."""
        extra = frozenset(p for p in start.name.split(".") if p and not p.isidentifier())
        top = self._reach_top(target, extra)
        if top is not None and (start.path + os.sep).startswith(top + os.sep):
            return True
        return not all(self._no_links_below(base, extra) for base in start.search)

    def _reach_top(self, target: ModuleInfo, extra: frozenset) -> Optional[str]:
        """The highest directory, at or below the root, from which a lookup walking through
        passable names (identifiers, or `extra`) can find `target`; None when none can."""
        key = (target.path, extra)
        if key not in self._reach_tops:
            folder, name = os.path.split(target.path)
            if target.is_package:  # `folder/last/__init__.py`: the walk ends at `folder`
                steps, folder = [os.path.basename(folder)], os.path.dirname(folder)
            else:
                steps = [os.path.splitext(name)[0]]
            top = None
            while _passable(steps[-1], extra):
                top = folder
                if folder == self.root or not folder.startswith(self.root + os.sep):
                    break
                folder, step = os.path.split(folder)
                steps.append(step)
            if top is not None and not (top == self.root or top.startswith(self.root + os.sep)):
                top = self.root  # a module outside the root is never looked up: no pruning
            self._reach_tops[key] = top
        return self._reach_tops[key]

    def _no_links_below(self, folder: str, extra: frozenset) -> bool:
        """Whether no symbolic link lies in `folder` or in the directories below it that a
        lookup can walk into (passable names); False too when there are too many names to
        look at (`_MAX_WALKED_NAMES` per run): then nothing is ruled out."""
        key = (folder, extra)
        found = self._link_free.get(key)
        if found is None:
            self._link_free[key] = True  # a directory met again below itself adds nothing
            names = self._listing(folder)
            if folder not in self._walk_charged:
                self._walk_charged.add(folder)
                self._walk_budget -= len(names)
            found = self._walk_budget >= 0 and _LINK not in names.values() and all(
                self._no_links_below(os.path.join(folder, name), extra)
                for name, kind in names.items() if kind == 0 and _passable(name, extra))
            self._link_free[key] = found
        return found

    def _module_at(self, path: str) -> Optional[ModuleInfo]:
        """The module read from `path` (a real path under the root), its facts ready; None
        when it cannot be read."""
        info = self.modules.get(path)
        if info is None:
            if path in self._unreadable or len(self.modules) >= _MAX_MODULES:
                return None
            data = _read_small(path)
            info = self._add(path, data, None, path) if data is not None else None  # real already
            if info is None:
                self._unreadable.add(path)
                return None
        return info if self.ready(info) else None

    def _module_name(self, real: str) -> tuple[str, tuple[str, ...], bool]:
        """`_module_name`, the walk up the package directories done once per directory."""
        folder = os.path.dirname(real)
        found = self._packages.get(folder)
        if found is None:
            found = self._packages[folder] = _module_name(os.path.join(folder, "_"), self.root)
        name, search, _is_package = found
        stem = os.path.splitext(os.path.basename(real))[0]
        if stem == "__init__" and real.endswith(".py"):
            return name.rpartition(".")[0], search, True
        return (f"{name.rpartition('.')[0]}.{stem}" if "." in name else stem), search, False

    def _parse_facts(self, info: ModuleInfo, text: str, parsed: Optional[ast.Module] = None) -> dict:
        """The facts of one module read with `ast` ({} when it cannot be parsed). A module
        over BIG_MODULE_CHARS is parsed one group of top-level statements at a time: the
        facts are all top-level, and one `ast` of a 4.7 MB file takes about 390 MB."""
        self.parses += 1
        if len(text) > BIG_MODULE_CHARS:
            # Statements are read one piece at a time and dropped after use: holding every
            # piece's statements would cost as much as one `ast` of the whole file.
            scratch = replace(info, imports={}, stars=[], aliases={}, self_names=set(), classes={},
                              functions=set(), rebound=set())
            try:
                _collect(scratch, _piece_statements(text))
            except _Unreadable:
                return {}
            return facts_to_json(scratch)
        if parsed is None and not self._keeps_ast(info.key, text):
            # No one will look at this module's whole `ast` (its gate will not read it): the
            # facts, all top-level, and the functions' spans come from its outline.
            outline = _outline(text)
            tree = _parse(outline[0], note=False) if outline is not None else None
            if tree is not None:
                _collect(info, tree.body)
                self._keep_spans(info, tree.body, outline[1])
                return facts_to_json(info)
        if parsed is None:
            parsed = _parse(text)
            if parsed is not None and info.key:
                self._keep_ast(info.key, text, parsed)
        body = parsed.body if parsed is not None else None
        if body is None:
            return {}
        _collect(info, body)
        self._keep_defs(info, body)  # a question about a function's calls often follows
        return facts_to_json(info)

    def _keeps_ast(self, key: Optional[str], text: str) -> bool:
        """Whether `_keep_ast` would keep the `ast` of the run's file `key` read from `text`."""
        return bool(key) and (self.gate_reads is None or self.gate_reads(text))

    def _keep_ast(self, key: str, text: str, tree: ast.Module) -> None:
        """Keep the `ast` of a file of the run read before its own lint, for its file gate
        (`parsed_ast`): nearly every module the index reads with `ast` is a file linted later
        in the run (lightning, one process: 177 of 178), whose gate parses it again. The
        oldest are dropped past _KEPT_AST_CHARS of their text (an `ast` takes ~30 times its
        text's size), and only the `ast` of a file its gate will read (`gate.reads_with_ast`):
        one kept for another would only be re-examined by the cyclic collector until dropped
        (lightning, `-j 1`: of 120 kept, the gate took 28)."""
        if not self._keeps_ast(key, text):
            return
        self._asts[key] = (text, tree)
        info = self.by_key.get(key)
        if self._claims is not None and info is not None:  # its gate's `ast`: linted here (follow_ups)
            self._built.append(info.path)
        self._ast_chars += len(text)
        while self._ast_chars > _KEPT_AST_CHARS and self._asts:
            oldest = next(iter(self._asts))
            self._ast_chars -= len(self._asts.pop(oldest)[0])

    def take_ast(self, key: str, text: str) -> Optional[ast.Module]:
        """The kept `ast` of the run's file `key` if it was read from `text` (once)."""
        found = self._asts.pop(key, None)
        if found is None:
            return None
        self._ast_chars -= len(found[0])
        return found[1] if found[0] == text else None

    def kept_ast(self, key: str, text: str) -> Optional[ast.Module]:
        """The kept `ast` of the run's file `key` if it was read from `text`, left for its
        gate (a look at it only: the tree must not be changed)."""
        found = self._asts.get(key)
        return found[1] if found is not None and found[0] == text else None

    def defs_of(self, module: ModuleInfo) -> dict:
        """The `ast` statement of each top-level function of `module` (the last one of each
        name), kept for the few modules read last."""
        found = self._defs.get(module.path)
        if found is None:
            found = self._keep_defs(module, _module_body(module.text or "") or [])
        return found

    def exports(self, module: ModuleInfo):
        """The names `from module import *` binds, as far as they are limited: the strings
        of its `__all__` (a literal list or tuple at top level), True where it has none
        (every public name), None where `__all__` is something else. Read from the text,
        noted as a dependency on the whole module (`__all__` is not among its facts)."""
        found = self._exports.get(module.path, False)
        if found is False:
            found = True
            if "__all__" in (module.text or ""):
                found = None
                body = _module_body(module.text or "") or []
                for statement in _top_level(body):
                    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                            and isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == "__all__" \
                            and isinstance(statement.value, (ast.List, ast.Tuple)) \
                            and all(isinstance(e, ast.Constant) and isinstance(e.value, str)
                                    for e in statement.value.elts):
                        found = frozenset(e.value for e in statement.value.elts)
                    elif isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name) \
                            and statement.target.id == "__all__":
                        found = None  # extended: not a literal list
                        break
            self._exports[module.path] = found
        if found is not True:
            self._deps[("model", module.path)] = (self.identity(module), "")
        return found

    def function_def(self, module: ModuleInfo, function: str) -> Optional[ast.stmt]:
        """The `ast` statement of `module`'s top-level `function` (the last of that name),
        or None. A module whose functions' `ast` is no longer kept has only that function's
        lines parsed again when they are known (torchvision: 60 questions re-parsed whole
        modules, 0.10 s of CPU in one process)."""
        kept = self._defs.get(module.path)
        if kept is not None:
            return kept.get(function)
        spans = self._spans.get(module.path)
        if spans is None and self._shared is not None:
            spans = self._shared_spans(module)
        if spans is not None:
            if function not in spans:
                return None
            first, last = spans[function]
            from devicelint.source import split_lines

            lines = split_lines(module.text or "", keepends=True)[first - 1:last]
            tree = _parse("".join(lines))
            for statement in tree.body if tree is not None else ():
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == function:
                    return statement
            # Not on its own at the left margin (a `def` inside a top-level `if`): whole.
        return self.defs_of(module).get(function)

    def _keep_defs(self, module: ModuleInfo, body: list) -> dict:
        found = {s.name: s for s in _top_level(body) if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self._defs[module.path] = found
        while len(self._defs) > 16:
            del self._defs[next(iter(self._defs))]
        if len(module.text or "") <= BIG_MODULE_CHARS:  # line numbers of the whole text
            self._keep_spans(module, body)
        return found

    def _keep_spans(self, module: ModuleInfo, body: list, ends: Optional[dict[int, int]] = None) -> None:
        """The lines of each top-level function of `module` (the last one of each name), for
        `function_def`; `ends`: the last line of the functions whose body an outline left
        out (`_outline`), by the line of their `def`."""
        spans = self._spans[module.path] = {}
        for statement in _top_level(body):
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                end = ends.get(statement.lineno) if ends is not None else None
                spans[statement.name] = (min([statement.lineno, *(d.lineno for d in statement.decorator_list)]),
                                         end or statement.end_lineno or statement.lineno)
        self._share(self._spans_key(module), spans)

    # The other worker processes of the run get each module's spans with its facts: a worker
    # that took a module's facts from the one that parsed it has no `ast` of its functions,
    # and parsed the whole module again for the first function asked (lightning, `-j 2`: 21
    # whole-module parses, against 3 in one process).
    def _spans_key(self, module: ModuleInfo) -> str:
        return facts_key(module.digest, module.name, module.is_package) + ".spans"

    def _shared_spans(self, module: ModuleInfo) -> Optional[dict[str, tuple[int, int]]]:
        """The spans of `module`'s top-level functions that another worker shared, else None."""
        try:
            with open(os.path.join(self._shared or "", self._spans_key(module)), encoding="utf-8") as file:
                import json

                value = json.load(file)
        except (OSError, ValueError):
            return None
        if not isinstance(value, dict) or not all(
                isinstance(name, str) and isinstance(span, list) and len(span) == 2
                and all(type(line) is int for line in span) for name, span in value.items()):
            return None
        spans = self._spans[module.path] = {name: (span[0], span[1]) for name, span in value.items()}
        return spans

    def _module_files(self, dotted: str, importer: ModuleInfo) -> list[str]:
        """The real path of module `dotted`'s file as `importer` would import it, under the
        root (a list of one, or empty)."""
        found = self._lookup(dotted, importer.search)
        self._deps[("lookup", dotted, importer.search)] = found
        return found

    def _lookup(self, dotted: str, search: tuple[str, ...]) -> list[str]:
        key = (dotted, search)
        found = self._files.get(key)
        if found is None:
            found = self._files[key] = self._find_files(dotted, search)
        return found

    def _find_files(self, dotted: str, search: tuple[str, ...]) -> list[str]:
        parts = dotted.split(".")
        if not all(parts):
            return []
        for base in search:
            # Each step is first looked up in its directory's listing (read once per run,
            # like Python's own finders): most lookups are of external modules (torch,
            # typing) and end at the first step without a stat; a warm run checks each
            # of its thousands of cached lookups so.
            folder: Optional[str] = base
            for part in parts[:-1]:
                folder = os.path.join(folder, part) if part in self._listing(folder) else None
                if folder is None:
                    break
            if folder is None:
                continue
            last, names = parts[-1], self._listing(folder)
            here = os.path.join(folder, last)
            for directory, name in ((here, "__init__.py"), (folder, last + ".py")):
                if directory is here and last not in names:
                    continue
                kind = self._listing(directory).get(name)
                if kind == _PLAIN_FILE:  # its real path is its directory's and its name
                    real = os.path.join(self._real_dir(directory), name)
                elif kind == _LINK and os.path.isfile(os.path.join(directory, name)):
                    real = os.path.realpath(os.path.join(directory, name))
                else:
                    continue
                if real.startswith(self.root + os.sep):
                    return [real]
        return []

    def _listing(self, folder: str) -> dict[str, int]:
        """The names in `folder`, each with its kind (_PLAIN_FILE, _LINK, else 0), read once
        per run ({} when it cannot be read)."""
        found = self._listings.get(folder)
        if found is None:
            found = self._listings[folder] = {}
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        found[entry.name] = _LINK if entry.is_symlink() else \
                            _PLAIN_FILE if entry.is_file(follow_symlinks=False) else 0
            except (OSError, ValueError):
                pass
        return found

    def _real_dir(self, folder: str) -> str:
        found = self._real_dirs.get(folder)
        if found is None:
            found = self._real_dirs[folder] = os.path.realpath(folder)
        return found

    # -- answers -------------------------------------------------------------------------
    def view(self, key: str, context_type: Optional[type] = None, ctx=None,
             tree: Optional[tuple[str, ast.Module]] = None) -> Optional["FileView"]:
        """The view of the linted file `key` (None if it is not one, or cannot be read);
        `ctx`: its libcst context, whose tree gives its facts without another parse (`tree`:
        its text and `ast`, the same)."""
        info = self.by_key.get(key)
        if info is None or not self.ready(info, ctx, tree):
            return None
        view = FileView(self, info, context_type, ctx)
        # What the file being linted asks is its own dependency; what another file's model
        # (built for it, kept for the run) asks is that model's, linked from each file
        # that uses the model (model_of).
        view.deps = self._job_deps if key == self._job_key else self._view_deps.setdefault(info.path, {})
        return view

    def view_of(self, module: ModuleInfo) -> "FileView":
        return FileView(self, module)

    def module_named(self, dotted: str, importer: ModuleInfo) -> Optional[ModuleInfo]:
        """The local module `importer` gets for `import dotted`; never itself (a script
        `d2l/torch.py` importing torch means the real package)."""
        for found in self._module_files(dotted, importer):
            target = self._module_at(found)
            self._note_module(found, self.modules.get(found))
            return target if target is not importer else None
        return None

    def resolve(self, module: ModuleInfo, dotted: str, depth: int = 0) -> Optional[Symbol]:
        """What `dotted` (a name as written in `module`, or an absolute/relative import
        target) stands for."""
        # Memoised at every depth: modules that `import *` each other would otherwise make
        # the search exponential (five practitioner repos linted together hung).
        # Each answer keeps the dependencies noted while finding it, so that a later file
        # given the memoised answer notes them too.
        if depth <= _MAX_DEPTH and not module.stars and dotted[:1] != ".":
            # A name whose head the module does not bind at top level (`self.log`, a local
            # variable: most of what rules ask) finds nothing, whatever other modules hold:
            # answered from the module's facts alone, as `_resolve` would, without the memo.
            head = dotted.partition(".")[0]
            if head not in module.imports and head not in module.aliases and head not in module.classes \
                    and head not in module.functions and head not in module.self_names:
                self._note_module(module.path, module)
                return None
        return self._memoised(self._resolved, (module.path, dotted), None, self._resolve, module, dotted, depth)

    def _memoised(self, memo: dict, key: tuple, empty, compute, *args):
        """`compute(*args)`, memoised in `memo` under `key` with the dependencies it noted.

        Modules may import each other: a question met again while it is still being answered
        gets `empty` (a cycle finds nothing). What is computed from such an open answer is
        provisional: it becomes final when the open question ends with `empty` too, and is
        forgotten when that ends with an answer, to be computed again when next asked. (It
        used to be kept: PyTorch-VAE's `models/__init__.py` `import *`s each model module,
        which import `BaseVAE` back from the package; the first module asked memoised
        "not found" for every other one the search walked through, so their classes were no
        modules and DL017 found nothing in a folder run, depending on the files' order.)"""
        found = memo.get(key)
        if found is None:
            position = len(self._open)
            deps: dict = {}
            memo[key] = (empty, deps, position)
            self._open.append([memo, key, position])
            try:
                answer = self._noting(deps, compute, *args)
            except BaseException:
                memo.pop(key, None)
                raise
            finally:
                low = self._open.pop()[2]
            rests_on = low if low < position else None  # the open question it read, if any
            found = memo[key] = (answer, deps, rests_on)
            if position in self._read_open:
                self._read_open.discard(position)
                self._settle(position, answer != empty, rests_on)
            if rests_on is not None:
                self._provisional.append((memo, key))
                self._open[-1][2] = min(self._open[-1][2], rests_on)
        elif found[2] is not None:  # open, or computed from an open answer
            frame = self._open[found[2]]
            if frame[0] is memo and frame[1] == key:
                self._read_open.add(found[2])
            self._open[-1][2] = min(self._open[-1][2], found[2])
        self._deps[("link", id(found[1]))] = found[1]
        return found[0]

    def _settle(self, position: int, forget: bool, rests_on: Optional[int]) -> None:
        """The question open at `position`, whose open answer was read, has ended: forget
        every provisional answer if its own answer is not the open one; else those that
        rested on it rest now on what it rested on (`rests_on`), or are final."""
        kept = []
        for memo, key in self._provisional:
            answer, deps, low = memo[key]
            if forget:
                del memo[key]
                continue
            if low >= position:
                memo[key] = (answer, deps, rests_on)
                if rests_on is None:
                    continue
            kept.append((memo, key))
        self._provisional = kept

    def _noting(self, deps: dict, compute, *args):
        """`compute(*args)`, its dependencies noted into `deps`."""
        outer = self._deps
        self._deps = deps
        try:
            return compute(*args)
        finally:
            self._deps = outer

    def _resolve(self, module: ModuleInfo, dotted: str, depth: int) -> Optional[Symbol]:
        if depth > _MAX_DEPTH:
            return None
        self._note_module(module.path, module)
        if dotted.startswith("."):
            absolute = _absolute(dotted, module)
            return self._resolve_absolute(module, absolute, depth + 1) if absolute else None
        head, _, rest = dotted.partition(".")
        if head in module.rebound:
            return None
        if head in module.self_names:
            return self._member(module, rest, depth + 1) if rest else Symbol("module", module, module.name)
        if head in module.classes or head in module.functions:
            symbol = Symbol("class" if head in module.classes else "function", module, head)
            return symbol if not rest else None
        if head in module.imports:
            target = module.imports[head]
            return self._resolve_absolute(module, f"{target}.{rest}" if rest else target, depth + 1)
        if head in module.aliases:
            text = module.aliases[head]
            return self.resolve(module, f"{text}.{rest}" if rest else text, depth + 1)
        for star in reversed(module.stars):
            target = self.module_named(star, module)
            if target is not None and target is not module:
                found = self._member(target, dotted, depth + 1)
                if found is not None and found.kind != "external":
                    return found
        return None

    def _resolve_absolute(self, importer: ModuleInfo, dotted: str, depth: int) -> Optional[Symbol]:
        if depth > _MAX_DEPTH:
            return None
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            target = self.module_named(".".join(parts[:cut]), importer)
            if target is not None:
                rest = ".".join(parts[cut:])
                return self._member(target, rest, depth) if rest else Symbol("module", target, target.name)
        return Symbol("external", None, dotted)

    def _member(self, module: ModuleInfo, dotted: str, depth: int) -> Optional[Symbol]:
        if depth > _MAX_DEPTH:
            return None
        found = self.resolve(module, dotted, depth + 1)
        if found is None and module.is_package and module.name:
            # `pkg.sub` of a package: its submodule, whether or not __init__ imports it.
            head, _, rest = dotted.partition(".")
            sub = self.module_named(f"{module.name}.{head}", module)
            if sub is not None and sub is not module:
                return self._member(sub, rest, depth + 1) if rest else Symbol("module", sub, sub.name)
        return found

    # -- the names that can stand for a function (importers_of) -------------------------------
    # A resolution keeps a dotted name's last part from step to step: an import or an alias
    # binding of its head hands on the rest as it was, a star import or a package's
    # submodule the whole name. Only where the name is the bound name alone does a binding
    # replace it, by its target's last part (`from m import f as g`, `g = m.f`: a rename).
    # So a name resolves to `function` only if its last part is `function`, or a name some
    # module binds by a rename to one of these, transitively; and every such binding is in a
    # module whose text spells the name it renames. The modules a resolution that reaches
    # `function`'s module passes through all lie below the highest directory that module
    # can be looked up from (`_reach_top`; see may_reach), where no symbolic link is.
    def naming(self, module: ModuleInfo, function: str, start: ModuleInfo) -> Optional[frozenset]:
        """The names whose resolutions, from `start`, may end at `module`'s `function`, as
        the last part of a dotted name; None when not known (a symbolic link where lookups
        may walk, too many names to walk, more than `_MAX_NAMING` names)."""
        extra = frozenset(p for p in start.name.split(".") if p and not p.isidentifier())
        top = self._reach_top(module, extra)
        if top is None or not (start.path + os.sep).startswith(top + os.sep):
            return None
        key = (module.path, function, top, extra)
        if key in self._naming:
            return self._naming[key]
        self._naming[key] = None
        files = self._tree(top)
        if files is None or len(self.modules) + len(files) >= _MAX_MODULES // 2:
            return None
        # Lookups from the search directories of those modules that lie above `top` (the
        # root, a top package's folder) cross no symbolic link either.
        if (top, extra) not in self._bases_unlinked:
            bases = {base for path in files for base in self._module_name(path)[1]}
            self._bases_unlinked[top, extra] = all(
                self._no_links_below(base, extra) for base in sorted(bases)
                if not (base + os.sep).startswith(top + os.sep))
        if not self._bases_unlinked[top, extra]:
            return None
        spelling = self._spelling(top, files)
        found = {function}
        fresh = {function}
        while fresh:
            words, fresh = fresh, set()
            for path in spelling.files_spelling(words):
                info = self._module_for(path)
                if info is None or not self.ready(info):
                    continue
                for bound, target in (*info.imports.items(), *info.aliases.items()):
                    if bound not in found and target.rpartition(".")[2] in found:
                        fresh.add(bound)
            found |= fresh
            if len(found) > _MAX_NAMING:
                return None
        self._naming[key] = frozenset(found)
        return self._naming[key]

    def _spelling(self, top: str, files: list[str]) -> "_Spelling":
        """Which of `files` (the .py files below `top`) spell each word, made once."""
        found = self._spellings.get(top)
        if found is None:
            found = self._spellings[top] = _Spelling(files, self._scan_text)
        return found

    def spells(self, path: str, name: str) -> bool:
        """Whether the text of the module at `path` holds `name` as a whole word (`_spells`),
        from a `_Spelling` made for the files below some directory when one covers it."""
        for spelling in self._spellings.values():
            if spelling.covers(path):
                return spelling.spells(path, name)
        return _spells(self._scan_text(path) or "", name)

    def _tree(self, top: str) -> Optional[list[str]]:
        """Every .py file below `top`, whatever the names of the directories between; None
        where a symbolic link lies below it, or past `_MAX_WALKED_NAMES` names."""
        if top not in self._trees:
            found: Optional[list[str]] = []
            stack = [top]
            budget = _MAX_WALKED_NAMES
            while stack and found is not None:
                folder = stack.pop()
                names = self._listing(folder)
                budget -= len(names)
                if budget < 0 or _LINK in names.values():
                    found = None
                    break
                for name, kind in names.items():
                    if kind == 0:
                        stack.append(os.path.join(folder, name))
                    elif kind == _PLAIN_FILE and name.endswith(".py"):
                        found.append(os.path.join(folder, name))
            self._trees[top] = found
        return self._trees[top]

    def _scan_text(self, path: str) -> Optional[str]:
        """The text of the module at `path` as its identifiers read (NFKC-normalised where
        not ASCII: Python reads identifiers so), without parsing it; None when the index
        could not read it."""
        if path in self._texts:
            return self._texts[path]
        info = self.modules.get(path)
        if info is not None:
            text = info.text
        elif path in self._unreadable:
            text = None
        else:
            data = _read_small(path)
            try:
                text = data.decode("utf-8-sig") if data is not None else None
            except (ValueError, UnicodeDecodeError):
                text = None
        if text is not None and not text.isascii():
            import unicodedata

            text = unicodedata.normalize("NFKC", text)
        self._texts[path] = text
        return text

    def is_module_class(self, symbol: Symbol, is_root, depth: int = 0) -> bool:
        if symbol.kind == "external":
            return is_root(symbol.name)
        if symbol.kind != "class" or symbol.module is None or depth > _MAX_DEPTH:
            return False
        # A cycle of bases is not a module class.
        return self._memoised(self._module_class, (symbol.module.path, symbol.name), False,
                              self._is_module_class, symbol, is_root, depth)

    def _is_module_class(self, symbol: Symbol, is_root, depth: int) -> bool:
        self._note_module(symbol.module.path, symbol.module)
        for base in symbol.module.classes.get(symbol.name, []):
            found = self.resolve(symbol.module, base)
            if found is not None and self.is_module_class(found, is_root, depth + 1):
                return True
        return False

    def model_of(self, module: ModuleInfo, context_type: type):
        """The semantic model of another file of the project, built on first use with
        `context_type` (devicelint.context.FileContext)."""
        self._deps[("model", module.path)] = (self.identity(module), "")
        used = self._view_deps.setdefault(module.path, {})
        self._deps[("link", id(used))] = used
        found = self._models.get(module.path)
        if found is None and module.path not in self._models:
            self._models[module.path] = None
            if self._claims is not None:  # a worker of a run (share_jobs): see follow_ups
                self._built.append(module.path)
            try:
                from devicelint import safe_parse

                kept = self._take_kept_tree(module.path)
                tree = kept[1] if kept is not None and kept[0] == (module.text or "") \
                    else safe_parse.parse_module(module.text or "")
                # A notebook's model names its lines by cell (`cell 4:2`: FileContext.site).
                ctx = context_type(module.shown, module.text or "", tree, locate=self._cells.get(module.path))
                ctx.walk({}, {})
                found = ctx.semantic
            except Exception:  # noqa: BLE001 - a file we cannot read gives no facts
                found = None
            self._models[module.path] = found
            if found is not None and self.freeze_models:
                # Kept for the run, hundreds of thousands of objects: every collection
                # until the process ends would re-examine them (lightning, `-j 2`: the
                # collector's CPU 0.03 s without the index, 0.12 s with it). Frozen, they
                # are skipped; what is alive now and dies later (the asking file's tree)
                # is still freed by reference counting, as the collector is paused for
                # it anyway (devicelint/collector.py).
                gc.freeze()
        return found

    def keep_tree(self, key: str, source: str, tree) -> None:
        """The libcst tree the lint of the run's file `key` made from its whole text
        `source`, kept (the last files linted, up to KEPT_TREE_CHARS of text) for a later
        question about that file: trees are immutable, and a model built on it is the one a
        parse would give. Files ask about each other both ways (train.py about data.py's
        helpers, data.py about who iterates its loaders), so no order of the files lints
        every one after the questions about it: practitioner repositories in one run, 68 of
        the 206 models built were of files linted before (bench/model_builds.py)."""
        info = self.by_key.get(key)
        if info is None or info.path in self._models or len(source) > KEPT_TREE_CHARS // 2 \
                or len(info.text or "") != len(source):  # (a piece of a big module: not its tree)
            return
        self._take_kept_tree(info.path)  # (kept again as the newest)
        self._kept_trees[info.path] = (source, tree)
        self._kept_chars += len(source)
        if self.freeze_models:
            gc.freeze()  # out of the collector's reach, as models are (model_of); freed by refcounts
        while self._kept_chars > KEPT_TREE_CHARS:
            self._take_kept_tree(next(iter(self._kept_trees)))

    def _take_kept_tree(self, path: str) -> Optional[tuple[str, object]]:
        """(text, tree) kept for `path`, no longer kept; None when none is."""
        kept = self._kept_trees.pop(path, None)
        if kept is not None:
            self._kept_chars -= len(kept[0])
        return kept

    # -- what a file's findings depend on (the result cache) ----------------------------
    # While a file is linted (`start_job` .. `finish_job`) every fact the index gives is
    # noted, with what it was: a module's facts (their hash), a function's calls, a module
    # lookup (which file it found), another file's model (its content). A cached result
    # stays good as long as each of those is unchanged (`still_valid`): a change to one
    # module re-lints the files that used its facts, and only if the facts changed (an
    # edit inside a function body or a comment changes no facts).
    def start_job(self, key: str) -> None:
        self._job_key = key
        self._job_deps = self._deps = {}

    def finish_job(self) -> tuple[list, dict]:
        """(the dependencies noted since `start_job`, the facts read meanwhile)."""
        if not self.recording:
            self._job_key = None
            self._job_deps = self._deps = {}
            return [], {}
        found: dict = {}
        seen: set[int] = set()
        stack = [self._job_deps]
        while stack:
            deps = stack.pop()
            if id(deps) in seen:
                continue
            seen.add(id(deps))
            for key, value in deps.items():
                if key[0] == "link":
                    stack.append(value)
                else:
                    found[key] = value
        self._job_key = None
        self._job_deps = self._deps = {}
        facts, self.new_facts = self.new_facts, {}
        return sorted(_dependency_row(key, value) for key, value in found.items()), facts

    def _note_module(self, path: str, info: Optional[ModuleInfo]) -> None:
        if self.recording:
            self._deps[("facts", path)] = (self.identity(info), self.token(info))

    def identity(self, info: Optional[ModuleInfo]) -> str:
        """What a module's facts are made of: its content and where it sits (its dotted
        name, whether it is a package, where its absolute imports are looked up)."""
        if info is None:
            return ""
        if info.identity is None:
            info.identity = _hash(info.digest, info.name, str(info.is_package), *info.search)
        return info.identity

    def token(self, info: Optional[ModuleInfo]) -> str:
        """A hash of a module's facts ("" when it cannot be read)."""
        if info is None or not self.ready(info):
            return ""
        if info.token is None:
            import json

            info.token = _hash(self.identity_layout(info), json.dumps(facts_to_json(info), sort_keys=True))
        return info.token

    @staticmethod
    def identity_layout(info: ModuleInfo) -> str:
        return _hash(info.name, str(info.is_package), *info.search)

    def consulted(self) -> tuple[list[str], list[str]]:
        """(files, directories) this index's answers looked at on disk: the modules it read
        or found unreadable, and the symbolic links among the names it listed (their
        targets' stat); the directories it listed for module lookups or resolved. The
        directories above each module (its name and search path) are the caller's to add.
        The result cache's record of a whole run stats them all (devicelint.cache)."""
        files = [*self.modules, *self._unreadable]
        for folder, names in self._listings.items():
            files.extend(os.path.join(folder, name) for name, kind in names.items() if kind == _LINK)
        return files, [*self._listings, *self._real_dirs]

    def still_valid(self, rows: list) -> bool:
        """Whether every dependency a cached result noted (`finish_job`) is as it was."""
        checked = self._checked
        for row in rows:
            # Files share most rows (the same lookups, the same modules' facts): each is
            # checked once per run.
            key = tuple(tuple(item) if type(item) is list else item for item in row)
            found = checked.get(key)
            if found is None:
                try:
                    found = checked[key] = self._still(row)
                except Exception:  # noqa: BLE001 - a garbled row: lint again
                    found = checked[key] = False
            if not found:
                return False
        return True

    def _still(self, row: list) -> bool:
        kind = row[0]
        if kind == "lookup":
            _kind, dotted, search, found = row
            return self._lookup(dotted, tuple(search)) == list(found)
        path = row[1]
        # Rows hold real paths: one that is not, or lies outside the root, is not ours.
        if not (path.startswith(self.root + os.sep) and os.path.normpath(path) == path):
            return False
        info = self._module_for(path)
        if kind == "facts":
            _kind, _path, identity, token = row
            return self.identity(info) == identity or self.token(info) == token
        if kind == "model":
            return self.identity(info) == row[2]
        if kind == "calls":
            _kind, _path, function, identity, token = row
            if self.identity(info) == identity:
                return True
            return info is not None and self.ready(info) and \
                _hash(*sorted(FileView(self, info).raw_calls(function))) == token
        if kind == "importers":
            _kind, _path, function, run, token = row
            if run == self.run_identity():
                return True  # the same files, each unchanged: the same importers
            if info is None or not info.key or not self.ready(info):
                return False
            found = FileView(self, info).importers_of(function)
            return _hash(*sorted(m.path for m in found)) == token
        return False

    def run_identity(self) -> str:
        """The identities of all files of the run (what `importers_of` looks at)."""
        if self._run_identity is None:
            self._run_identity = _hash(*sorted(f"{m.path}\0{self.identity(m)}" for m in self.by_key.values()))
        return self._run_identity

    def _module_for(self, path: str) -> Optional[ModuleInfo]:
        """The module at `path`, read (not parsed) if it is not yet; None if unreadable."""
        info = self.modules.get(path)
        if info is None and path not in self._unreadable:
            data = _read_small(path)
            info = self._add(path, data, None) if data is not None else None
            if info is None:
                self._unreadable.add(path)
        return info


def _asked(method):
    """A question of a view: what answering it uses is noted into the view's dependencies
    (those of the file being linted, or of another file's model)."""
    def asked(self, *args):
        if self.deps is None:
            return method(self, *args)
        return self.index._noting(self.deps, method, self, *args)

    asked.__name__ = method.__name__
    asked.__doc__ = method.__doc__
    return asked


class FileView:
    """The index as one file sees it."""

    def __init__(self, index: ProjectIndex, module: ModuleInfo,
                 context_type: Optional[type] = None, ctx=None) -> None:
        self.index = index
        self.module = module
        # The file's own libcst context, when it is the one being linted (its tree answers
        # `calls_in` without another parse).
        self.ctx = ctx if ctx is not None and ctx.source == module.text else None
        # The asking file's devicelint.context.FileContext class: other files' models are
        # built with it, so that this module does not import the context (which imports
        # the semantic model, which imports this module). None: a view that builds no
        # models.
        self.context_type = context_type
        # Where what its answers use is noted (ProjectIndex.view); None: wherever the
        # index notes at the time (a view made for one question).
        self.deps: Optional[dict] = None

    @_asked
    def resolve(self, dotted: str) -> Optional[Symbol]:
        return self.index.resolve(self.module, dotted)

    @_asked
    def is_module_class(self, dotted: str, is_root) -> bool:
        """`dotted` (as the file writes it, or its import's qualified name) names a class of
        another local module that derives from a class `is_root` accepts."""
        found = self.index.resolve(self.module, dotted)
        return found is not None and found.kind == "class" and self.index.is_module_class(found, is_root)

    @_asked
    def alias(self, dotted: str) -> Optional[str]:
        """The external qualified name a module-level alias chain stands for
        (`d2l.zeros` -> `torch.zeros`), else None."""
        head = dotted.partition(".")[0]
        self.index._note_module(self.module.path, self.module)
        if head not in self.module.aliases and head not in self.module.self_names:
            return None
        found = self.index.resolve(self.module, dotted)
        return found.name if found is not None and found.kind == "external" else None

    @_asked
    def star_name(self, name: str) -> Optional[str]:
        """The qualified name outside the project that `name` stands for when only a
        `from m import *` of this file binds it, m a local module: Python binds m's `__all__`
        if m defines one, else its names not starting with `_`, the modules m imports
        among them (`from utils import *` with `import torch` in utils.py binds `torch`).
        None when this file binds `name` itself, when a star import of a module not found
        under the root (a third-party one) comes after (it may bind it), when m's `__all__`
        is not a literal list of strings, or when the name is m's own (a class, a function,
        a variable)."""
        module = self.module
        self.index._note_module(module.path, module)
        if not module.stars or name.startswith("_") or name in module.imports or name in module.classes \
                or name in module.functions or name in module.aliases or name in module.self_names \
                or name in module.rebound:
            return None
        for star in reversed(module.stars):
            target = self.index.module_named(star, module)
            if target is None or not self.index.ready(target):
                return None  # third-party or unreadable: what it binds is not known
            self.index._note_module(target.path, target)  # its facts decide, found or not
            exported = self.index.exports(target)
            if exported is None:
                return None
            if exported is not True and name not in exported:
                continue
            if name in target.rebound:
                return None
            found = self.index.resolve(target, name)
            if found is None:
                if name in target.classes or name in target.functions or exported is not True:
                    return None  # bound there, not to something outside the project
                continue  # `__all__`-less m does not bind it: an earlier star may
            return found.name if found.kind == "external" else None
        return None

    @_asked
    def function(self, dotted: str):
        """(semantic model of the other file, its top-level FunctionDef) for a function of
        another local module, else None."""
        found = self.index.resolve(self.module, dotted)
        if found is None or found.kind != "function" or found.module is self.module \
                or self.context_type is None:
            return None
        model = self.index.model_of(found.module, self.context_type)
        if model is None:
            return None
        for node in model.functions().get(found.name, []):
            if model.parent(node) is model.ctx.module:
                return model, node
        return None

    def function_module(self, dotted: str) -> Optional[tuple[ModuleInfo, str]]:
        """(the other local module, the function's name) for the top-level function that
        `function` would find, without building that module's model (a cheap look at its
        text first); its content is noted as a dependency, as `function` notes it."""
        found = self.index.resolve(self.module, dotted)
        if found is None or found.kind != "function" or found.module is self.module \
                or self.context_type is None:
            return None
        self.index._deps[("model", found.module.path)] = (self.index.identity(found.module), "")
        return found.module, found.name

    @_asked
    def text_has(self, module: ModuleInfo, pattern: "re.Pattern[str]") -> bool:
        """Whether another local module's text matches `pattern` (a cheap look before its
        model is built: a question whose answer needs a construct the text cannot hold is
        answered without it). Memoised per module and pattern; noted as a dependency on
        the module's content, as its model would be."""
        index = self.index
        index._deps[("model", module.path)] = (index.identity(module), "")
        key = ("text_has", module.path, pattern.pattern)
        found = index.derived.get(key)
        if found is None:
            found = index.derived[key] = pattern.search(module.text or "") is not None
        return found

    @_asked
    def model_of(self, module: ModuleInfo):
        """The semantic model of another file of the project (ProjectIndex.model_of)."""
        return self.index.model_of(module, self.context_type) if self.context_type is not None else None

    @_asked
    def calls_of(self, symbol: Symbol) -> set[str]:
        """`calls_in` of a function of another module (`symbol`, from `resolve`)."""
        return self.index.view_of(symbol.module).calls_in(symbol.name)

    def raw_calls(self, function: str) -> set[str]:
        """The dotted names a top-level function of this file calls, as written."""
        module = self.module
        if module.calls is None and self.ctx is not None:
            module.calls = _calls_of_tree(self.ctx)  # every function's: the tree is at hand
            module.calls_complete = True
        if module.calls is None:
            module.calls = {}
        if function not in module.calls and not module.calls_complete:
            # Read with `ast`, one function at a time (walking the whole module costs more
            # than parsing it).
            statement = self.index.function_def(module, function)
            module.calls[function] = {d for d in (_dotted(n.func) for n in ast.walk(statement)
                                                  if isinstance(n, ast.Call)) if d} \
                if statement is not None else set()
        return module.calls.get(function, set())

    @_asked
    def calls_in(self, function: str) -> set[str]:
        """The external qualified names a top-level function of this file calls (a cheap
        look before building another file's model)."""
        calls = self.raw_calls(function)
        index = self.index
        if index.recording:
            index._deps[("calls", self.module.path, function)] = (index.identity(self.module),
                                                                  _hash(*sorted(calls)))
        found = set()
        for dotted in calls:
            symbol = index.resolve(self.module, dotted)
            if symbol is not None and symbol.kind == "external":
                found.add(symbol.name)
        return found

    @_asked
    def importers_of(self, function: str) -> list[ModuleInfo]:
        """The other files of the run that import this file's top-level `function` or class
        (by name, through re-exports and `import *`, or as `module.function`). In a run that
        keeps no result cache, only those whose text spells a name that can stand for it
        (`ProjectIndex.naming`): what the callers look for in an importer is code of it that
        names the function (a call, a loader built by it), and a name resolves to it only
        where its last part is one of those names; a file that spells none (`import data`,
        `data.get_loader` nowhere) would be read and resolved for nothing (timm: 283 modules
        parsed with `ast` for one question, the one importer spelling it among them)."""
        found = []
        index = self.index
        for other in index.by_key.values():
            # A file that names no local module, or from where no lookup can find this one,
            # cannot import it: skipped unread.
            if other is self.module or not index.may_reach(other, self.module) \
                    or not index.may_import_local(other):
                continue
            names = None if index.recording else index.naming(self.module, function, other)
            if names is not None and not any(index.spells(other.path, name) for name in names):
                continue
            if not index.ready(other):
                continue
            if self._imports_from(other, function):
                found.append(other)
        # Which files of the run import it: a new importer, or one that no longer does,
        # changes the answer (checked again in ProjectIndex.still_valid).
        if index.recording:
            index._deps[("importers", self.module.path, function)] = (
                index.run_identity(), _hash(*sorted(m.path for m in found)))
        return found

    def _imports_from(self, other: ModuleInfo, function: str) -> bool:
        """Whether a name `other` imports (`b`), `b.function`, or under `import *` the bare
        name, stands for this module's top-level `function` or class. `b.function` is not
        resolved where `b` itself is external: no prefix of what `b` names is then a local
        module, so `b.function` is external or at most a module (`b/function.py`), never a
        function (most of a script's imports: torch, numpy)."""
        index = self.index

        def is_it(symbol: Optional[Symbol]) -> bool:
            return symbol is not None and symbol.kind in ("function", "class") and symbol.module is self.module \
                and symbol.name == function

        heads = []
        for name in other.imports:
            symbol = index.resolve(other, name)
            if is_it(symbol):
                return True
            heads.append(symbol)
        for name, head in zip(other.imports, heads):
            if (head is None or head.kind != "external") and is_it(index.resolve(other, f"{name}.{function}")):
                return True
        return bool(other.stars) and is_it(index.resolve(other, function))


# -- reading one module with ast ---------------------------------------------------------------
def real_paths(paths: Iterable[str]) -> list[str]:
    """`os.path.realpath` of each path, with each directory resolved once: a file that
    is no symbolic link is its directory's real path and its name (one `lstat` per file
    instead of one per component of its path: the runner resolves every file of a run
    before its workers start, serially)."""
    folders: dict[str, str] = {}
    found = []
    for path in paths:
        folder, name = os.path.split(path)
        if not name or name in (".", "..") or os.path.islink(path):
            found.append(os.path.realpath(path))
            continue
        real = folders.get(folder)
        if real is None:
            real = folders[folder] = os.path.realpath(folder)
        found.append(os.path.join(real, name))
    return found


def _notebook_source(data: bytes) -> Optional[tuple[str, Callable]]:
    """The virtual source of a notebook's code cells and its cell map (devicelint.notebook),
    None if unreadable."""
    from devicelint import notebook

    try:
        read = notebook.load(data)
    except notebook.NotebookError:
        return None
    return read.source, notebook.cell_map(read)


def _module_name(path: str, root: str) -> tuple[str, tuple[str, ...], bool]:
    """(dotted name, directories its absolute imports are looked up in, is a package)."""
    file = Path(path)
    is_package = file.name == "__init__.py"
    parts = [] if is_package else [file.stem]
    here = file.parent
    while (here / "__init__.py").is_file() and str(here) != root and len(parts) < 32:
        parts.insert(0, here.name)
        here = here.parent
    search = []
    for candidate in (str(here), str(file.parent), root):
        if candidate not in search:
            search.append(candidate)
    return ".".join(parts), tuple(search), is_package


def _parse(text: str, note: bool = True) -> Optional[ast.Module]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `"\m"` in a linted file is not ours to report
            tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if note:
        accepted.note(text)  # the syntax checks of this text need not parse it again (issue 17)
    return tree


# A string literal on one line (a header's default, a decorator's argument): its brackets
# and `#` are not the line's.
_ONE_LINE_STRING = re.compile(r"""[rRbBuUfF]{0,2}(?:'[^'\\\n]*(?:\\.[^'\\\n]*)*'|"[^"\\\n]*(?:\\.[^"\\\n]*)*")""")
_OUTLINED = re.compile(r"(?:async[ \t]+def|def|class)\b")


def _outline(text: str) -> Optional[tuple[str, dict[int, int]]]:
    """`text` with the body of each function and class at the left margin left out (its
    lines blank, the first `...`), the line numbers kept; and the last line of each such
    function's or class's body by the line of its `def`/`class`. The index's facts are all
    top-level (`_ast_bindings`: a class's name and bases, a function's name) and a
    function's lines are all a question about it needs (`function_def`). Read from the
    lines' indentation and the headers' brackets only; None where that reading may be wrong
    (a header whose end is not found, a one-line body): the caller reads the whole text.
    An outline that is wrong anyway (a line at the left margin inside a string of a body)
    almost always fails to parse: then too the whole text is read."""
    from devicelint.source import split_lines

    out: list[str] = []
    ends: dict[int, int] = {}
    header_at = body_at = depth = 0
    for number, line in enumerate(split_lines(text, keepends=True), 1):
        stripped = line.lstrip()
        blank = stripped[:1] in ("", "#")
        at_margin = not blank and line[:1] not in (" ", "\t", "\f")
        if body_at and not at_margin:
            out.append("\n" if blank or body_at in ends else " ...\n")
            if not blank:
                ends[body_at] = number
            continue
        if body_at:
            if body_at not in ends:
                return None  # no body below the header
            body_at = 0
        if not header_at and at_margin and _OUTLINED.match(line):
            header_at, depth = number, 0
        out.append(line)
        if header_at:
            code = _ONE_LINE_STRING.sub('""', line).split("#", 1)[0].rstrip()
            depth += sum(map(code.count, "([{")) - sum(map(code.count, ")]}"))
            if depth == 0 and code.endswith(":"):
                body_at, header_at = header_at, 0
            elif depth < 0 or depth == 0 and not code.endswith("\\"):
                return None  # a one-line body (`class E(Exception): pass`), or not read right
    if header_at or body_at and body_at not in ends:
        return None
    return "".join(out), ends


def _module_body(text: str) -> Optional[list]:
    """The top-level statements of a module (None if it does not parse); over
    BIG_MODULE_CHARS read a piece at a time, so that memory follows the largest piece."""
    pieces = (top_level_pieces(text) if len(text) > BIG_MODULE_CHARS else None) or [(1, text)]
    body = []
    for _line, piece in pieces:
        tree = _parse(piece)
        if tree is None:
            return None
        body.extend(tree.body)
    return body


class _Unreadable(Exception):
    """A piece of a big module that `ast` cannot parse (the module then has no facts)."""


def _piece_statements(text: str) -> Iterator[ast.stmt]:
    """The top-level statements of a big module, parsed one piece at a time (only the
    current piece's tree is alive); raises _Unreadable at a piece that does not parse."""
    for _line, piece in top_level_pieces(text, PIECE_CHARS) or [(1, text)]:
        tree = _parse(piece)
        if tree is None:
            raise _Unreadable
        yield from tree.body
        del tree


# A module's facts come from what its top-level statements bind, read by one of two readers:
# `_ast_bindings` (a module read on its own, with `ast`) or `_tree_bindings` (a linted file's
# own libcst tree, no second parse). A reader only translates syntax into these tuples;
# `_facts_from` alone decides what they mean, so that both give the same facts:
#   ("import", dotted, bound or None)        import a.b [as c]
#   ("from", module, name, bound or None)    from ..m import n [as c]; `module` keeps its dots;
#                                            name "*" for `import *`
#   ("class", name, bases)                   bases: the dotted text of each plain base
#   ("def", name)
#   ("self", name)                           name = sys.modules[__name__]
#   ("alias", name, dotted)                  name = a.b.c (one plain name assigned)
#   ("bind", name)                           a name bound any other way
def _facts_from(info: ModuleInfo, bindings: Iterable[tuple]) -> None:
    meanings: dict[str, set] = {}

    def bind(name: str, meaning: object = None) -> None:
        # A name bound twice to the same thing (`import torch` twice, `nn_Module = nn.Module`
        # at the top and again at the bottom) keeps its meaning; anything else is rebound.
        meanings.setdefault(name, set()).add(meaning if meaning is not None else object())

    for binding in bindings:
        kind, name = binding[0], binding[1]
        if kind == "import":
            bound = binding[2]
            target = name if bound is not None else name.split(".", 1)[0]
            bound = bound if bound is not None else target
            info.imports[bound] = target
            bind(bound, ("import", target))
        elif kind == "from":
            module, name, bound = binding[1:]
            if name == "*":
                target = _absolute(module, info) if module.startswith(".") else module
                if target:
                    info.stars.append(target)
                continue
            bound = bound if bound is not None else name
            target = f"{module}{name}" if module.endswith(".") else f"{module}.{name}"
            if target.startswith("."):
                target = _absolute(target, info) or ""
            if target:
                info.imports[bound] = target
            bind(bound, ("import", target))
        elif kind == "class":
            info.classes[name] = list(binding[2])
            bind(name, ("class",))
        elif kind == "def":
            info.functions.add(name)
            bind(name, ("def",))
        elif kind == "self":
            info.self_names.add(name)
            bind(name, ("self",))
        elif kind == "alias":
            info.aliases[name] = binding[2]
            bind(name, ("alias", binding[2]))
        else:
            bind(name)
    info.rebound = {name for name, found in meanings.items() if len(found) > 1}
    for name in info.rebound:
        info.aliases.pop(name, None)
        info.self_names.discard(name)


def _collect(info: ModuleInfo, body: Iterable[ast.stmt]) -> None:
    """`info`'s facts from its top-level `ast` statements."""
    _facts_from(info, _ast_bindings(body))


def _ast_bindings(body: Iterable[ast.stmt]) -> Iterator[tuple]:
    """What each top-level statement binds (the tuples `_facts_from` reads)."""
    for statement in _top_level(body):
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                yield ("import", alias.name, alias.asname or None)
        elif isinstance(statement, ast.ImportFrom):
            module = "." * statement.level + (statement.module or "")
            for alias in statement.names:
                yield ("from", module, alias.name, alias.asname or None)
        elif isinstance(statement, ast.ClassDef):
            yield ("class", statement.name, [t for t in (_dotted(b) for b in statement.bases) if t])
        elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield ("def", statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            simple = len(targets) == 1 and isinstance(targets[0], ast.Name) and statement.value is not None
            if simple and _is_self_module(statement.value):
                yield ("self", targets[0].id)
            elif simple and _dotted(statement.value) is not None:
                yield ("alias", targets[0].id, _dotted(statement.value))
            else:
                for target in targets:
                    for name in _bound_names(target):
                        yield ("bind", name)
        elif isinstance(statement, (ast.AugAssign, ast.For, ast.AsyncFor)):
            for name in _bound_names(statement.target):
                yield ("bind", name)


def _top_level(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    """Top-level statements, and those of top-level `if`/`try` blocks (`try: import x`)."""
    for statement in body:
        if isinstance(statement, ast.If):
            yield from _top_level(statement.body)
            yield from _top_level(statement.orelse)
        elif isinstance(statement, ast.Try):
            yield from _top_level(statement.body)
            for handler in statement.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(statement.orelse)
            yield from _top_level(statement.finalbody)
        else:
            yield statement


def _bound_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in _bound_names(element)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_self_module(node: ast.AST) -> bool:
    """`sys.modules[__name__]`: the module itself."""
    return (isinstance(node, ast.Subscript) and _dotted(node.value) == "sys.modules"
            and isinstance(node.slice, ast.Name) and node.slice.id == "__name__")


def _absolute(relative: str, module: ModuleInfo) -> Optional[str]:
    level = len(relative) - len(relative.lstrip("."))
    rest = relative[level:]
    package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
    if level - 1 > len(package):
        return None
    base = package[: len(package) - (level - 1)]
    parts = [p for p in base if p] + ([rest] if rest else [])
    return ".".join(parts) or None


# -- the same bindings from the libcst tree of a file being linted --------------------------------
# A linted file's own facts come from the tree its lint already parsed (no `ast` parse of it):
# `_tree_bindings` yields what `_ast_bindings` yields, statement for statement
# (tests/test_project_index.py compares them on every fixture file).
_CONSTANT_NAMES = frozenset({"None", "True", "False"})  # names to libcst, constants to `ast`


def _collect_tree(info: ModuleInfo, module) -> None:
    """`info`'s facts from its libcst tree (a linted file's own)."""
    _facts_from(info, _tree_bindings(module))


def _tree_bindings(module) -> Iterator[tuple]:
    """`_ast_bindings` of a libcst module."""
    import libcst as cst

    for statement in _tree_top_level(module.body):
        if isinstance(statement, cst.Import):
            for alias in statement.names:
                full = _tree_dotted(alias.name)
                if full is not None:
                    yield ("import", full, alias.asname.name.value if alias.asname is not None else None)
        elif isinstance(statement, cst.ImportFrom):
            dotted = _tree_dotted(statement.module) if statement.module is not None else ""
            module_text = "." * len(statement.relative) + (dotted or "")
            if isinstance(statement.names, cst.ImportStar):
                yield ("from", module_text, "*", None)
                continue
            for alias in statement.names:
                yield ("from", module_text, alias.name.value,
                       alias.asname.name.value if alias.asname is not None else None)
        elif isinstance(statement, cst.ClassDef):
            yield ("class", statement.name.value,
                   [t for t in (_tree_dotted(b.value) for b in statement.bases if not b.star) if t])
        elif isinstance(statement, cst.FunctionDef):
            yield ("def", statement.name.value)
        elif isinstance(statement, (cst.Assign, cst.AnnAssign)):
            targets = ([t.target for t in statement.targets] if isinstance(statement, cst.Assign)
                       else [statement.target])
            value = statement.value
            simple = len(targets) == 1 and _tree_name(targets[0]) is not None and value is not None
            if simple and _tree_self_module(value):
                yield ("self", _tree_name(targets[0]))
            elif simple and _tree_dotted(value) is not None:
                yield ("alias", _tree_name(targets[0]), _tree_dotted(value))
            else:
                for target in targets:
                    for name in _tree_bound_names(target):
                        yield ("bind", name)
        elif isinstance(statement, (cst.AugAssign, cst.For)):
            for name in _tree_bound_names(statement.target):
                yield ("bind", name)


def _tree_top_level(body) -> Iterable:
    """`_top_level` of a libcst body: its statements (each small statement of a line), and
    those of top-level `if`/`elif`/`else` and `try` blocks."""
    import libcst as cst

    for statement in body:
        if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            yield from statement.body
        elif isinstance(statement, cst.If):
            yield from _tree_top_level(statement.body.body)
            if statement.orelse is not None:
                yield from _tree_top_level([statement.orelse] if isinstance(statement.orelse, cst.If)
                                           else statement.orelse.body.body)
        elif isinstance(statement, cst.Try):
            yield from _tree_top_level(statement.body.body)
            for handler in statement.handlers:
                yield from _tree_top_level(handler.body.body)
            if statement.orelse is not None:
                yield from _tree_top_level(statement.orelse.body.body)
            if statement.finalbody is not None:
                yield from _tree_top_level(statement.finalbody.body.body)
        else:
            yield statement


def _tree_name(node) -> Optional[str]:
    import libcst as cst

    if isinstance(node, cst.Name) and node.value not in _CONSTANT_NAMES:
        return node.value
    return None


def _tree_dotted(node) -> Optional[str]:
    import libcst as cst

    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    name = _tree_name(node)
    if name is None:
        return None
    parts.append(name)
    return ".".join(reversed(parts))


def _tree_bound_names(target) -> list[str]:
    import libcst as cst

    name = _tree_name(target)
    if name is not None:
        return [name]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for element in target.elements for n in _tree_bound_names(element.value)]
    return []


def _tree_self_module(node) -> bool:
    import libcst as cst

    if not (isinstance(node, cst.Subscript) and _tree_dotted(node.value) == "sys.modules"
            and len(node.slice) == 1 and node.slice[0].comma is cst.MaybeSentinel.DEFAULT):
        return False  # `sys.modules[__name__,]` is a tuple index to `ast`
    index = node.slice[0].slice
    return isinstance(index, cst.Index) and index.star is None and _tree_name(index.value) == "__name__"


def _calls_of_tree(ctx) -> dict[str, set]:
    """`ModuleInfo.calls` from a linted file's libcst context: for each top-level function,
    the dotted names of the calls anywhere in its statement (decorators, defaults, nested
    functions included), as `FileView.calls_in` reads them from `ast`."""
    import libcst as cst

    functions = [s for s in _tree_top_level(ctx.module.body) if isinstance(s, cst.FunctionDef)]
    if not functions:
        return {}
    owner = {id(f): f.name.value for f in functions}
    found: dict[str, set] = {}
    for function in functions:
        found.pop(function.name.value, None)
        found[function.name.value] = set()
    # A later `def` of the same name replaces an earlier one's calls, as in the `ast` reading.
    last = {f.name.value: id(f) for f in functions}
    for call in ctx.iter_nodes(cst.Call):
        node = call
        while node is not None and id(node) not in owner:
            node = ctx.parent(node)
        if node is not None and last[owner[id(node)]] == id(node):
            dotted = _tree_dotted(call.func)
            if dotted:
                found[owner[id(node)]].add(dotted)
    return found


# -- big modules, a group of top-level statements at a time --------------------------------------
_KEPT_AST_CHARS = 400_000  # text of the files whose `ast` is kept for their gate (~12 MB of `ast`)
BIG_MODULE_CHARS = 1_000_000   # above this, a module is read (ast) and linted (libcst) in pieces
PIECE_CHARS = 150_000          # a piece holds top-level statements up to about this much text


def top_level_pieces(text: str, piece_chars: int = PIECE_CHARS) -> Optional[list[tuple[int, str]]]:
    """`text` cut between top-level statements into pieces of about `piece_chars`, each
    (its first line, 1-based; its text), or None when it does not tokenize (then the caller
    reads it whole and reports the syntax error as usual). A decorator stays with what it
    decorates, `else`/`elif`/`except`/`finally` with their statement, comments and blank
    lines with the statement after them."""
    import io
    import tokenize

    from devicelint.source import split_lines

    lines = split_lines(text, keepends=True)  # numbered as the tokenizer numbers them
    starts = [1]  # lines where a top-level statement may begin a new piece
    at_line_start = True
    previous_decorator = False
    continuing = {"else", "elif", "except", "finally"}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind = token.type
            if kind in (tokenize.NEWLINE,):
                at_line_start = True
                continue
            if kind in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
                continue
            if at_line_start:
                at_line_start = False
                row, column = token.start
                if column == 0:
                    if not previous_decorator and token.string not in continuing:
                        starts.append(row)
                    previous_decorator = token.string == "@"
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    # A statement's leading comments and blank lines travel with it.
    cuts = []
    for row in sorted(set(starts)):
        floor = cuts[-1] + 1 if cuts else 1
        while row > floor and (not lines[row - 2].strip() or lines[row - 2].lstrip().startswith("#")):
            row -= 1
        cuts.append(row)
    pieces = []
    begin, size = 1, 0
    for start, end in zip(cuts, cuts[1:] + [len(lines) + 1]):
        size += sum(len(line) for line in lines[start - 1:end - 1])
        if size >= piece_chars:
            pieces.append((begin, "".join(lines[begin - 1:end - 1])))
            begin, size = end, 0
    if begin <= len(lines):
        pieces.append((begin, "".join(lines[begin - 1:])))
    return pieces


# -- facts kept in the result cache -----------------------------------------------------------
FACTS_FORMAT = "facts-1"  # bump when _collect learns something new
_FACT_MAPS = ("imports", "aliases")
_FACT_LISTS = ("stars", "self_names", "functions", "rebound")


def facts_key(digest: str, name: str, is_package: bool) -> str:
    """What a module's facts depend on: its content, and its dotted name and whether it is
    a package (relative imports are resolved against them)."""
    text = f"{FACTS_FORMAT}\0{digest}\0{name}\0{int(is_package)}"
    return blake2b(text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()


def facts_to_json(info: ModuleInfo) -> dict:
    facts: dict = {"ok": True}
    for name in _FACT_MAPS:
        facts[name] = dict(getattr(info, name))
    for name in _FACT_LISTS:
        facts[name] = sorted(getattr(info, name)) if name != "stars" else list(info.stars)
    facts["classes"] = {k: list(v) for k, v in info.classes.items()}
    return facts


def facts_from_json(value: object) -> Optional[dict]:
    """`value` if it is a module's facts as `facts_to_json` writes them (or {} for a module
    `ast` cannot read), every field of its type; else None (then the module is parsed)."""
    if value == {}:
        return {}
    if not isinstance(value, dict) or value.get("ok") is not True:
        return None
    strings = lambda items: isinstance(items, list) and all(type(i) is str for i in items)  # noqa: E731
    for name in _FACT_MAPS:
        mapping = value.get(name)
        if not isinstance(mapping, dict) or not all(type(v) is str for v in mapping.values()):
            return None
    if not all(strings(value.get(name)) for name in _FACT_LISTS):
        return None
    classes = value.get("classes")
    if not isinstance(classes, dict) or not all(strings(v) for v in classes.values()):
        return None
    return value


def _apply_facts(info: ModuleInfo, facts: dict) -> None:
    info.imports = dict(facts["imports"])
    info.aliases = dict(facts["aliases"])
    info.stars = list(facts["stars"])
    info.self_names = set(facts["self_names"])
    info.functions = set(facts["functions"])
    info.rebound = set(facts["rebound"])
    info.classes = {k: list(v) for k, v in facts["classes"].items()}


_RELATIVE_IMPORT = re.compile(r"\bfrom[\s\\]*\.")
# What follows `import` or `from` on its logical line (backslash continuations included):
# the words among which any module an import statement names begins.
_IMPORTED = re.compile(r"\b(?:from|import)((?:[ \t]|\\\r?\n)+[\w., \t]*(?:\\\r?\n[\w., \t]*)*)")
_WORD = re.compile(r"\w+")


_MAX_NAMING = 256  # names ProjectIndex.naming follows before it gives up


def _spells(text: str, name: str) -> bool:
    """Whether `text` (as `ProjectIndex._scan_text` gives it) holds `name` as a whole word."""
    return name in text and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


class _Spelling:
    """Which of some files spell each word as `_spells` says. The first words asked are
    searched for in each text, as `_spells` does; past `SEARCHES` words, one pass over the
    texts lists every word each spells (every maximal run of word characters: a name made
    of word characters only is spelled where it is one of those runs, not preceded or
    followed by a word character; any other name is still searched for). Each word's files
    are kept. `ProjectIndex.naming` asks for every file below a directory, word after word,
    for each function whose importers are looked for: the practitioner repositories as one
    project asked hundreds of words (a search of every text per word, per round, per
    function: 4.5 of 56 s under cProfile); timm asks a few, for which the pass over its
    5 MB of text (0.12 s) would cost more than the searches."""

    SEARCHES = 8

    def __init__(self, paths: list[str], text_of: Callable[[str], Optional[str]]) -> None:
        self._paths = paths
        self._text_of = text_of
        self._ids = {path: number for number, path in enumerate(paths)}
        self._postings: Optional[dict[str, list[int]]] = None
        self._searches = 0
        self._sets: dict[str, frozenset[int]] = {}

    def _index(self) -> dict[str, list[int]]:
        postings: dict[str, list[int]] = {}
        for number, path in enumerate(self._paths):
            text = self._text_of(path)
            if text is None:
                continue
            for word in set(_WORD.findall(text)):
                found = postings.get(word)
                if found is None:
                    postings[word] = [number]
                else:
                    found.append(number)
        return postings

    def covers(self, path: str) -> bool:
        return path in self._ids

    def _numbers(self, word: str) -> frozenset[int]:
        found = self._sets.get(word)
        if found is None:
            if self._postings is None and self._searches >= self.SEARCHES:
                self._postings = self._index()
            if self._postings is not None and _WORD.fullmatch(word):
                found = frozenset(self._postings.get(word, ()))
            else:
                self._searches += 1
                found = frozenset(number for number, path in enumerate(self._paths)
                                  if _spells(self._text_of(path) or "", word))
            self._sets[word] = found
        return found

    def spells(self, path: str, word: str) -> bool:
        return self._ids[path] in self._numbers(word)

    def files_spelling(self, words: Iterable[str]) -> list[str]:
        """The files that spell any of `words`, in their order."""
        numbers: set[int] = set()
        for word in words:
            numbers |= self._numbers(word)
        return [self._paths[number] for number in sorted(numbers)]


_PLAIN_FILE, _LINK = 1, 2  # kinds of names in ProjectIndex._listing
_MAX_WALKED_NAMES = 50_000  # names may_reach looks at per run before it rules nothing out


def _passable(name: str, extra: frozenset) -> bool:
    """Whether a module lookup may step through a directory (or end at a file stem) of
    this name: an identifier, or one of `extra` (ProjectIndex.may_reach)."""
    return name.isidentifier() or name in extra


def _entries(folder: str) -> list[str]:
    """The names an absolute import may start with in `folder`: its directories and the
    stems of its .py files (identifiers only)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        stem = name[:-3] if name.endswith(".py") else name
        if stem.isidentifier() and (name.endswith(".py") or os.path.isdir(os.path.join(folder, name))):
            found.append(stem)
    return found


_SHARED_PREFIX = "devicelint-facts-"


def _shared_base() -> Optional[str]:
    """Where the workers' shared facts go: in memory where the system has a tmpfs for it (a
    file written to a disk's temporary directory cost 0.4 ms of CPU and 3 ms of wall time,
    ext4 on this box); else the temporary directory."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _remove_abandoned(base: Optional[str]) -> None:
    """Remove the shared-facts directories of runs that ended without removing theirs (a
    run killed by SIGTERM or SIGKILL runs no cleanup): the pid in each name is no longer a
    live process."""
    import shutil
    import tempfile

    folder = base or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(folder) if n.startswith(_SHARED_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(_SHARED_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True  # someone else's, or unsure: left alone
    return True


def _hash(*parts: str) -> str:
    hasher = blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8", "surrogateescape")
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()


def _dependency_row(key: tuple, value: tuple) -> list:
    """A noted dependency as the result cache keeps it (lists of strings)."""
    kind = key[0]
    if kind == "lookup":
        return ["lookup", key[1], list(key[2]), list(value)]
    if kind == "facts":
        return ["facts", key[1], value[0], value[1]]
    if kind == "model":
        return ["model", key[1], value[0]]
    if kind == "calls":
        return ["calls", key[1], key[2], value[0], value[1]]
    return ["importers", key[1], key[2], value[0], value[1]]


def _read_small(path: str) -> Optional[bytes]:
    try:
        from devicelint.source import read_regular

        return read_regular(path, _MAX_DEPENDENCY_SIZE)
    except Exception:  # noqa: BLE001 - unreadable: no facts from it
        return None


# -- the index of the current run ---------------------------------------------------------------
ENABLED = True  # bench/project_index_cost.py turns it off to measure what the index costs
_current: Optional[ProjectIndex] = None


def use(index: Optional[ProjectIndex]) -> None:
    """Make `index` the one the semantic models of this run consult (None: no index; the
    run is over, and the facts its workers shared are removed)."""
    global _current
    if _current is not None and _current is not index:
        _current.stop_sharing()
    _current = index


def current() -> Optional[ProjectIndex]:
    return _current


def parsed_tree(path: str, source: str):
    """The libcst tree of `source`, the text of the run's file `path`, when this process
    already parsed it for another file's question (`ProjectIndex.model_of`); else None. The
    engine lints that file on the same tree (trees are immutable) instead of parsing it
    again: of the 46 models the practitioner corpus builds in a 2-worker run, 19 are of
    files the same worker lints later."""
    index = _current
    info = index.by_key.get(path) if index is not None else None
    model = index._models.get(info.path) if info is not None else None
    ctx = getattr(model, "ctx", None)
    return ctx.module if ctx is not None and ctx.source == source else None


def keep_tree(path: str, source: str, tree) -> None:
    """After the lint of the run's file `path`: its tree, for later questions about it
    (ProjectIndex.keep_tree)."""
    if _current is not None:
        _current.keep_tree(path, source, tree)


def parsed_ast(path: str, source: str) -> Optional[ast.Module]:
    """The `ast` of `source`, the text of the run's file `path`, when this process's index
    already read it with `ast` for another file's question (given once; None otherwise).
    The file gate (devicelint/gate.py) reads its facts from it instead of parsing again."""
    return _current.take_ast(path, source) if _current is not None else None


def module_ast(index, module, max_chars: int) -> Optional[ast.Module]:
    """The `ast` of another local module's text for a first look at it (dataflow's copying
    look, the gate's units): the one kept for the run's file's gate when there is one (a look
    only: never changed), else parsed; None over `max_chars` or when `ast` cannot read it."""
    text = module.text or ""
    if len(text) > max_chars:
        return None
    own = getattr(module, "key", None)
    tree = index.kept_ast(own, text) if own else None
    if tree is None:
        last = index.last_looked
        if last is not None and last[0] == text:
            return last[1]
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        index.last_looked = (text, tree) if tree is not None else None
    return tree


def view_for(path: str, context_type: type, ctx=None,
             tree: Optional[tuple[str, ast.Module]] = None) -> Optional[FileView]:
    """`ctx`: the asking file's context (its tree gives the file's own facts); `tree`: the
    file's text and its `ast` (the file gate's), the same without libcst."""
    return _current.view(path, context_type, ctx, tree) if _current is not None else None
