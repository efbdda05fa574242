"""DL004's messages: reads in one statement counted, a helper's line named, a name hint said."""
from __future__ import annotations

import textwrap

from devicelint.engine import enabled_rules, lint_source

LOOP = """
import torch

def train(model, loader, opt, device):
    for x, y in loader:
        loss = model(x.to(device)).sum()
        loss.backward()
        opt.step()
        print(loss.item(), loss.detach().cpu())
"""


def findings(source: str):
    return lint_source("t.py", textwrap.dedent(source), enabled_rules(["DL004"])).findings


def test_a_device_known_only_from_a_name_says_so():
    [finding] = findings(LOOP)
    assert "2 host reads (`.item()`, `.cpu()`)" in finding.message
    assert "from its name" in finding.message


def test_a_device_shown_by_a_call_site_needs_no_hint():
    [finding] = findings(LOOP + """
train(torch.nn.Linear(4, 1).cuda(), [], torch.optim.SGD([], 0.1), torch.device("cuda"))
""")
    assert "name" not in finding.message
