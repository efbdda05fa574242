"""What the fuzz tests and bench/fuzz.py share: the checks run on each input, a generator of
torch-flavoured programs, and mutations of real sources.

Every check calls the engine directly (engine.lint_source), so an exception inside a rule
propagates instead of becoming a DL900 "Internal error" finding."""

from __future__ import annotations

import ast
import random
import re
import warnings
from functools import lru_cache
from pathlib import Path

import libcst as cst

from devicelint import safe_parse
from devicelint.engine import enabled_rules, lint_source
from devicelint.source import decode_source
from devicelint.rule import all_rules

ROOT = Path(__file__).resolve().parent.parent


@lru_cache(maxsize=1)
def rules() -> tuple:
    """Every rule that inspects code (`--select ALL` minus the engine's diagnostics)."""
    return tuple(enabled_rules([code for code, rule in all_rules().items() if rule.handlers()]))


@lru_cache(maxsize=1)
def header() -> str:
    """A comment naming every rule's prefilter tokens (so no rule is skipped before parsing)
    and the imports the rules resolve names through."""
    tokens = sorted({token for rule in rules() for token in rule.tokens})
    return ("# " + " ".join(tokens) + "\n"
            "import torch\nimport torch.nn as nn\nfrom torch.utils.data import DataLoader\n")


def findings(source: str, path: str = "fuzz.py") -> list[tuple]:
    """The findings for `source`, as comparable tuples. Raises whatever a rule raises."""
    result = lint_source(path, source, rules())
    return [(f.code, f.line, f.column, f.end_line, f.end_column, f.message,
             None if f.fix is None else (f.fix.line, f.fix.column, f.fix.end_line,
                                         f.fix.end_column, f.fix.content, f.fix.safe))
            for f in result.findings]


def check_source(source: str) -> list[tuple]:
    """No exception, and the same findings twice."""
    first = findings(source)
    assert findings(source) == first, "findings differ between two runs on the same input"
    return first


def check_bytes(data: bytes) -> None:
    """What the runner does with a file's bytes: decode (a ValueError is a DL902), lint."""
    try:
        source = decode_source(data)
    except ValueError:
        return
    check_source(source)


