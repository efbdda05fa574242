"""The finder's example (issue 14): pitfalls the static pass does not flag, seen at runtime.

Line numbers are asserted by tests/test_runtime_finder.py: keep the `# finds:` markers.
"""
import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
table = torch.randn(64, 16)                    # host rows, built once


def fetch(rows, picks):
    # a helper that copies one row at a time
    return [rows[int(i)].to(device) for i in picks]  # finds: per-row


def mean_of(values):
    return sum(v.item() for v in values) / len(values)  # finds: sync-helper


model = nn.Linear(16, 4).to(device)
head = nn.Linear(4, 2)                          # finds: cpu-origin (never moved)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
history = losses                                # an alias: what it holds is not shown statically
for step in range(8):
    picks = torch.randperm(64)[:16]
    rows = fetch(table, picks)                  # finds: per-row-call
    batch = torch.stack(rows)
    loss = model(batch).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.detach())
    print_every = mean_of(history)              # finds: sync-call
    torch.cuda.empty_cache()                    # finds: empty-cache
    scale = torch.ones(16).to(device, non_blocking=True)  # finds: pageable-nb
    fresh = torch.randn(4, 16).to(device)       # finds: nothing (new data each step)
    if step == 7:
        try:
            head(model(batch))                  # finds: mismatch
        except RuntimeError as error:
            print("caught:", str(error)[:60])

# DataLoader worker processes: their code is not instrumented, and the report says so.
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(table), batch_size=16,
                                     num_workers=2)
for (chunk,) in loader:  # finds: workers
    chunk = chunk.to(device)
