"""devicelint.incremental: the language server's re-parse of only what an edit changed must
give libcst's tree of the whole new text, and so the findings of a full lint.

Random edits (lines changed, inserted, deleted, duplicated; comments and blank lines at
every indentation; brackets and strings left open; characters cut anywhere) are applied in
a chain, so later versions splice into trees that were themselves spliced."""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import libcst as cst
import pytest

from conftest import FIXTURES, ROOT
from devicelint.engine import enabled_rules, lint_source
from devicelint.incremental import IncrementalParser
from devicelint.rule import all_rules

sys.path.insert(0, str(ROOT / "bench"))
from lsp_latency import _edit, training_script  # noqa: E402

RULES = enabled_rules(sorted(all_rules()))
SCRIPT = training_script(1000)


def _random_edit(text: str, rng: random.Random) -> str:
    lines = text.splitlines(True)
    if not lines:
        return text + "x = 1\n"
    k = rng.randrange(len(lines))
    line = lines[k]
    indent = re.match(r"[ \t]*", line).group()
    roll = rng.random()
    if roll < 0.2:
        lines[k] = re.sub(r"\d", str(rng.randrange(10)), line, count=1) if re.search(r"\d", line) \
            else line.replace("x", "y", 1)
    elif roll < 0.35:
        lines.insert(k, indent + "x = torch.zeros(3).cuda()\n")
    elif roll < 0.45:
        del lines[k]
    elif roll < 0.55:
        lines.insert(k, rng.choice(["\n", "# note\n", indent + "# note\n", "    \n", indent + "\n",
                                    "  # odd\n", "\t\n"]))
    elif roll < 0.62:
        lines.insert(k, line)
    elif roll < 0.72:
        lines[k] = line.rstrip("\n") + rng.choice([" (", ")", "  # c", ":", " \\", ' """']) + "\n"
    elif roll < 0.8:
        lines.insert(k, indent + "if x:\n" + indent + "    y = x.item()\n")
    elif roll < 0.86:
        lines.insert(k, "def helper():\n  return 1\n")
    elif roll < 0.9:
        lines[-1] = lines[-1].rstrip("\n")  # no line break at the end
    else:
        position = rng.randrange(len(text))
        return text[:position] + text[position + rng.randrange(1, 30):]
    return "".join(lines)


def _parses(text: str):
    try:
        return cst.parse_module(text)
    except Exception:  # noqa: BLE001 - any failure: the incremental parse must fail too
        return None


def _chain(text: str, edits: int, seed: int, check) -> IncrementalParser:
    """Apply `edits` random edits one after the other (an edit that breaks the syntax is
    kept for one version, as when typing), checking each version with `check`."""
    rng = random.Random(seed)
    parser = IncrementalParser()
    parser.parse(text)
    good = current = text
    for number in range(edits):
        new = _random_edit(current, rng)
        check(parser, new)
        if number % 3 == 0:
            parser.prepare()  # as the server does after a publish; otherwise the next edit does it
        if _parses(new) is not None:
            good = current = new
        else:  # a broken version is edited once more (it may be mended), then dropped
            current = new if current is good else good
    return parser


def _same_tree(parser: IncrementalParser, text: str) -> None:
    full = _parses(text)
    try:
        spliced = parser.parse(text)
    except Exception:  # noqa: BLE001
        spliced = None
    assert (full is None) == (spliced is None), text
    if full is not None:
        assert full.deep_equals(spliced), text
        # libcst's own code, not the text: libcst drops the line break after a comment that
        # ends in a backslash at the end of a file, and the splice must do what it does.
        assert spliced.code == full.code


def test_random_edits_of_a_training_script_give_libcsts_tree():
    parser = _chain(training_script(300), 60, seed=1, check=_same_tree)
    assert parser.reparsed > 20  # most edits that parse were spliced, not parsed whole


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.py"))[::4], ids=lambda p: p.name)
def test_random_edits_of_fixtures_give_the_findings_of_a_full_lint(path):
    def same_findings(parser, text):
        _same_tree(parser, text)
        spliced = lint_source("f.py", text, RULES, parse=parser.parse, starts=parser.statement_starts)
        full = lint_source("f.py", text, RULES)
        assert [vars(f) for f in spliced.findings] == [vars(f) for f in full.findings], text

    _chain(path.read_text(encoding="utf-8"), 10, seed=len(path.name), check=same_findings)


