"""A file as devicelint reads it: a Python file or a Jupyter notebook as one Python text.

`read_document` is the one way a file's bytes become text, for linting, fixing and the
language server alike. A `.py` file is its text in its declared encoding (BOM, PEP 263
cookie, else UTF-8); a notebook is its code cells joined, IPython magics blanked
(devicelint/notebook.py), with a map from text lines back to cells. `encode` turns a new text
back into the file's bytes: the same encoding and BOM, or the same notebook JSON with every
output, metadata field and markdown cell kept.
"""

from __future__ import annotations

import tokenize
from dataclasses import dataclass
from typing import Iterable, Optional

from devicelint import notebook as notebooks
from devicelint.finding import Finding
from devicelint.source import decode_source, read_regular


@dataclass
class Document:
    """A file to lint: the Python text the rules see, and what it takes to write it back."""

    path: str
    text: str  # the Python source the rules see
    original: bytes
    encoding: str = "utf-8"  # of a .py file; "utf-8-sig" keeps its BOM
    notebook: Optional[notebooks.Notebook] = None

    def encode(self, new_text: str) -> bytes:
        """The file's bytes for `new_text`. Raises ValueError (UnicodeEncodeError: a character
        the encoding lacks; a notebook edit that straddles cells or touches a magic line)."""
        if self.notebook is not None:
            cells = notebooks.cells_of(self.notebook, new_text)
            return notebooks.dump(self.notebook.document, self.original, cells)
        return new_text.encode(self.encoding)

    def locate(self, line: int) -> Optional[tuple[int, int]]:
        """(cell, line within the cell) of a line of `text`; None outside a notebook."""
        return self.notebook.locate(line) if self.notebook is not None else None

    def locator(self) -> Optional[notebooks.Locate]:
        """The notebook's cell map, for messages that name lines (engine.lint_source)."""
        return self.notebook.locate if self.notebook is not None else None

    def annotate(self, findings: Iterable[Finding]) -> None:
        """Give notebook findings their cell positions (`cell`, `cell_line`), and so their
        related locations in the notebook itself (those in another file name their `path`)."""
        if self.notebook is None:
            return
        for finding in findings:
            where = self.notebook.locate(finding.line)
            if where is not None:
                finding.cell, finding.cell_line = where
            for related in finding.related:
                where = None if "path" in related else self.notebook.locate(related["line"])
                if where is not None:
                    related["cell"], related["cell_line"] = where


def is_notebook(path: str) -> bool:
    return path.endswith(notebooks.NOTEBOOK_SUFFIX)


def parse_document(path: str, data: bytes) -> Document:
    """The document in `data` (the bytes of the file at `path`). Raises ValueError with a
    message fit for a DL902 finding."""
    if is_notebook(path):
        try:
            notebook = notebooks.load(data)
        except notebooks.NotebookError as error:
            raise ValueError(f"Cannot read notebook: {error}") from None
        return Document(path, notebook.source, data, notebook=notebook)
    try:
        text = decode_source(data)
    except ValueError as error:
        raise ValueError(f"Cannot read file: {error}") from None
    encoding, _ = tokenize.detect_encoding(iter(data.splitlines(keepends=True)).__next__)
    return Document(path, text, data, encoding=encoding)


def read_document(path: str, max_size: Optional[int] = None) -> Document:
    """Read and parse the file at `path`. Raises OSError, SkippedFile or ValueError."""
    return parse_document(path, read_regular(path, max_size))
