"""An unmoved model called in a try block, then a CPU tensor added to a device tensor."""
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(8, 2)
x = torch.randn(4, 8, device=device)
try:
    out = model(x)  # probe: unmoved
except RuntimeError as error:
    print("caught:", str(error)[:40])
model.to(device)
out = model(x)  # probe: moved
scale = torch.tensor(2.0)
out = out * scale  # probe: scalar
bias = torch.randn(4, 2)
out = out + bias  # probe: mismatch
print("not reached")
