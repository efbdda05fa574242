"""DL016's probe: the same host data copied again, rebuilt constants, copies back, new data."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
table = torch.randn(64, 64)
tokens = [1]
for step in range(5):
    on_device = table.to(device)  # probe: same
    floor = torch.tensor(float("-inf")).to(device)  # probe: rebuilt
    back = on_device.cpu()  # probe: back
    fresh = torch.randn(8).to(device)  # probe: fresh
    token = int((on_device[step] * 0).sum()) + step  # probe: read
    tokens.append(token)
    again = torch.tensor(tokens[-1:]).to(device) * step  # probe: reupload
    nothing = torch.tensor([], device=device)  # probe: empty
    none_back = on_device[:0].cpu()  # probe: emptyback
once = table.to(device)  # probe: once
