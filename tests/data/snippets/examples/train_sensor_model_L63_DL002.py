"""devicelint reproduction of tests/data/snippets/train_sensor_model.py:63 DL002 (model-not-moved).

Built by `devicelint confirm --snippets` from the statements of the file that produce
the values the flagged line uses (marked below).
Run it with `python` on a machine with a GPU to see the pitfall.

Synthesized (the code's data is not available):
  test_x: tensor (4, 6, 16) on cpu, float32
  test_y: tensor (4,) on cpu, float32
"""

import torch
import torch.nn as nn

WINDOW, CHANNELS, CLASSES = 16, 6, 5
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ActivityNet(nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(WINDOW * CHANNELS, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))

    def forward(self, x):
        return self.body(x)


def main():
    model = ActivityNet()
    test_x = torch.randn(4, 6, 16, device='cpu')  # synthesized: tensor (4, 6, 16) on cpu, float32, for: load_split(args.data_dir, "test")
    test_y = torch.randn(4, device='cpu')  # synthesized: tensor (4,) on cpu, float32, for: load_split(args.data_dir, "test")
    test_windows = [window.to(device) for window in test_x]  # <- devicelint: also flagged
    for window, label in zip(test_windows, test_y):
        pred = model(window.reshape(1, -1)).argmax(1).item()  # <- devicelint: flagged


main()
