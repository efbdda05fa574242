"""Jupyter notebooks: the code cells of an `.ipynb` as one virtual Python file.

The virtual source is every code cell's text, in order, with nothing between cells, so that
imports in cell 1 resolve in cell 7 and one parse serves the whole notebook. IPython-only
lines (`%timeit`, `%%time`, `!pip`, `obj?`, `x = !ls`) become `pass` at the same indentation,
so line numbers and blocks survive. A finding keeps `line`/`column` in the virtual source and
gains `cell` (1-based index among *all* cells, markdown included, as a reader counts them
from the top) and `cell_line` (1-based line within that cell); see docs/integrations.md.

Only the stdlib `json` module is used: nbformat would add dependencies to every install.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Optional, Sequence

from devicelint.source import LINE_BREAK_RE, read_regular, split_lines

NOTEBOOK_SUFFIX = ".ipynb"

# Cell magics whose body is Python: the `%%` line is blanked and the body linted. Any other
# cell magic (`%%bash`, `%%html`, `%%writefile`) makes the whole cell foreign text.
PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun", "debug", "memit", "pypy", "python", "python3"}
# `x = !ls`, `files = %sx ls`: an assignment whose value is a shell line or a magic. The
# target's first character is not whitespace, so the leading `\s*` has one way to match:
# linear time (an overlap there was quadratic: 55 s on a line of 200k spaces and an `x`).
ASSIGN_MAGIC_RE = re.compile(r"\s*[\w.\[\],][\w.\[\], ]*=\s*[!%]")
# `obj?`, `torch.nn.DataParallel??`, `torch.*cuda*?`: IPython help. `?` is not Python.
HELP_RE = re.compile(r"^[\w.*\[\]]+\?{1,2}$")


class NotebookError(ValueError):
    """The file is not a notebook devicelint can read (reported as DL902)."""


@dataclass
class CodeCell:
    """A code cell of a notebook, where it lies in the virtual source."""

    index: int  # 1-based among all cells
    start: int  # first line of the cell in the virtual source (1-based)
    lines: list[str]  # the cell's original lines (with line endings)
    blanked: set[int] = field(default_factory=set)  # 0-based lines replaced by `pass`


@dataclass
class Notebook:
    """A notebook read as one virtual Python source, its code cells one after another."""

    document: dict
    cells: list[CodeCell]
    source: str  # the virtual Python source

    def locate(self, line: int) -> Optional[tuple[int, int]]:
        """(cell index, line within the cell) of a virtual-source line."""
        for cell in self.cells:
            if cell.start <= line < cell.start + max(len(cell.lines), 1):
                return cell.index, line - cell.start + 1
        return None

    def cell_of(self, line: int) -> Optional[CodeCell]:
        for cell in self.cells:
            if cell.start <= line < cell.start + len(cell.lines):
                return cell
        return None


Locate = Callable[[int], Optional[tuple[int, int]]]


def cell_map(notebook: Notebook) -> Locate:
    """`notebook.locate` without the notebook: only where each code cell starts (a model of
    another file of the project keeps it for the run; the document, outputs included, is
    not kept alive by it)."""
    starts = [cell.start for cell in notebook.cells]
    spans = [(cell.start + max(len(cell.lines), 1), cell.index) for cell in notebook.cells]

    def locate(line: int) -> Optional[tuple[int, int]]:
        at = bisect.bisect_right(starts, line) - 1
        if at < 0 or line >= spans[at][0]:
            return None
        return spans[at][1], line - starts[at] + 1

    return locate


class Site(tuple):
    """A place in another file of the project that a finding names (in its message and as a
    related location): `(path, line, column)`, the line in that file's text as linted (a
    notebook's virtual source), with `cell` = (cell, line within the cell) when the file is a
    notebook (FileContext.site)."""

    def __new__(cls, path: str, line: int, column: int, cell: Optional[tuple[int, int]] = None) -> "Site":
        site = super().__new__(cls, (path, line, column))
        site.cell = cell
        return site

    @property
    def path(self) -> str:
        return self[0]

    @property
    def line(self) -> int:
        return self[1]

    @property
    def column(self) -> int:
        return self[2]

    def where(self) -> str:
        """`line 8`, or in a notebook `cell 4:2` (as line_reference writes a line of the
        linted file itself)."""
        return f"line {self[1]}" if self.cell is None else f"cell {self.cell[0]}:{self.cell[1]}"

    def ref(self) -> str:
        """`line 8 of data.py`; in a notebook `cell 4:2 of train.ipynb`."""
        return f"{self.where()} of {self[0]}"

    def short(self) -> str:
        """`data.py:8`; in a notebook `train.ipynb:cell 4:2`, as the reporters write a
        notebook finding's own position."""
        return f"{self[0]}:{self[1]}" if self.cell is None else f"{self[0]}:cell {self.cell[0]}:{self.cell[1]}"


