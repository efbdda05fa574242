"""devicelint reproduction of tests/data/snippets/train_sensor_model.py:60 DL001 (transfer-in-loop).

Built by `devicelint confirm --snippets` from the statements of the file that produce
the values the flagged line uses (marked below).
Run it with `python` on a machine with a GPU to see the pitfall.

Synthesized (the code's data is not available):
  test_x: tensor (4, 6, 16) on cpu, float32
  test_y: tensor (4,) on cpu, float32
"""

import torch
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def main():
    test_x = torch.randn(4, 6, 16, device='cpu')  # synthesized: tensor (4, 6, 16) on cpu, float32, for: load_split(args.data_dir, "test")
    test_y = torch.randn(4, device='cpu')  # synthesized: tensor (4,) on cpu, float32, for: load_split(args.data_dir, "test")
    test_windows = [window.to(device) for window in test_x]  # <- devicelint: flagged


main()
