"""Change -> diagnostics latency of `devicelint server` on a ~1,000-line training script.

Spawns the server the way an editor does (a subprocess speaking LSP over stdio; the client is
tests/lsp_client.py), opens a generated training script (model classes, a training loop,
helpers; with a few real findings), then sends N edits one at a time (`didChange`, full text,
like a keystroke in the training loop) and times each from the moment the edit is written to
the server's stdin to the moment the `publishDiagnostics` for that version is read back.

Two kinds of change are timed:

* **Single edits** (`--edits`): the client waits `--pause-ms` (300 ms by default, longer than
  the debounce) before each edit, as a person who changes one thing and looks. A server
  that debounces every change (devicelint before the incremental work) adds its debounce
  to each of these; the current one lints a change after a quiet period at once.
* **Typing bursts** (`--bursts`): `--keys` keystrokes `--key-interval-ms` apart (typing a
  number into the training loop, one version per key), timed from the last keystroke to the
  diagnostics of the last version: what the debounce costs while typing.

The server is pinned to two cores (`taskset -c 0,1`) when taskset exists; its CPU time per
single edit and per burst is read from /proc.

    python bench/lsp_latency.py                 # 30 edits and 5 bursts, default debounce
    python bench/lsp_latency.py --edits 50 --debounce-ms 100 --lines 1000 --json
    python bench/lsp_latency.py --write-script /tmp/train.py   # just write the script
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from lsp_client import LspClient  # noqa: E402 - tests/lsp_client.py, shared with tests/test_server.py

HEADER = '''\
"""Train an image/sequence model zoo on synthetic data (generated for bench/lsp_latency.py)."""
import argparse
import math
import os
import random
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


@dataclass
class Config:
    batch_size: int = 64
    epochs: int = 3
    lr: float = 3e-4
    weight_decay: float = 0.01
    hidden: int = 256
    heads: int = 8
    layers: int = 4
    dropout: float = 0.1
    seq_len: int = 128
    num_classes: int = 10
    seed: int = 0
    log_every: int = 50
    checkpoint_dir: str = "checkpoints"


def set_seed(seed):
    random.seed(seed)
    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)


class AverageMeter:
    def __init__(self):
        self.total = 0.0
        self.count = 0

    def update(self, value, n=1):
        self.total += value * n
        self.count += n

    @property
    def average(self):
        return self.total / max(self.count, 1)

'''

MODEL = '''
class ConvBlock{n}(nn.Module):
    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class Attention{n}(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        b, t, c = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        scores = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        weights = self.drop(scores.softmax(dim=-1))
        out = (weights @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(out)


class TransformerBlock{n}(nn.Module):
    def __init__(self, dim, heads, dropout):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention{n}(dim, heads, dropout)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(
            nn.Linear(dim, dim * 4),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(dim * 4, dim),
        )

    def forward(self, x, mask=None):
        x = x + self.attn(self.norm1(x), mask)
        return x + self.mlp(self.norm2(x))


class Classifier{n}(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed = nn.Embedding(1000, cfg.hidden)
        self.position = nn.Parameter(torch.zeros(1, cfg.seq_len, cfg.hidden))
        self.blocks = nn.ModuleList(
            TransformerBlock{n}(cfg.hidden, cfg.heads, cfg.dropout) for _ in range(cfg.layers)
        )
        self.norm = nn.LayerNorm(cfg.hidden)
        self.head = nn.Linear(cfg.hidden, cfg.num_classes)

    def forward(self, tokens):
        x = self.embed(tokens) + self.position[:, : tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(dim=1))

'''

FOOTER = '''
class SyntheticDataset(Dataset):
    def __init__(self, size, seq_len, num_classes):
        self.tokens = torch.randint(0, 1000, (size, seq_len))
        self.labels = torch.randint(0, num_classes, (size,))

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.tokens[index], self.labels[index]


def accuracy(logits, labels):
    return (logits.argmax(dim=-1) == labels).float().mean()


def save_checkpoint(model, optimizer, epoch, directory):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"epoch{epoch}.pt")
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)
    return path


def cosine_schedule(optimizer, warmup, total):
    def factor(step):
        if step < warmup:
            return step / max(warmup, 1)
        progress = (step - warmup) / max(total - warmup, 1)
        return 0.5 * (1 + math.cos(math.pi * progress))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def train_one_epoch(model, loader, optimizer, scheduler, device, cfg, epoch):
    model.train()
    losses = AverageMeter()
    started = time.time()
    for step, (tokens, labels) in enumerate(loader):
        tokens, labels = tokens.to(device), labels.to(device)
        logits = model(tokens)
        loss = F.cross_entropy(logits, labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.update(loss.item(), tokens.shape[0])
        if step % cfg.log_every == 0:
            print(f"epoch {epoch} step {step} loss {losses.average:.4f} {time.time() - started:.1f}s")
    return losses.average


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = AverageMeter()
    for tokens, labels in loader:
        tokens, labels = tokens.to(device), labels.to(device)
        correct.update(accuracy(model(tokens), labels).item(), tokens.shape[0])
    return correct.average


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=Config.epochs)
    parser.add_argument("--batch-size", type=int, default=Config.batch_size)
    args = parser.parse_args()
    cfg = Config(epochs=args.epochs, batch_size=args.batch_size)
    set_seed(cfg.seed)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = Classifier0(cfg)
    if torch.cuda.device_count() > 1:
        model = nn.DataParallel(model)
    model = model.to(device)
    train = DataLoader(SyntheticDataset(4096, cfg.seq_len, cfg.num_classes), batch_size=cfg.batch_size,
                       shuffle=True, num_workers=2)
    valid = DataLoader(SyntheticDataset(512, cfg.seq_len, cfg.num_classes), batch_size=cfg.batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = cosine_schedule(optimizer, 100, cfg.epochs * len(train))
    for epoch in range(cfg.epochs):
        loss = train_one_epoch(model, train, optimizer, scheduler, device, cfg, epoch)
        score = evaluate(model, valid, device)
        print(f"epoch {epoch}: loss {loss:.4f} accuracy {score:.3f}")
        save_checkpoint(model, optimizer, epoch, cfg.checkpoint_dir)


if __name__ == "__main__":
    main()
'''


def training_script(lines: int = 1000) -> str:
    """A realistic training script of about `lines` lines: as many model families as fit."""
    parts = [HEADER]
    n = 0
    while len("".join(parts + [MODEL.format(n=n), FOOTER]).splitlines()) <= lines:
        parts.append(MODEL.format(n=n))
        n += 1
    parts.append(FOOTER)
    return "".join(parts)


CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def _edit(text: str, i: int) -> str:
    """The i-th keystroke-like edit: a changed constant inside the training loop."""
    return text.replace(CLIP, f"torch.nn.utils.clip_grad_norm_(model.parameters(), {1 + i % 7}.{i % 10})")


def _typed(text: str, burst: int, keys: int) -> list[str]:
    """The versions of one typing burst: a new clipping value typed one character at a time
    (`0`, `0.`, `0.1`, ...: each a valid number)."""
    value = f"0.{burst + 1}" + "123456789" * 4
    return [text.replace(CLIP, f"torch.nn.utils.clip_grad_norm_(model.parameters(), {value[:n]})")
            for n in range(1, keys + 1)]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def run(edits: int, debounce_ms: int, lines: int, pin: bool, pause_ms: int = 300,
        bursts: int = 5, keys: int = 8, key_interval_ms: int = 120) -> dict:
    text = training_script(lines)
    command = [sys.executable, "-m", "devicelint", "server", "--debounce-ms", str(debounce_ms)]
    pinned = pin and shutil.which("taskset") is not None
    if pinned:
        command = ["taskset", "-c", "0,1", *command]
    with tempfile.TemporaryDirectory() as workspace:
        client = LspClient(command, workspace, stderr=sys.stderr)
        try:
            client.initialize(Path(workspace).as_uri(), timeout=120)
            uri = (Path(workspace) / "train.py").as_uri()
            sent = client.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": "python", "version": 1, "text": text}})
            received, first = client.diagnostics_timed(uri, 1, timeout=120)
            open_ms = (received - sent) * 1000
            version = 1

            def change(new_text: str) -> float:
                nonlocal version
                version += 1
                return client.notify("textDocument/didChange", {
                    "textDocument": {"uri": uri, "version": version},
                    "contentChanges": [{"text": new_text}]})

            latencies = []
            cpu_before = _cpu_seconds(client.process.pid)
            load_before = _load()
            for i in range(edits):
                time.sleep(pause_ms / 1000)
                sent = change(_edit(text, i + 1))  # edit 0 would give the script back
                received, _ = client.diagnostics_timed(uri, version, timeout=120)
                latencies.append((received - sent) * 1000)
            cpu_per_edit = (_cpu_seconds(client.process.pid) - cpu_before) / max(edits, 1) * 1000
            after_typing = []
            cpu_before = _cpu_seconds(client.process.pid)
            for burst in range(bursts):
                time.sleep(pause_ms / 1000)
                for n, typed in enumerate(_typed(text, burst, keys)):
                    if n:
                        time.sleep(key_interval_ms / 1000)
                    sent = change(typed)
                received, _ = client.diagnostics_timed(uri, version, timeout=120)
                after_typing.append((received - sent) * 1000)
            cpu_per_burst = (_cpu_seconds(client.process.pid) - cpu_before) / max(bursts, 1) * 1000
            exit_code = client.stop()
        finally:
            client.kill()

    def summary(values: list[float]) -> dict:
        if not values:
            return {}
        return {"median": round(statistics.median(values), 1), "p90": round(_percentile(values, 90), 1),
                "min": round(min(values), 1), "max": round(max(values), 1)}

    return {
        "lines": len(text.splitlines()),
        "findings": sorted(d["code"] for d in first),
        "edits": edits,
        "pause_before_each_ms": pause_ms,
        "pinned_to_cores": "0,1" if pinned else None,
        "debounce_ms": debounce_ms,
        "open_to_diagnostics_ms": round(open_ms, 1),
        "change_to_diagnostics_ms": summary(latencies),
        "server_cpu_ms_per_edit": round(cpu_per_edit, 1),
        "bursts": bursts,
        "keys_per_burst": keys,
        "key_interval_ms": key_interval_ms,
        "last_key_to_diagnostics_ms": summary(after_typing),
        "server_cpu_ms_per_burst": round(cpu_per_burst, 1),
        "load_average_1min": f"{load_before} -> {_load()}",
        "server_exit_code": exit_code,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--pause-ms", type=int, default=300, help="Wait before each single edit and burst.")
    parser.add_argument("--bursts", type=int, default=5)
    parser.add_argument("--keys", type=int, default=8, help="Keystrokes per burst.")
    parser.add_argument("--key-interval-ms", type=int, default=120)
    parser.add_argument("--debounce-ms", type=int, default=150)
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--no-pin", action="store_true", help="Do not pin the server with taskset.")
    parser.add_argument("--json", action="store_true", help="Print the result as JSON.")
    parser.add_argument("--write-script", metavar="PATH", help="Write the generated script and exit.")
    args = parser.parse_args()
    if args.write_script:
        Path(args.write_script).write_text(training_script(args.lines), encoding="utf-8")
        return
    result = run(args.edits, args.debounce_ms, args.lines, not args.no_pin, args.pause_ms,
                 args.bursts, args.keys, args.key_interval_ms)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    latency, typing = result["change_to_diagnostics_ms"], result["last_key_to_diagnostics_ms"]
    print(f"{result['lines']} lines, findings {', '.join(result['findings']) or 'none'}; "
          f"pinned to cores {result['pinned_to_cores'] or '(not pinned)'}; server debounce "
          f"{result['debounce_ms']} ms")
    print(f"open -> diagnostics: {result['open_to_diagnostics_ms']:.0f} ms (first lint)")
    print(f"single edit -> diagnostics ({result['edits']} edits, {result['pause_before_each_ms']} ms pause "
          f"before each): median {latency['median']:.0f} ms, p90 {latency['p90']:.0f} ms "
          f"(min {latency['min']:.0f}, max {latency['max']:.0f}); server CPU per edit "
          f"{result['server_cpu_ms_per_edit']:.0f} ms")
    if typing:
        print(f"typing ({result['bursts']} bursts of {result['keys_per_burst']} keys "
              f"{result['key_interval_ms']} ms apart), last key -> diagnostics: median "
              f"{typing['median']:.0f} ms, p90 {typing['p90']:.0f} ms; server CPU per burst "
              f"{result['server_cpu_ms_per_burst']:.0f} ms")
    print(f"machine load average (1 min) {result['load_average_1min']}")


if __name__ == "__main__":
    main()