def line_reference(line: int, locate: Optional[Locate] = None) -> str:
    """How a message names a line of the linted text: `line 238`, or, given a notebook's
    cell map (Notebook.locate), `cell 39:23`: the cell and the line within it, in the form
    the reporters give a finding's own position (`train.ipynb:cell 39:23:5:`)."""
    where = locate(line) if locate is not None else None
    return f"line {line}" if where is None else f"cell {where[0]}:{where[1]}"


def lines_reference(lines: Sequence[int], locate: Optional[Locate] = None, word: str = "lines") -> str:
    """`lines 3, 5` (`word` first); in a notebook `cells 2:1, 3:4` (the plain form if a
    line is in no cell)."""
    places = [locate(line) for line in lines] if locate is not None else []
    if not places or None in places:
        return f"{word} " + ", ".join(str(line) for line in lines)
    return "cells " + ", ".join(f"{cell}:{within}" for cell, within in places)


def _cell_text(cell: dict) -> str:
    source = cell.get("source", "")
    if isinstance(source, list):
        if not all(isinstance(part, str) for part in source):
            raise NotebookError("a cell's `source` holds a non-string")
        return "".join(source)
    if not isinstance(source, str):
        raise NotebookError("a cell's `source` is neither a string nor a list of strings")
    return source


def _split(text: str) -> list[str]:
    lines = split_lines(text, keepends=True)  # as the parser numbers the virtual source
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n"
    return lines


def load(data: bytes) -> Notebook:
    """Parse notebook bytes; raises NotebookError with a readable reason."""
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as error:
        raise NotebookError(f"notebook is not UTF-8: {error}") from None
    except json.JSONDecodeError as error:
        raise NotebookError(
            f"notebook is not valid JSON: {error.msg} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise NotebookError("notebook JSON is nested too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a Jupyter notebook: no top-level `cells` list (nbformat 4 is supported)")
    cells = []
    parts: list[str] = []
    line = 1
    for index, raw in enumerate(document["cells"], 1):
        if not isinstance(raw, dict):
            raise NotebookError(f"cell {index} is not a JSON object")
        if raw.get("cell_type") != "code":
            continue
        lines = _split(_cell_text(raw))
        cell = CodeCell(index, line, lines)
        cleaned = blank_magics(lines, cell.blanked)
        cells.append(cell)
        parts.extend(cleaned)
        line += len(lines)
    return Notebook(document, cells, "".join(parts))


def blank_magics(lines: Sequence[str], blanked: set[int]) -> list[str]:
    """`lines` with IPython-only lines replaced by `pass` (same indentation, same count).
    A line is only a candidate when it starts a statement: not inside brackets, a
    multi-line string or after a backslash, where `%` is the modulo operator."""
    out = list(lines)
    if not lines:
        return out
    first = lines[0].strip()
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if first[2:].strip() else ""
        if name not in PYTHON_CELL_MAGICS:
            for number in range(len(lines)):
                out[number] = _pass(lines[number], keep_indent=False)
                blanked.add(number)
            return out
        out[0] = _pass(lines[0], keep_indent=False)
        blanked.add(0)
    scanner = _Scanner()
    continuing_magic = False
    for number, text in enumerate(lines):
        if number in blanked:
            continue
        starts_statement = scanner.at_statement_start()
        if continuing_magic or (starts_statement and _is_magic(text)):
            out[number] = _pass(text, keep_indent=not continuing_magic)
            blanked.add(number)
            continuing_magic = text.rstrip("\r\n").endswith("\\")
            continue
        scanner.feed(text)
    return out


def _is_magic(text: str) -> bool:
    code = text.strip()
    if not code or code.startswith("#"):
        return False
    if code[0] in "%!?":
        return True
    return bool(ASSIGN_MAGIC_RE.match(text) or HELP_RE.match(code))


def _pass(text: str, keep_indent: bool) -> str:
    indent = text[: len(text) - len(text.lstrip(" \t"))] if keep_indent else ""
    ending = text[len(text.rstrip("\r\n")):] or "\n"
    return f"{indent}pass{ending}"


class _Scanner:
    """Just enough of Python's lexer to know whether the next line starts a statement:
    open brackets, open triple-quoted strings, a trailing backslash."""

    def __init__(self) -> None:
        self.depth = 0
        self.string: Optional[str] = None  # the open triple quote, if any
        self.backslash = False

    def at_statement_start(self) -> bool:
        return self.depth == 0 and self.string is None and not self.backslash

    def feed(self, line: str) -> None:
        self.backslash = False
        i, n = 0, len(line)
        while i < n:
            if self.string:
                end = line.find(self.string, i)
                while end > 0 and _escaped(line, end):
                    end = line.find(self.string, end + 1)
                if end < 0:
                    return
                i = end + 3
                self.string = None
                continue
            char = line[i]
            if char == "#":
                return
            if char in "'\"":
                if line.startswith(char * 3, i):
                    self.string = char * 3
                    i += 3
                    continue
                i = self._skip_short_string(line, i, char)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and line[i + 1:].strip() == "":
                self.backslash = True
                return
            i += 1

    @staticmethod
    def _skip_short_string(line: str, i: int, quote: str) -> int:
        i += 1
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] == quote:
                return i + 1
            i += 1
        return i


