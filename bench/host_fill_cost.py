"""What DL018's pattern costs on a GPU: new data made on the host and copied to the device every
step, against making it on the device (needs CUDA; the figures in DL018's docs came from it on an
H100, torch 2.11.0+cu130, NumPy 2.5.2).

    python3 bench/host_fill_cost.py      # one row per case: microseconds per step, host vs device

Each case runs 1,000 steps then synchronises; best of 5, after 20 warm-up steps."""

import time

import numpy as np
import torch


def timed(fn, steps=1000, repeats=5):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - start) / steps)
    return best * 1e6


def main():
    dev = torch.device("cuda")
    legacy = torch.cuda.FloatTensor
    print(torch.cuda.get_device_name(), torch.__version__, np.__version__)
    for shape in ((64, 100), (256, 512), (64, 3, 64, 64)):
        noise = torch.empty(*shape, device=dev)
        probs = torch.rand(10_000)
        probs_on_device = probs.to(dev)
        draws = shape[0] * shape[1]
        rows = [
            ("Tensor(np.random.normal)", lambda: legacy(np.random.normal(0, 1, shape)),
             "randn(device=)", lambda: torch.randn(*shape, device=dev)),
            ("Tensor(np.ones)", lambda: legacy(np.ones(shape)),
             "ones(device=)", lambda: torch.ones(*shape, device=dev)),
            ("noise.data.copy_(randn)", lambda: noise.data.copy_(torch.randn(*shape)),
             "noise.normal_()", lambda: noise.normal_()),
            ("from_numpy(uniform).cuda()",
             lambda: torch.from_numpy(np.random.uniform(-1, 1, shape)).float().cuda(),
             "rand(device=)*2-1", lambda: torch.rand(*shape, device=dev) * 2 - 1),
            ("multinomial(host p).cuda()",
             lambda: torch.multinomial(probs, draws, replacement=True).cuda(),
             "multinomial(dev p)", lambda: torch.multinomial(probs_on_device, draws, replacement=True)),
        ]
        for host_name, host, device_name, on_device in rows:
            a, b = timed(host), timed(on_device)
            print(f"{str(shape):16} {host_name:26} {a:9.1f} us  {device_name:16} {b:7.1f} us  {a / b:6.1f}x")


if __name__ == "__main__":
    main()
