from __future__ import annotations

import libcst as cst

from devicelint.rule import Rule
from devicelint.runtime_spec import LineRecord, ProbeRun, RuntimeSpec, Watch

DATA_PARALLEL = {
    "torch.nn.DataParallel",
    "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel",
}
FUNCTIONAL = {
    "torch.nn.parallel.data_parallel",
    "torch.nn.parallel.data_parallel.data_parallel",
}


class DataParallel(Rule):
    """## What it does
    Flags every construction of `torch.nn.DataParallel` and calls of the functional
    `torch.nn.parallel.data_parallel`, however the file spells them: any import alias or
    attribute path, an import inside a function, and plain aliases it binds
    (`DP = nn.DataParallel`, `parallel = torch.nn.parallel`). The callee is resolved by the
    semantic model (`sem.resolved_qualname`): a name rebound to something else (a local
    class, a parameter, an import from another library) is not DataParallel, and a name
    whose bindings disagree (a `try:` import with another library as the fallback) is left
    alone.

    ## Why is this bad?
    DataParallel runs one Python process for all GPUs: every step it replicates the model
    to each GPU, scatters the batch from GPU 0, runs the replicas in threads that contend
    for the GIL, and gathers the outputs back on GPU 0, which becomes the bottleneck.
    `DistributedDataParallel` runs one process per GPU, keeps a model copy on each, and
    overlaps the gradient all-reduce with the backward pass. PyTorch's own documentation
    recommends DDP even on a single machine. Measured on 2x H200 (torch 2.11): DataParallel
    trained a small CNN 2.9x slower than DDP, and ResNet-18/50 1.41x/1.46x slower.
    Run `devicelint confirm` on a machine with 2+ GPUs to measure your own model.

    ## Example
    ```python
    model = nn.DataParallel(Net()).cuda()
    for x, y in loader:
        loss = loss_fn(model(x.cuda()), y.cuda())
    ```

    ## Use instead
    ```python
    # launched with: torchrun --nproc_per_node=NUM_GPUS train.py
    dist.init_process_group("nccl")
    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    model = DistributedDataParallel(Net().cuda(local_rank), device_ids=[local_rank])
    loader = DataLoader(dataset, sampler=DistributedSampler(dataset), batch_size=64)
    ```
    There is no automatic fix: the switch needs a launcher and a sampler.
    """

    code = "DL005"
    name = "data-parallel"
    summary = "`nn.DataParallel` is slower than `DistributedDataParallel`"
    message = "`nn.DataParallel` is slower than `DistributedDataParallel`"
    hint = "use `DistributedDataParallel`: one process per GPU, launched by `torchrun`"
    tokens = ("DataParallel", "data_parallel")

    @staticmethod
    def gate(facts) -> bool:
        """The callee resolves to `DataParallel` or `data_parallel`: the name is in the code,
        or in what one of its module-level aliases stands for (devicelint/gate.py)."""
        return facts.mentions("DataParallel", "data_parallel")

    def visit_Call(self, node: cst.Call) -> None:
        name = self.ctx.semantic.resolved_qualname(node.func)
        if name in DATA_PARALLEL:
            self.report(node)
        elif name in FUNCTIONAL:
            self.report(
                node,
                "`data_parallel()` is functional DataParallel, slower than "
                "`DistributedDataParallel`",
            )

    # -- devicelint confirm ------------------------------------------------------------
    @staticmethod
    def probe(run: ProbeRun, rec: LineRecord) -> dict:
        if run.device != "cuda":
            return run.base("inconclusive", "DataParallel vs DDP needs 2 real GPUs; the "
                            "simulated device cannot time it", needs="2 GPUs")
        gpus = run.gpu_count()
        if gpus < 2:
            return run.base("inconclusive", f"DataParallel vs DDP needs 2 GPUs; {gpus} visible",
                            needs="2 GPUs", gpus=gpus)
        batches = run.data_parallel_batches()
        if not batches:
            return run.base("inconclusive", "DataParallel was built here but never called, so "
                            "no batch was captured to time", gpus=gpus)
        module, batch = batches[0]
        try:
            result = run.compare_data_parallel(module, batch, gpus)
        except Exception as error:  # noqa: BLE001 - a failed benchmark is a result
            return run.base("inconclusive", f"could not time DP vs DDP: {error}", gpus=gpus)
        ratio = result["ddp_per_s"] / result["dp_per_s"]
        status = "confirmed" if ratio > 1.05 else "refuted"
        return run.base(status, f"DataParallel {result['dp_per_s']:,.0f} samples/s vs DDP "
                        f"{result['ddp_per_s']:,.0f} samples/s on {gpus} GPUs ({ratio:.2f}x)",
                        gpus=gpus, speedup=round(ratio, 4), **result)

    runtime = RuntimeSpec(probe=probe, watch=(Watch.DATA_PARALLEL,),
                          sim_cannot_judge="needs 2 real GPUs")
