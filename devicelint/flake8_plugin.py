"""devicelint as a flake8 plugin (entry point `flake8.extension`, code prefix `DL`).

The plugin runs the same engine and the same rule classes as `devicelint` (nothing is
re-implemented here). Division of labour with flake8:

* `# noqa` belongs to flake8: the engine is called with `honour_noqa=False`, so every
  finding reaches flake8, which then applies `# noqa`, `# noqa: DL005`, `--disable-noqa`
  and its own select/ignore/per-file-ignores exactly as for any other plugin.
  devicelint's own `# devicelint: ignore[...]` and `# devicelint: skip-file` still work.
* Syntax errors are flake8's E999 (flake8 does not run tree plugins on such files).
* Rules that are off by default in devicelint go to flake8's default ignore list; enable
  them with `--extend-select DL0xx`.
* Each file is linted as `devicelint check FILE` lints it: with a project index over the
  file (what the file's own calls hand its functions, and the local modules it imports,
  read with `ast` under the working directory when a rule asks; nothing is imported).
* flake8 wants 0-based columns from plugins (it adds 1 when printing); devicelint's are
  1-based, so each column is shifted by one here. Columns count characters (code points).
"""

from __future__ import annotations

import os
from typing import Iterator

from devicelint import __version__


def _rules():
    from devicelint.rule import all_rules

    return [rule for rule in all_rules().values() if rule.handlers()]


def _one_file_index(filename: str, source: str):
    """The project index `devicelint check FILE` would build for this file: the file itself
    (rules learn from it what its own calls hand its functions), and the local modules it
    imports, found under flake8's working directory (the project root it runs from), or
    the file's folder when the file lies outside it."""
    from devicelint import project_index

    if not project_index.ENABLED:
        return None
    real = os.path.realpath(filename)
    root = os.path.realpath(os.getcwd())
    if not real.startswith(root + os.sep):
        root = os.path.dirname(real)
    return project_index.ProjectIndex.build(root, [(real, filename, source.encode("utf-8"))],
                                            recording=False, reals=[real])


class DeviceLintChecker:
    name = "devicelint"
    version = __version__

    def __init__(self, tree, filename: str, lines: list[str]) -> None:
        # `tree` is unused (devicelint parses with libcst), but asking for it is what makes
        # flake8 treat this as a whole-file ("tree") plugin.
        self.filename = filename
        self.lines = lines

    @classmethod
    def add_options(cls, option_manager) -> None:
        off = [rule.code for rule in _rules() if not rule.default_enabled]
        if off:
            option_manager.extend_default_ignore(off)

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        from devicelint.diagnostics import SYNTAX_ERROR
        from devicelint.engine import lint_source

        from devicelint import project_index

        source = "".join(self.lines)
        index = _one_file_index(self.filename, source)
        project_index.use(index)
        try:
            result = lint_source(self.filename, source, _rules(), honour_noqa=False)
        finally:
            project_index.use(None)
        for finding in result.findings:
            if finding.code == SYNTAX_ERROR:
                continue  # flake8 reports E999 itself
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)
