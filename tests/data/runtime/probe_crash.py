"""User code that crashes after one flagged line ran."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
values = torch.ones(4, device=device)
first = values.sum().item()  # probe: before
raise ValueError("the user's bug")
after = values.sum().item()  # probe: after
