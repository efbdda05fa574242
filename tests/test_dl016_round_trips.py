"""DL016 cases a runnable fixture cannot confirm: the value `t.fill_(v)` writes travels as a
kernel argument, not as a copy the runtime watches, so this round trip is tested here."""

from __future__ import annotations

import textwrap

from devicelint.engine import enabled_rules, lint_source


def _dl016_lines(source: str) -> list[int]:
    source = textwrap.dedent(source)
    result = lint_source("t.py", source, enabled_rules(["DL016"]))
    return sorted(f.line for f in result.findings if f.code == "DL016")


def test_a_value_read_back_and_filled_into_a_named_device_tensor_is_a_round_trip():
    source = """
    import torch
    device = torch.device("cuda")
    def fill_back(model, steps):
        ys = torch.zeros(1, dtype=torch.long, device=device)
        for _ in range(steps):
            _, best = torch.max(model(ys)[-1], dim=0)
            best = best.item()
            step = torch.ones(1, dtype=torch.long, device=device)
            step.fill_(best)
            ys = torch.cat([ys, step])
        return ys
    """
    assert _dl016_lines(source) == [10]
    # filled with a constant: no data read back
    assert _dl016_lines(source.replace("step.fill_(best)", "step.fill_(1)")) == []
