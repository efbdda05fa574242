"""text -> parse -> rules -> findings. One parse and one traversal per file.

`lint_source` lints one Python text, `lint_document` a file read by devicelint.document (a
notebook's cells too). Reading files, choosing rules and filtering findings by configuration
belong to the pipeline (devicelint/runner.py); `# noqa` comments are applied here, where the
text is, so that DL901 can tell which of them suppressed nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Sequence

import libcst as cst

from devicelint import accepted, collector, safe_parse
from devicelint.context import FileContext
from devicelint.diagnostics import SYNTAX_ERROR, UNUSED_SUPPRESSION, diagnostic, python_syntax_error
from devicelint.document import Document
from devicelint.finding import Finding, Fix
from devicelint.gate import gated
from devicelint.notebook import Locate, blank_magics
from devicelint.project_index import BIG_MODULE_CHARS, keep_tree, parsed_tree, top_level_pieces
from devicelint.rule import Rule, RuleMeta, all_rules, rule_catalog, rule_class, rule_codes
from devicelint.source import split_lines
from devicelint.suppress import is_suppressed, parse_suppressions, skips_file


@dataclass
class FileResult:
    path: str
    findings: list[Finding]
    # Set when suppressions were collected: DL901-style checks can use them.
    suppressions: Optional[dict] = None


def rules_for(source: str, rules: Sequence[type[Rule] | RuleMeta]) -> list[type[Rule]]:
    """Rules whose prefilter tokens occur in the text (a cheap check before parsing), as
    classes: a catalogue entry among `rules` is imported here, when first needed. Each token
    is looked for once (rules share `cuda`, `device`, `.to(`...): a token that does not
    occur costs a search of the whole text."""
    found: dict[str, bool] = {}
    chosen = []
    for rule in rules:
        tokens = rule.tokens
        if tokens:
            for token in tokens:
                hit = found.get(token)
                if hit is None:
                    hit = found[token] = token in source
                if hit:
                    break
            else:
                continue
        chosen.append(rule_class(rule))
    return chosen


def _syntax_error(path: str, error: Exception, source: str) -> Finding:
    if isinstance(error, cst.ParserSyntaxError):
        # CPython's parser says where and what far better than libcst's (which reports an
        # unclosed bracket at the end of the file): prefer it when it fails too.
        precise = python_syntax_error(path, source)
        if precise:
            return precise[0]
        first = str(error).strip().splitlines()[0] if str(error).strip() else "invalid syntax"
        message = f"Cannot parse: {error.message}" if error.message else f"Cannot parse: {first}"
        return diagnostic(SYNTAX_ERROR, path, message, error.raw_line, error.raw_column + 1)
    if isinstance(error, RecursionError):
        return diagnostic(SYNTAX_ERROR, path, "Cannot parse: nesting too deep for the parser")
    return diagnostic(SYNTAX_ERROR, path, f"Cannot parse: {error}")


def lint_source(path: str, source: str, rules: Sequence[type[Rule] | RuleMeta], *,
                honour_noqa: bool = True, disk_path: Optional[str] = None,
                parse: Optional[Callable[[str], cst.Module]] = None,
                starts: Optional[Callable[[cst.Module], Optional[list]]] = None,
                locate: Optional[Locate] = None) -> FileResult:
    """Lint one file's text with the given (enabled) rules: classes, or catalogue entries
    (devicelint.rule.RuleMeta) imported only if the text holds their tokens. `honour_noqa=False`
    leaves `# noqa` comments to the caller (the flake8 plugin: flake8 applies them).
    `disk_path`: where the file is, when `path` (what findings name) is not a path from the
    working directory (a run names files relative to the project root). `parse`: what
    turns the text into libcst's tree, raising as safe_parse.parse_module does (the
    language server's incremental re-parse, devicelint.incremental); `starts`: the (line,
    column) where each of the tree's top-level statements begins, when the caller knows
    (FileContext). Neither is used for a module linted in pieces. `locate`: a notebook's
    cell map (devicelint.notebook.Notebook.locate), by which messages name the lines they
    cite as `cell 4:2` (FileContext.line_ref)."""
    if skips_file(source):
        return FileResult(path, [])
    active = rules_for(source, rules)
    if active and len(source) > BIG_MODULE_CHARS:
        pieces = top_level_pieces(source)
        if pieces is not None and len(pieces) > 1:
            return _lint_in_pieces(path, source, pieces, rules, honour_noqa, disk_path, locate)
    # The cyclic collector is paused for the whole file, the gate's `ast` walk included
    # (devicelint/collector.py): re-enabled between the gate and the parse, its first
    # collection examined the file's whole `ast` tree, alive until the gate returns, only to
    # find nothing (torchvision 0.24.1, `-j 1`: 66 such collections).
    with collector.paused():
        return _gated(path, source, rules, active, honour_noqa, disk_path, parse, starts, locate)


def _gated(path: str, source: str, rules: Sequence[type[Rule] | RuleMeta], active: list[type[Rule]],
           honour_noqa: bool, disk_path: Optional[str], parse=None, starts=None,
           locate: Optional[Locate] = None) -> FileResult:
    # gated() leaves no rule only after `ast` read the file (it keeps every rule of a file
    # `ast` cannot read): then CPython's parser has accepted it already.
    gate_read_it = bool(active)
    if active:
        # The rules that may report anything here, decided with `ast` (devicelint/gate.py).
        active = gated(path, source, active)
    if not active:
        # No rule can match: only check that the file parses, with CPython's (faster) parser.
        errors = [] if gate_read_it or accepted.holds(source) else python_syntax_error(path, source)
        if errors:
            return FileResult(path, errors)
        # Every suppression naming an enabled rule is unused here (DL901).
        table = _suppressions(source, honour_noqa)
        return FileResult(path, _unused(path, source, table, rules), table)
    # One module at a time (each piece of a big one on its own, so that memory follows the
    # piece), with the cyclic collector paused (lint_source).
    return _lint_module(path, source, rules, active, honour_noqa, disk_path, parse, starts, locate)


def _lint_module(path: str, source: str, rules: Sequence[type[Rule] | RuleMeta], active: list[type[Rule]],
                 honour_noqa: bool, disk_path: Optional[str], parse=None, starts=None,
                 locate: Optional[Locate] = None) -> FileResult:
    # A tree the project index parsed already, for another file's question about this one.
    module = parsed_tree(path, source) if parse is None else None
    try:
        if module is None:
            module = (parse or safe_parse.parse_module)(source)  # libcst's, guarded against stack overflow
    except (cst.ParserSyntaxError, RecursionError, ValueError, MemoryError) as error:
        return FileResult(path, [_syntax_error(path, error, source)])
    ctx = FileContext(path, source, module, disk_path, starts(module) if starts else None, locate)
    visitors: dict[str, list] = {}
    leavers: dict[str, list] = {}
    for rule_cls in active:
        rule = rule_cls(ctx)
        for handler in rule_cls.handlers():
            kind, _, node_type = handler.partition("_")
            table = visitors if kind == "visit" else leavers
            table.setdefault(node_type, []).append(getattr(rule, handler))
    try:
        ctx.walk(visitors, leavers)
        found = _findings(ctx, rules, honour_noqa)
    except RecursionError:
        # The walk is iterative, but libcst's code generation and visitors that rules use
        # recurse: a tree deeper than Python's recursion limit cannot be analysed.
        return FileResult(path, [diagnostic(
            SYNTAX_ERROR, path, "Cannot analyse: the code is nested too deeply for devicelint")])
    finally:
        ctx.release()
    if parse is None:  # the tree of the file's whole text, as a model of it would parse
        keep_tree(path, source, module)
    return found


def _lint_in_pieces(path: str, source: str, pieces: list[tuple[int, str]], rules: Sequence[type[Rule] | RuleMeta],
                    honour_noqa: bool, disk_path: Optional[str], locate: Optional[Locate] = None) -> FileResult:
    """A module over BIG_MODULE_CHARS, linted one group of top-level statements at a time
    (devicelint.project_index.top_level_pieces), so that peak memory follows the largest
    piece, not the file: libcst's tree of a 4.7 MB file alone takes well over 1 GB. Each
    piece is preceded by the module's top-level imports and one-line assignments found in
    the other pieces (what a function of the piece may use) and keeps its line numbers.
    What is lost (docs/performance.md): facts from the other pieces
    beyond those lines: their classes and functions (a base class or a helper defined in
    another piece is unknown, as one in a file the project index does not read)."""
    prelude_of = [_module_lines(piece) for _line, piece in pieces]
    findings: list[Finding] = []
    table: dict = {}
    for number, (first_line, piece) in enumerate(pieces):
        own = set(prelude_of[number])
        prelude = list(dict.fromkeys(line for other, lines in enumerate(prelude_of) if other != number
                                     for line in lines if line not in own))
        # The piece keeps its lines (messages name lines: "built on the CPU (line 15)"):
        # the prelude, then one string literal over the lines in between (one token to
        # libcst, where blank lines would each be a node), then the piece.
        gap = first_line - 1 - len(prelude)
        if gap < 0:
            prelude, gap = [], first_line - 1
        padding = '"""' + "\n" * (gap - 1) + '"""\n' if gap > 0 else ""
        result = lint_source(path, "".join(prelude) + padding + piece, rules,
                             honour_noqa=honour_noqa, disk_path=disk_path, locate=locate)
        for finding in result.findings:
            if finding.line >= first_line:
                findings.append(finding)
            elif finding.code == SYNTAX_ERROR:  # "cannot analyse", reported at 1:1
                finding.line = finding.end_line = first_line
                findings.append(finding)
        table.update((line, entries) for line, entries in (result.suppressions or {}).items()
                     if line >= first_line)
    findings.sort(key=Finding.sort_key)
    return FileResult(path, findings, table)


def _module_lines(piece: str) -> list[str]:
    """The one-line top-level imports and assignments of a piece (`import torch`,
    `from x import y`, `device = torch.device("cuda")`), as text (read with `ast`: a line of
    a docstring that looks like an import is not one)."""
    import ast

    try:
        body = ast.parse(piece).body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    lines = split_lines(piece, keepends=True)
    kinds = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)
    return [lines[node.lineno - 1].rstrip("\r\n") + "\n" for node in body
            if isinstance(node, kinds) and node.lineno == node.end_lineno and node.col_offset == 0]


def _suppressions(source: str, honour_noqa: bool) -> dict:
    table = parse_suppressions(source)
    if not honour_noqa:
        table = {line: [s for s in entries if s.kind != "noqa"] for line, entries in table.items()}
    return table


def _unused(path: str, source: str, table: dict, rules: Sequence[type[Rule] | RuleMeta]) -> list[Finding]:
    """DL901: suppression comments naming enabled rules that suppressed nothing, DL codes no
    rule has, entries that are no code, and `# noqa DL005` without its colon (a bare noqa).
    Only codes of enabled rules can be judged unused (a disabled rule never had the chance
    to fire); a bare `# noqa` and other tools' codes are never reported; DL901 on its own
    line is honoured. Each finding carries a fix: the directive rewritten without the codes
    it reports (removed when none is left)."""
    judged = {rule.code for rule in rules} - {UNUSED_SUPPRESSION}
    if not table:
        return []
    known = rule_codes() | judged
    lines = split_lines(source)
    found = []
    for line in sorted(table):
        text = lines[line - 1] if line <= len(lines) else ""
        for suppression in table[line]:
            unused = sorted((suppression.codes or frozenset()) & judged - suppression.used)
            unknown = [c for c in suppression.written if c.startswith("DL") and c not in known]
            problems = _suppression_problems(suppression, unused, unknown)
            if not problems or _keeps_dl901(table[line], suppression):
                continue
            finding = diagnostic(UNUSED_SUPPRESSION, path, "; ".join(problems), line, suppression.column)
            finding.end_column = max(len(text) + 1, suppression.column)
            finding.fix = _suppression_fix(suppression, text, {*unused, *unknown})
            found.append(finding)
    return found


def _keeps_dl901(entries: list, judged) -> bool:
    """DL901 itself is suppressed on the line (`# noqa: DL005, DL901`, a bare `# noqa`),
    except by the very `# noqa DL005` without a colon that it reports."""
    return any((entry.codes is None and not entry.missing_colon and entry is not judged)
               or (entry.codes is not None and UNUSED_SUPPRESSION in entry.codes)
               for entry in entries)


def _suppression_problems(suppression, unused: list[str], unknown: list[str]) -> list[str]:
    kind = "`# noqa`" if suppression.kind == "noqa" else "`# devicelint: ignore[...]`"
    problems = []
    if suppression.missing_colon:
        written = ", ".join(suppression.written)
        problems.append(f"`# noqa {written}` without a colon suppresses every code on this line; "
                        f"write `# noqa: {written}`")
    if unused:
        problems.append(f"Unused {kind} code{'s' if len(unused) > 1 else ''} {', '.join(unused)}: "
                        "nothing is reported here; remove it")
    if unknown:
        problems.append(f"Unknown code{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} in {kind}: "
                        "no such rule")
    for entry in suppression.malformed:
        problems.append(f"`{entry}` in {kind} is not a rule code")
    return problems


def _suppression_fix(suppression, text: str, drop: set[str]) -> Optional[Fix]:
    """The directive without the codes in `drop` (and without malformed entries); the
    whole directive, and the comment if nothing else is in it, when no code is left.
    `# noqa DL005` gets its colon (unsafe: the line then reports other codes again)."""
    start, end = suppression.start, suppression.end
    if start < 1 or end <= start:
        return None
    if suppression.missing_colon:
        content = f"# noqa: {', '.join(suppression.written)}"
        return Fix(suppression.line, start, suppression.line, end, content, safe=False,
                   description="Add the colon that makes `# noqa` name its codes")
    keep = [code for code in suppression.written if code not in drop]
    if keep:
        content = (f"# noqa: {', '.join(keep)}" if suppression.kind == "noqa"
                   else f"# devicelint: ignore[{', '.join(keep)}]")
        return Fix(suppression.line, start, suppression.line, end, content,
                   description="Remove the codes that suppress nothing")
    rest = text[end - 1:]
    if start == suppression.column and rest.strip():
        # `# noqa: DL005 -- reason`: the comment goes on; its `#` stays.
        return Fix(suppression.line, start, suppression.line, end, "#",
                   description="Remove the unused suppression")
    # Remove the directive and the spaces before it: the comment (`x = 1  # noqa: DL005`)
    # or the end of another comment (`# type: ignore  # noqa: DL005`).
    first = len(text[:start - 1].rstrip()) + 1
    return Fix(suppression.line, first, suppression.line, end, "",
               description="Remove the unused suppression")


def _findings(ctx: FileContext, rules: Sequence[type[Rule] | RuleMeta] = (), honour_noqa: bool = True) -> FileResult:
    suppressions = _suppressions(ctx.source, honour_noqa)
    findings = []
    seen = set()
    positions_failed = False
    for report in ctx.reports:
        try:
            if positions_failed:
                raise RecursionError
            line, column, end_line, end_column = ctx.position(report.node)
        except (RecursionError, KeyError):
            # libcst computes positions by recursive code generation: on a tree deeper
            # than the recursion limit it fails (a RecursionError, or a KeyError when the
            # error unwinds through its bookkeeping); found by fuzzing. Report at 1:1, and
            # do not pay for the failing computation again for every finding.
            positions_failed = True
            line = column = end_line = end_column = 1
        rule = report.rule
        key = (rule.code, line, column, report.message)
        if key in seen:
            continue
        seen.add(key)
        if is_suppressed(suppressions, rule.code, (line,)):
            continue
        finding = Finding(
            code=rule.code, name=rule.name, path=ctx.path, line=line, column=column,
            end_line=end_line, end_column=end_column, message=report.message,
            severity=rule.severity,
        )
        if report.fix is not None and not positions_failed:
            finding.fix = _fix(ctx, report)
        if report.related and not positions_failed:
            finding.related = _related(ctx, report.related)
        findings.append(finding)
    findings.extend(_unused(ctx.path, ctx.source, suppressions, rules))
    findings.sort(key=Finding.sort_key)
    return FileResult(ctx.path, findings, suppressions)


def _related(ctx: FileContext, related) -> list[dict]:
    found = []
    for where, message in related:
        if not isinstance(where, cst.CSTNode):  # (path, line, column) in another file of the project
            try:
                path, line, column = where
            except (RecursionError, KeyError):
                continue
            entry = {"line": line, "column": column, "message": message, "path": path}
            cell = getattr(where, "cell", None)  # a notebook's (devicelint.notebook.Site)
            if cell is not None:
                entry["cell"], entry["cell_line"] = cell
            found.append(entry)
            continue
        try:
            line, column, _end_line, _end_column = ctx.position(where)
        except (RecursionError, KeyError):
            continue
        found.append({"line": line, "column": column, "message": message})
    return found


def _fix(ctx: FileContext, report) -> Optional[Fix]:
    try:
        line, column, end_line, end_column = ctx.position(report.fix_node)
        content = ctx.module.code_for_node(report.fix)
    except (RecursionError, KeyError):
        return None
    return Fix(line, column, end_line, end_column, content, report.fix_safe, report.fix_description)


def lint_document(document: Document, display: str, rules: Sequence[type[Rule] | RuleMeta], *,
                  honour_noqa: bool = True) -> FileResult:
    """Lint a document (devicelint.document) under the name `display`. A notebook's findings
    gain their cell positions; a notebook cell that does not parse is reported on its own and
    the other cells are still linted."""
    result = lint_source(display, document.text, rules, honour_noqa=honour_noqa,
                         disk_path=document.path, locate=document.locator())
    if document.notebook is not None:
        if any(f.code == SYNTAX_ERROR for f in result.findings):
            result = _without_broken_cells(document, display, rules, honour_noqa)
        document.annotate(result.findings)
    return result


def _without_broken_cells(document: Document, display: str, rules: Sequence[type[Rule] | RuleMeta],
                          honour_noqa: bool) -> FileResult:
    errors = []
    parts = []
    for cell in document.notebook.cells:
        text = "".join(blank_magics(cell.lines, set()))
        try:
            safe_parse.parse_module(text)  # plain libcst can SIGSEGV on deep nesting
            parts.append(text)
        except (cst.ParserSyntaxError, RecursionError, ValueError, MemoryError) as error:
            finding = _syntax_error(display, error, text)
            finding.line += cell.start - 1
            finding.end_line += cell.start - 1
            errors.append(finding)
            parts.append("".join("\n" for _ in cell.lines))
    result = lint_source(display, "".join(parts), rules, honour_noqa=honour_noqa,
                         locate=document.locator())
    result.findings = sorted(result.findings + errors, key=Finding.sort_key)
    return result


def enabled_rules(codes: Iterable[str]) -> list[type[Rule]]:
    registry = all_rules()
    return [registry[code] for code in codes if registry[code].handlers()]


def enabled_entries(codes: Iterable[str]) -> list[RuleMeta]:
    """What `enabled_rules` returns, as catalogue entries: the linting functions above import
    each rule when a text holds its tokens (a run over a few files imports only those)."""
    catalog = rule_catalog()
    return [catalog[code] for code in codes if catalog[code].has_handlers]
