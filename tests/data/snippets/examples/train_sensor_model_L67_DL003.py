"""devicelint reproduction of tests/data/snippets/train_sensor_model.py:67 DL003 (view-on-noncontiguous).

Built by `devicelint confirm --snippets` from the statements of the file that produce
the values the flagged line uses (marked below).
Run it with `python` on a machine with a GPU to see the pitfall.

Synthesized (the code's data is not available):
  test_x: tensor (4, 6, 16) on cpu, float32
  test_y: tensor (4,) on cpu, float32
"""

import torch

WINDOW, CHANNELS, CLASSES = 16, 6, 5
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    test_x = torch.randn(4, 6, 16, device='cpu')  # synthesized: tensor (4, 6, 16) on cpu, float32, for: load_split(args.data_dir, "test")
    test_y = torch.randn(4, device='cpu')  # synthesized: tensor (4,) on cpu, float32, for: load_split(args.data_dir, "test")
    # one row per time step of every window, for the per-channel report
    steps = test_x.transpose(1, 2).view(-1, CHANNELS)  # <- devicelint: flagged


main()
