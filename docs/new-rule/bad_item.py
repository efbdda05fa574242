import torch

device = torch.device("cuda")
values = torch.ones(4, device=device)
total = values.sum().item()  # expect: DL999
print(total)
