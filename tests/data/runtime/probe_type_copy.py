"""`.type()` to a CPU tensor type copies a CUDA tensor to the host (DL004); `.type()` to a
dtype, or asking for the type's name, does not."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

batch = torch.randn(8, 4).to(device)
total = 0.0
for step in range(10):
    host = (batch * step).type(torch.FloatTensor)  # probe: to-cpu-type
    same = (batch * step).type(torch.float64)  # probe: to-dtype
    name = batch.type()  # probe: name
    up = host.type(torch.cuda.FloatTensor if torch.cuda.is_available() else torch.FloatTensor)  # probe: to-cuda-type
    fill = torch.zeros(8, 4).fill_(step).type_as(batch)  # probe: type-as
    fill_then_move = torch.zeros(8, 4).type_as(batch).to(device)  # probe: type-as-then-to
    host_like = torch.zeros(8, 4).type_as(host)  # probe: type-as-host