def _escaped(line: str, position: int) -> bool:
    backslashes = 0
    while position - backslashes - 1 >= 0 and line[position - backslashes - 1] == "\\":
        backslashes += 1
    return backslashes % 2 == 1


# -- positions in the .ipynb file itself ---------------------------------------------------

_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^\s{}\[\],:"]+', re.S)


def raw_lines(text: str) -> dict[tuple[int, int], tuple[int, int]]:
    """Where each source line of each cell is stored in the .ipynb JSON text:
    (cell index, line within cell) -> (1-based file line, 1-based file column of the first
    character after the opening quote). nbformat writes one JSON string per source line, so
    this is the position GitHub and SARIF viewers open. A cell stored as one string maps
    only its first line; lines are counted as the parser counts them (see split_lines). Call only on text that json.loads accepted."""
    tokens = list(_TOKEN_RE.finditer(text))
    newlines = [i for i, char in enumerate(text) if char == "\n"]
    found: dict[tuple[int, int], tuple[int, int]] = {}
    progress: dict[int, tuple[int, bool, bool]] = {}  # cell -> (line, at a line start, after \r)
    position = 0

    def value(path: tuple) -> None:
        nonlocal position
        match = tokens[position]
        token = match.group()
        position += 1
        if token in "{[":
            closing = "}" if token == "{" else "]"
            index = 0
            while tokens[position].group() != closing:
                if token == "{":
                    key = json.loads(tokens[position].group())
                    position += 2  # the key and the colon
                    value(path + (key,))
                else:
                    value(path + (index,))
                    index += 1
                if tokens[position].group() == ",":
                    position += 1
            position += 1
        elif len(path) in (3, 4) and path[0] == "cells" and path[2] == "source":
            offset = match.start()
            line = bisect.bisect_left(newlines, offset) + 1
            column = offset - (newlines[line - 2] + 1 if line > 1 else 0) + 2
            cell = path[1] + 1
            if len(path) == 3:
                found[(cell, 1)] = (line, column)
            elif token.startswith('"'):
                # A list element is usually one line, but nbformat cuts lines with
                # str.splitlines (also at \f, U+2028, ...): count the parser's lines instead.
                number, at_start, after_cr = progress.get(cell, (1, True, False))
                part = json.loads(token)
                continuing = after_cr and part.startswith("\n")  # the \n of a \r\n cut in two
                if part and at_start and not continuing:
                    found.setdefault((cell, number), (line, column))
                if part:
                    breaks = len(LINE_BREAK_RE.findall(part)) - continuing
                    progress[cell] = (number + breaks, part.endswith(("\n", "\r")), part.endswith("\r"))

    value(())
    return found


@lru_cache(maxsize=32)
def _file_positions(path: str) -> tuple[Optional[Notebook], dict]:
    try:
        data = read_regular(path)
        notebook = load(data)
        return notebook, raw_lines(data.decode("utf-8-sig"))
    except (OSError, NotebookError, ValueError, KeyError, IndexError, TypeError):
        return None, {}


def file_position(path: str, cell: int, cell_line: int, column: int) -> Optional[tuple[int, int]]:
    """The (line, column) in the .ipynb text of a position in a cell, for viewers that open
    the raw file (GitHub annotations, SARIF). Columns past a JSON escape are approximate."""
    _, table = _file_positions(path)
    hit = table.get((cell, cell_line))
    if hit is None:
        return None
    return hit[0], hit[1] + column - 1


def virtual_lines(path: str) -> tuple[str, ...]:
    """The notebook's virtual source lines (magics blanked), for source snippets."""
    notebook, _ = _file_positions(path)
    if notebook is None:
        return ()
    lines = []
    for cell in notebook.cells:
        lines.extend(line.rstrip("\r\n") for line in cell.lines)
    return tuple(lines)


