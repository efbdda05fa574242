"""Views on transposed tensors: one that fails, one that hides at T == 1, one that is fine."""
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
B, T, H, D = 2, 1, 4, 8
x = torch.randn(B, T, H, D, device=device)
y = x.transpose(1, 2).view(B, H, T * D)  # probe: latent
z = x.transpose(1, 2).view(B, H, T, D // 2, 2)  # probe: split
w = torch.randn(B, 3, H, D, device=device).transpose(1, 2)
try:
    w.view(B, H, 3 * D)  # probe: fails
except RuntimeError:
    pass
