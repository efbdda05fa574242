"""sem.resolved_qualname: what a callee stands for through imports and the aliases a file binds."""

from __future__ import annotations

import textwrap

import libcst as cst

from devicelint import safe_parse
from devicelint.context import FileContext


def callees(source: str) -> dict[str, object]:
    source = textwrap.dedent(source)
    ctx = FileContext("t.py", source, safe_parse.parse_module(source))
    ctx.walk({}, {})
    return {ctx.code(call): ctx.semantic.resolved_qualname(call.func)
            for call in ctx.iter_nodes(cst.Call)}


def test_aliases_bound_by_assignment_and_local_imports():
    found = callees("""
    import torch
    import torch.nn as nn
    from torch.cuda import amp
    DP = nn.DataParallel
    cuda_amp = amp
    def f(m):
        from torch.nn.parallel import DistributedDataParallel as DDP
        chosen = DDP
        nn2 = torch.nn
        return DP(m), cuda_amp.autocast(), chosen(m), nn2.Linear(2, 2)
    """)
    assert found["DP(m)"] == "torch.nn.DataParallel"
    assert found["cuda_amp.autocast()"] == "torch.cuda.amp.autocast"
    assert found["chosen(m)"] == "torch.nn.parallel.DistributedDataParallel"
    assert found["nn2.Linear(2, 2)"] == "torch.nn.Linear"


def test_disagreeing_or_shadowed_bindings_stand_for_nothing():
    found = callees("""
    import torch.nn as nn
    from torch.nn import DataParallel
    try:
        from torch.amp import autocast
    except ImportError:
        from torch.cuda.amp import autocast
    class Mine:
        pass
    DataParallel = Mine
    def g(nn):
        return nn.DataParallel(1)
    autocast("cuda")
    DataParallel(2)
    """)
    assert found['autocast("cuda")'] is None
    assert found["nn.DataParallel(1)"] is None
    assert found["DataParallel(2)"] is None


def test_the_api_table_says_which_cuda_calls_initialise_the_driver():
    from devicelint.semantic.api import torch_api

    initialising = torch_api().cuda_initialising
    assert {"torch.cuda.is_available", "torch.cuda.init", "torch.cuda.set_device"} <= initialising
    assert not {"torch.cuda.device_count", "torch.cuda.manual_seed"} & initialising