# -- writing (devicelint.document.Document.encode, --add-noqa) ------------------------------

def replace_lines(data: bytes, edits: dict[int, str]) -> bytes:
    """The notebook with virtual-source lines replaced (`edits`: 1-based virtual line ->
    new text without line ending); outputs, metadata and key order are kept. Used by
    `--add-noqa`; a fixer can use it for line-level edits too."""
    notebook = load(data)
    touched: dict[int, list[str]] = {}
    for line, text in sorted(edits.items()):
        cell = notebook.cell_of(line)
        if cell is None:
            raise NotebookError(f"line {line} is not in a code cell")
        within = line - cell.start
        if within in cell.blanked:
            raise NotebookError(f"line {line} is an IPython magic line")
        original = cell.lines[within]
        ending = original[len(original.rstrip("\r\n")):]
        cell.lines[within] = text + ending
        touched[cell.index] = cell.lines
    return dump(notebook.document, data, touched)


def dump(document: dict, original: bytes, cells: dict[int, list[str]]) -> bytes:
    for index, lines in cells.items():
        raw = document["cells"][index - 1]
        old = raw.get("source", "")
        text = "".join(lines)
        had_final_newline = _cell_text(raw).endswith(("\n", "\r"))
        if not had_final_newline and text.endswith("\n"):
            text = text[:-1]
        raw["source"] = split_lines(text, keepends=True) if isinstance(old, list) else text
    text = original.decode("utf-8-sig")
    indent = _indent_of(text)
    out = json.dumps(document, indent=indent, ensure_ascii=False)
    if text.endswith("\n"):
        out += "\n"
    return out.encode("utf-8")


def _indent_of(text: str) -> Optional[int]:
    second = text.split("\n", 2)
    if len(second) < 2:
        return None
    line = second[1]
    return len(line) - len(line.lstrip(" ")) or None


def viewer_region(finding) -> tuple[int, int, int, int]:
    """(line, column, end_line, end_column) to give viewers that open the file itself
    (GitHub annotations, SARIF): for a notebook finding, the place in the .ipynb JSON where
    that source line is stored; for anything else, the finding's own region."""
    region = (finding.line, finding.column, finding.end_line, finding.end_column)
    if finding.cell is None or not finding.path.endswith(NOTEBOOK_SUFFIX):
        return region
    start = file_position(finding.path, finding.cell, finding.cell_line, finding.column)
    if start is None:
        return region
    end_cell_line = finding.cell_line + (finding.end_line - finding.line)
    end = file_position(finding.path, finding.cell, end_cell_line, finding.end_column)
    if end is None or end < start:
        end = (start[0], start[1] + 1)
    return start[0], start[1], end[0], end[1]


def related_region(finding, related: dict) -> tuple[int, int]:
    """(line, column) to give viewers that open the file itself for a related location: in
    a notebook, where its cell line is stored in the .ipynb JSON (as viewer_region)."""
    where = (related["line"], related["column"])
    if related.get("cell") is None:
        return where
    path = related.get("path", finding.path)
    if not path.endswith(NOTEBOOK_SUFFIX):
        return where
    return file_position(path, related["cell"], related["cell_line"], related["column"]) or where


def cells_of(notebook: Notebook, new_text: str) -> dict[int, list[str]]:
    """Split a fixed virtual source back into cells. Cell boundaries and magic lines are
    carried over through a line diff; a change that straddles two cells is refused."""
    import difflib

    old = split_lines(notebook.source, keepends=True)
    new = split_lines(new_text, keepends=True)
    moved: dict[int, int] = {}  # old line index -> new line index, for unchanged lines
    boundary: dict[int, int] = {len(old): len(new)}
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                moved[i1 + k] = j1 + k
        boundary.setdefault(i1, j1)
    cells = {}
    for number, cell in enumerate(notebook.cells):
        start = cell.start - 1
        end = start + len(cell.lines)
        if start not in boundary and start not in moved:
            raise ValueError(f"a fix spans the start of cell {cell.index}; left alone")
        if end not in boundary and end not in moved:
            raise ValueError(f"a fix spans the end of cell {cell.index}; left alone")
        new_start = moved.get(start, boundary.get(start))
        new_end = moved.get(end, boundary.get(end))
        lines = new[new_start:new_end]
        for within in cell.blanked:
            if start + within not in moved:
                raise ValueError(f"a fix touches an IPython magic line in cell {cell.index}")
            lines[moved[start + within] - new_start] = cell.lines[within]
        if lines != cell.lines:
            cells[cell.index] = lines
    return cells
