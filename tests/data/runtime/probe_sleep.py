"""Runs past any short time limit."""
import time

import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
values = torch.ones(4, device=device)
while True:
    total = values.sum().item()  # probe: loop
    time.sleep(0.01)
