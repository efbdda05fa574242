"""A realistic small training script with the core device pitfalls, for `devicelint confirm`:
per-row transfers, an unmoved model in a try block, a view on a transposed tensor, and a
per-step `.item()`."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        # plain attention: its output keeps the (B, H, T, D) layout
        y = (q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5).softmax(-1) @ v
        if T == 1:
            # decode step: passes only because T == 1
            y = y.transpose(1, 2).view(B, T, C)
        else:
            y = y.transpose(1, 2).reshape(B, T, C)
        return self.out(y)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    features = torch.randn(4096, 16, 64)
    labels = torch.randint(0, 10, (4096,))
    inputs = []
    for row in features:
        inputs.append(row.to(device))
    targets = torch.stack([torch.tensor(int(label), device=device) for label in labels])
    model = nn.Sequential(Attention(), nn.Flatten(), nn.Linear(16 * 64, 10))
    probe = nn.Linear(64, 10)
    try:
        first = features[0].to(device)
        probe(first)
    except RuntimeError as error:
        print("probe skipped:", str(error)[:60])
    model = model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    running = 0.0
    for step in range(0, len(inputs), 64):
        batch = torch.stack(inputs[step:step + 64])
        loss = F.cross_entropy(model(batch), targets[step:step + 64])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.item()
    print(f"mean loss {running / (len(inputs) // 64):.3f}")
    with torch.no_grad():
        last = model[0](torch.stack(inputs[:8])[:, -1:])
    print("decode", tuple(last.shape))


if __name__ == "__main__":
    main()
