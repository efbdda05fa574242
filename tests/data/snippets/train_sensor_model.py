"""Train a small activity classifier on windows of sensor readings.

The windows live on the lab's shared drive (`--data-dir`); on any other machine the script
stops at the first `np.load`. `devicelint confirm --snippets` still confirms its three
device pitfalls from the code alone (tests/test_runtime_snippets.py).
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

WINDOW, CHANNELS, CLASSES = 16, 6, 5
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ActivityNet(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(WINDOW * CHANNELS, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))

    def forward(self, x):
        return self.body(x)


def load_split(data_dir, split):
    windows = np.load(os.path.join(data_dir, f"{split}_windows.npy"))
    labels = np.load(os.path.join(data_dir, f"{split}_labels.npy"))
    x = torch.from_numpy(windows).float().reshape(-1, CHANNELS, WINDOW)
    y = torch.from_numpy(labels).long().reshape(-1)
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", default="/mnt/lab-share/sensor-activity/v3")
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    train_x, train_y = load_split(args.data_dir, "train")
    train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=128, shuffle=True)
    model = ActivityNet()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            flat = xb.view(xb.size(0), -1)
            loss = loss_fn(model(flat), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")

    test_x, test_y = load_split(args.data_dir, "test")
    test_windows = [window.to(device) for window in test_x]
    correct = 0
    for window, label in zip(test_windows, test_y):
        pred = model(window.reshape(1, -1)).argmax(1).item()
        correct += int(pred == label.item())
    print(f"test accuracy {correct / len(test_windows):.3f}")
    # one row per time step of every window, for the per-channel report
    steps = test_x.transpose(1, 2).view(-1, CHANNELS)
    print("channel means", steps.mean(0))


if __name__ == "__main__":
    main()