def test_edits_of_the_benchmark_give_the_findings_of_a_full_lint():
    parser = IncrementalParser()
    lint_source("train.py", SCRIPT, RULES, parse=parser.parse)
    parser.prepare()
    for number in range(1, 5):  # edit 0 gives the script back
        text = _edit(SCRIPT, number)
        spliced = lint_source("train.py", text, RULES, parse=parser.parse, starts=parser.statement_starts)
        full = lint_source("train.py", text, RULES)
        assert [vars(f) for f in spliced.findings] == [vars(f) for f in full.findings]
        assert spliced.findings
    assert parser.reparsed == 4 and parser.full == 1
    assert parser.statement_starts(parser.parse(text)) is not None


def test_a_block_indented_unlike_the_module_keeps_its_own_indentation():
    # libcst records a block's indentation only where it differs from the module's default
    # (the first block's): parsed alone, the 2-space function would make 2 spaces the default.
    text = "import torch\n\ndef f():\n    return 1\n\ndef g():\n  x = 1\n  return x\n"
    parser = IncrementalParser()
    parser.parse(text)
    parser.prepare()
    new = text.replace("x = 1", "x = 2")
    spliced = parser.parse(new)
    assert parser.reparsed == 1
    assert spliced.deep_equals(cst.parse_module(new))
    assert spliced.body[2].body.indent == "  "


def test_an_indented_comment_after_a_block_is_parsed_with_the_whole_text():
    # An indented comment after a function belongs to the function's block: the statement
    # after it cannot be re-parsed alone.
    text = "import torch\n\ndef f():\n    return 1\n\nx = 1\n"
    parser = IncrementalParser()
    parser.parse(text)
    parser.prepare()
    new = text.replace("\nx = 1", "    # about f\nx = 1")
    assert parser.parse(new).deep_equals(cst.parse_module(new))
    assert parser.full == 2


TWO_BLOCKS = "import torch\n\ndef f():\n    return 1\n\ndef g():\n  return 2\n  # about g\n\nx = 1\ny = 2\n"


@pytest.mark.parametrize("text, before, after", [
    # The comment, indented as g's 2-space block, belongs to that block.
    (TWO_BLOCKS, "x = 1", "x = 2"),
    # ... also when it is typed at the start of the statement after g,
    (TWO_BLOCKS, "\nx = 1", "\n  # about g\nx = 1"),
    # ... and when g's block becomes as shallow as a comment that stood before the next statement.
    (TWO_BLOCKS.replace("  return 2\n  # about g\n\n", "    return 2\n  # before x\n"),
     "    return 2", "  return 2"),
])
def test_comments_indented_as_the_block_before_belong_to_it(text, before, after):
    parser = IncrementalParser()
    parser.parse(text)
    parser.prepare()
    new = text.replace(before, after, 1)
    assert parser.parse(new).deep_equals(cst.parse_module(new))


def test_an_unclosed_bracket_is_a_syntax_error_and_the_last_good_text_stays_the_base():
    text = "import torch\n\ndef f():\n    return 1\n\nx = 1\ny = 2\n"
    parser = IncrementalParser()
    parser.parse(text)
    with pytest.raises(cst.ParserSyntaxError):
        parser.parse(text.replace("x = 1", "x = (1"))
    parser.prepare()
    fixed = text.replace("x = 1", "x = (1)")
    assert parser.parse(fixed).deep_equals(cst.parse_module(fixed))
    assert parser.reparsed == 1


def test_statement_starts_are_where_code_generation_puts_them():
    parser = IncrementalParser()
    module = parser.parse(SCRIPT)
    assert parser.statement_starts(module) is None  # not described yet
    parser.prepare()
    starts = parser.statement_starts(module)
    line = 1
    for (found, column), statement in zip(starts, (*module.header, *module.body)):
        assert (found, column) == (line, 0)
        line += module.code_for_node(statement).count("\n")


def test_a_failure_of_the_splice_falls_back_to_a_full_parse(monkeypatch):
    import devicelint.incremental as incremental

    def broken(last, text):
        raise IndexError("a bug in the shortcut")

    parser = IncrementalParser()
    parser.parse(SCRIPT)
    monkeypatch.setattr(incremental, "_splice", broken)
    text = _edit(SCRIPT, 1)
    assert parser.parse(text).code == text
    assert (parser.full, parser.reparsed) == (2, 0)
