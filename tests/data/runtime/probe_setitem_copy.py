"""Writing a CUDA tensor into a CPU tensor (`host[i] = value`) copies it to the host and waits
for the GPU (DL004); writing host values, or into a CUDA tensor, reads nothing back."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

batch = torch.randn(8, 4).to(device)
losses = torch.zeros(10)
rows = torch.zeros(10, 4)
on_device = torch.zeros(10, 4, device=device)
for step in range(10):
    losses[step] = (batch * step).mean()  # probe: scalar-to-host
    rows[step] = batch[step % 8]  # probe: row-to-host
    rows[step] = torch.ones(4)  # probe: host-to-host
    on_device[step] = batch[step % 8]  # probe: device-to-device
