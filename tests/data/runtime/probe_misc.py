"""Discarded .to, empty_cache per step, an unsynced timestamp, a pageable non_blocking copy."""
import time

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(64, 64)
x.to(device)  # probe: discarded
on_device = x.to(device)
on_device.to(device)  # probe: noop
for step in range(3):
    y = on_device @ on_device
    torch.cuda.empty_cache()  # probe: empty-cache
start = time.perf_counter()
y = on_device @ on_device
elapsed = time.perf_counter() - start  # probe: unsynced
torch.cuda.synchronize()
fenced = time.perf_counter()  # probe: synced
for i in range(4):
    chunk = x[i * 16:(i + 1) * 16].to(device, non_blocking=True)  # probe: pageable