def parses(text: str) -> bool:
    try:
        safe_parse.parse_module(text)  # plain libcst.parse_module can SIGSEGV on deep nesting
    except (cst.ParserSyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return True


def python_parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<fuzz>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        return False
    return True


def check_fix(source: str) -> None:
    """`--fix --unsafe-fixes` on a parsing text gives a parsing text; a second pass is a no-op."""
    from devicelint.fix import fix_text

    if not parses(source):
        return
    everything = lambda fix: True  # noqa: E731 - safe and unsafe fixes alike
    fixed = fix_text("fuzz.py", source, rules(), everything)
    assert parses(fixed.text), f"fixed text does not parse:\n{fixed.text}"
    if python_parses(source):
        assert python_parses(fixed.text), f"fixed text is not valid Python:\n{fixed.text}"
    again = fix_text("fuzz.py", fixed.text, rules(), everything)
    assert again.text == fixed.text, "a second --fix pass changed the text"


# -- torch-flavoured programs ------------------------------------------------------------

SNIPPETS = [
    "x = x.to(device)", "x.to(device)", "x = x.cuda()", "x.cuda()", "y = x.cpu()",
    "x = torch.zeros(2, 3).to(device)", "x = torch.ones(4).cuda()",
    "x = torch.randn(3, 4, device=device)", "y = x.t().view(-1)", "y = x.view(2, -1)",
    "y = x.transpose(0, 1).view(x.size(0), -1)", "y = x.permute(1, 0).contiguous().view(-1)",
    "total += loss.item()", "v = float(loss)", "print(loss.item())", "n = int(x.sum())",
    "model = nn.DataParallel(model)", "model = torch.nn.DataParallel(model, device_ids=[0, 1])",
    "loader = DataLoader(ds, batch_size=32)", "loader = DataLoader(ds, pin_memory=True, num_workers=4)",
    "x = x.to(device, non_blocking=True)", "torch.cuda.empty_cache()", "torch.cuda.synchronize()",
    "t0 = time.time()", "t1 = time.perf_counter()",
    "os.environ['CUDA_VISIBLE_DEVICES'] = '0'", "device = torch.device('cuda')",
    "device = 'cuda' if torch.cuda.is_available() else 'cpu'",
    "scaler = torch.cuda.amp.GradScaler()", "model.to(device)", "model = Net()",
    "w = torch.tensor([1.0, 2.0]) + x.cuda()", "out = model(batch.to(device))",
    "batch = [b.to(device) for b in batch]", "xs = torch.stack([r.cuda() for r in rows])",
    "if x.sum() > 0: pass", "assert torch.isfinite(loss)", "loss.backward()", "pass",
]
BLOCKS = [
    "for batch in loader:", "for i in range(10):", "while step < 10:",
    "with torch.cuda.amp.autocast():", "with torch.no_grad():", "if torch.cuda.is_available():",
    "def train(model, loader, device):", "class Net(nn.Module):", "try:",
]


def torch_program(rng: random.Random, statements: int = 12, depth: int = 0) -> str:
    """A random, syntactically valid program made of the snippets the rules look for."""
    lines: list[str] = []
    for _ in range(rng.randint(1, statements)):
        if depth < 4 and rng.random() < 0.35:
            block = rng.choice(BLOCKS)
            body = torch_program(rng, max(2, statements // 2), depth + 1)
            lines.append(block)
            lines.extend("    " + line for line in body.splitlines())
            if block == "try:":
                lines.append("except Exception:")
                lines.append("    pass")
        else:
            lines.append(rng.choice(SNIPPETS))
    return "\n".join(lines) + "\n"


# -- mutations -----------------------------------------------------------------------------

ODD_TEXT = ["\ufeff", "\u200b", "\u202e", "\u2028", "\u0301", "\U0001f525", "\x0c", "\x0b",
            "\t", "\r", "\\", "é", "ℌ", "ｘ", "\ud800", "'''", '"', "#", "(", ")", "[", "]",
            ":", "\n    ", "lambda: ", "not ", "-", "**", "@", "`", "$", "?", "yield ", "await "]
TOKEN_RE = re.compile(r"\w+|[^\w\s]|\s+")


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [""]


def mutate(text: str, rng: random.Random) -> str:
    """One random mutation: lines or tokens deleted, duplicated or swapped, odd characters,
    BOMs, CRLF, tabs, very long lines, deep nesting, truncation."""
    kind = rng.randrange(14)
    lines = _lines(text)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, lines[i])
    elif kind == 2:
        lines[i], lines[j] = lines[j], lines[i]
    elif kind in (3, 4, 5):
        tokens = TOKEN_RE.findall(text) or [""]
        a, b = rng.randrange(len(tokens)), rng.randrange(len(tokens))
        if kind == 3:
            del tokens[a]
        elif kind == 4:
            tokens.insert(a, tokens[a])
        else:
            tokens[a], tokens[b] = tokens[b], tokens[a]
        return "".join(tokens)
    elif kind == 6:
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(ODD_TEXT) + text[at:]
    elif kind == 7:
        return rng.choice(["\ufeff" + text, text.replace("\n", "\r\n"), text.replace("\n", "\r")])
    elif kind == 8:
        return re.sub(r"(?m)^( {4})+", lambda m: "\t" * (len(m.group()) // 4), text)
    elif kind == 9:
        line = lines[i].rstrip("\r\n")
        tail = " + x" * rng.randint(300, 1500) if "=" in line else "  # " + "x" * 20000
        lines[i] = line + tail + "\n"
    elif kind == 10:
        depth = rng.choice([50, 199, 201, 500, 2000])
        lines.insert(i, "y = " + "(" * depth + "x" + ")" * depth + "\n")
    elif kind == 11:
        depth = rng.choice([20, 99, 101, 300])
        lines.insert(i, "".join(" " * k + "if x:\n" for k in range(depth)) + " " * depth + "pass\n")
    elif kind == 12:
        return text[: rng.randrange(len(text) + 1)]
    else:
        line = lines[i]
        indent = line[: len(line) - len(line.lstrip())]
        lines[i] = indent + rng.choice(["for x in y:\n", "def f(:\n", "else:\n", "x = (\n",
                                        "return\n", "async with a as b:\n", "match x:\n"]) + line
    return "".join(lines)


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """Byte-level damage that a text mutation cannot express."""
    at = rng.randrange(len(data) + 1)
    junk = rng.choice([b"\0", b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\xed\xa0\x80",
                       b"# -*- coding: latin-1 -*-\n", b"# coding: bogus\n", bytes([rng.randrange(256)])])
    return data[:at] + junk + data[at:]


def seed_files(limit_per_corpus: int = 3) -> list[Path]:
    """The fixtures, plus a few real package sources when bench/corpus.py has unpacked them."""
    files = sorted((ROOT / "fixtures").glob("**/*.py"))
    corpora = ROOT / "bench" / ".corpora"
    if corpora.is_dir():
        for corpus in sorted(p for p in corpora.iterdir() if p.is_dir()):
            sources = sorted(p for p in corpus.rglob("*.py") if 2_000 < p.stat().st_size < 40_000)
            step = max(1, len(sources) // limit_per_corpus)
            files.extend(sources[::step][:limit_per_corpus])
    return files
