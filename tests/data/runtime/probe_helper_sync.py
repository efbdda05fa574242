"""A sync inside a helper of the same file, reported (DL004) at the helper's call."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def read(t):
    return t.sum().item()


batch = torch.randn(8, 4).to(device)
total = 0.0
for step in range(10):
    total += read(batch * step)  # probe: call
