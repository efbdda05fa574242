"""DL005: time the captured module under DataParallel and under DistributedDataParallel.

DataParallel runs in the child itself. DDP runs as one process per GPU (the way torchrun
starts it): the module and the batch it saw travel by pickle (cloudpickle when installed, so a
class defined in the user's script travels by value), each rank trains on its shard of the
same global batch, and rank 0 reports the time.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import socket
import subprocess
import sys
import tempfile
import time

import torch

STEPS, WARMUP = 20, 5
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
            "NVSHMEM_DISABLE_NVLS": "1"}


def _loss(out) -> torch.Tensor:
    from torch.utils._pytree import tree_flatten

    leaves = [x for x in tree_flatten(out)[0]
              if isinstance(x, torch.Tensor) and x.is_floating_point()]
    return sum(x.float().mean() for x in leaves)


def _batch_size(args, kwargs) -> int:
    from torch.utils._pytree import tree_flatten

    for x in tree_flatten((args, kwargs))[0]:
        if isinstance(x, torch.Tensor) and x.dim() > 0:
            return x.shape[0]
    return 1


def _move(tree, device):
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, tree)


def _train(model, args, kwargs, sync) -> float:
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)

    def step():
        loss = _loss(model(*args, **kwargs))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    for _ in range(WARMUP):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(STEPS):
        step()
    sync()
    return time.perf_counter() - start


def compare(module, batch, gpus: int) -> dict:
    args, kwargs = batch
    size = _batch_size(args, kwargs)
    model = copy.deepcopy(module).cuda(0)
    dp = torch.nn.DataParallel(model, device_ids=list(range(gpus)))
    dp_seconds = _train(dp, _move(args, "cuda:0"), _move(kwargs, "cuda:0"),
                        torch.cuda.synchronize)
    del dp, model
    torch.cuda.empty_cache()
    ddp_seconds = _run_ddp(copy.deepcopy(module).cpu(), args, kwargs, gpus)
    return {
        "batch": size, "steps": STEPS,
        "dp_ms_per_step": round(dp_seconds / STEPS * 1000, 3),
        "ddp_ms_per_step": round(ddp_seconds / STEPS * 1000, 3),
        "dp_per_s": round(size * STEPS / dp_seconds, 1),
        "ddp_per_s": round(size * STEPS / ddp_seconds, 1),
    }


def _dumps(obj) -> bytes:
    try:
        import cloudpickle
    except ImportError:
        return pickle.dumps(obj)
    return cloudpickle.dumps(obj)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_ddp(module, args, kwargs, gpus: int) -> float:
    with tempfile.TemporaryDirectory(prefix="devicelint-ddp-") as folder:
        payload = os.path.join(folder, "payload.pkl")
        with open(payload, "wb") as handle:
            handle.write(_dumps((module, args, kwargs)))
        port = str(_free_port())
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        procs = []
        for rank in range(gpus):
            env = dict(os.environ, **SAFE_ENV, RANK=str(rank), LOCAL_RANK=str(rank),
                       WORLD_SIZE=str(gpus), MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "devicelint.runtime.ddp", payload, folder],
                env=env, stderr=subprocess.PIPE, text=True))
        errors = []
        for proc in procs:
            try:
                _, err = proc.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
            if proc.returncode:
                errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}")
        if errors:
            raise RuntimeError(f"DDP worker failed: {errors[0]}")
        with open(os.path.join(folder, "rank0.json"), encoding="utf-8") as handle:
            return json.load(handle)["seconds"]


def worker(payload: str, folder: str) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    with open(payload, "rb") as handle:
        module, args, kwargs = pickle.load(handle)
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    size = _batch_size(args, kwargs)

    def shard(x):
        if isinstance(x, torch.Tensor) and x.dim() > 0 and x.shape[0] == size:
            return torch.chunk(x, world)[rank].cuda(rank)
        return x.cuda(rank) if isinstance(x, torch.Tensor) else x

    from torch.utils._pytree import tree_map

    args, kwargs = tree_map(shard, args), tree_map(shard, kwargs)
    model = DistributedDataParallel(module.cuda(rank), device_ids=[rank])

    def sync():
        torch.cuda.synchronize()
        dist.barrier()

    seconds = _train(model, args, kwargs, sync)
    if rank == 0:
        with open(os.path.join(folder, "rank0.json"), "w", encoding="utf-8") as handle:
            json.dump({"seconds": seconds}, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    worker(sys.argv[1], sys.argv[2])
