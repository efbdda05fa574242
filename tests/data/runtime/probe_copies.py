"""Copies and syncs: per-row copies, one batch copy, a dtype move, per-step .item()."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
x = torch.randn(512, 128)
rows = [row.to(device) for row in x]  # probe: rows
batch = x.to(device)  # probe: once
half = batch.to(torch.float16)  # probe: dtype
total = 0.0
for step in range(20):
    loss = (batch * step).sum()
    total += loss.item()  # probe: item
print(float(total) > -1)  # probe: read-once
if total is None:
    never = x.to(device)  # probe: never
